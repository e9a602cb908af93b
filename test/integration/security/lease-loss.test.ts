// Losing the leader Lease must not take admission down (docs/adr/0010-lease-loss-keeps-serving.md). With
// failurePolicy Fail, an operator process that exits on lease loss (controller-runtime's default) refuses
// every Operation in the cluster until it is back. Here another holder steals the Lease (written as an
// admin, as a replica that believed it had expired would): the operator stops leading, its process stays
// up, the webhook keeps judging requests and /readyz stays 200, and once the thief stops renewing the
// operator leads again and its controllers reconcile.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { startWorld, type World } from './harness.ts';

interface Lease {
  metadata: { resourceVersion: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const microTime = (d: Date) => d.toISOString().replace(/Z$/, '000Z');

const runCommand = {
  type: 'RunCommand',
  engine: 'job',
  targetRef: { name: 'shop' },
  parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
};

describe('losing the Lease keeps the webhook serving', () => {
  let w: World;
  let leasePath: string;
  beforeAll(async () => {
    w = await startWorld();
    leasePath = `/apis/coordination.k8s.io/v1/namespaces/${w.operatorNamespace}/leases/vworkspace-operator`;
    await w.instance(w.namespaces[0], 'shop', { runcommand: 'job' });
    await w.grant('eve', w.namespaces[0], [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
    ]);
    await w.operator.waitLeader(60_000);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('stops leading, keeps admission and readiness, stays alive, and leads again', async () => {
    const [a] = w.namespaces;
    const before = await w.admin.request<Lease>({ method: 'GET', path: leasePath });
    const identity = before.spec.holderIdentity ?? '';
    expect(identity).not.toBe('');

    // Another holder takes the Lease for 5 s and never renews it.
    const now = microTime(new Date());
    await w.admin.request({
      method: 'PUT',
      path: leasePath,
      body: {
        ...before,
        spec: {
          ...before.spec,
          holderIdentity: 'thief',
          leaseDurationSeconds: 5,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: (before.spec.leaseTransitions ?? 0) + 1,
        },
      },
    });
    await w.waitFor('the operator to notice the lost Lease', async () =>
      readFileSync(w.operator.logPath, 'utf8').includes('leader lease lost') ? true : undefined,
    );

    // The webhook still judges: eve lacks the runcommand verb, and it is the webhook that says so.
    const d = await w.denial(w.operation(w.as('eve'), a, 'while-not-leading', runCommand));
    expect(d.code).toBe(403);
    expect(d.message).toContain('may not runcommand');
    const ready = await fetch(`http://127.0.0.1:${w.operator.probePort}/readyz`);
    expect(ready.status).toBe(200);

    const back = await w.waitFor(
      'the operator to take the Lease back',
      async () => {
        const l = await w.admin.request<Lease>({ method: 'GET', path: leasePath });
        return l.spec.holderIdentity === identity ? l : undefined;
      },
      60_000,
    );
    expect(back.spec.leaseTransitions).toBeGreaterThan(before.spec.leaseTransitions ?? 0);
    expect(w.operator.child.exitCode).toBeNull();
    expect(w.operator.child.signalCode).toBeNull();
    await w.operator.waitLeader(30_000);

    // The controllers run again: a new Operation gets a status from the reconciler.
    await w.operation(w.admin, a, 'after-relead', runCommand);
    const op = await w.waitFor('after-relead to be reconciled', async () => {
      const o: Operation = await w.getOperation(a, 'after-relead');
      return (o.status?.conditions?.length ?? 0) > 0 ? o : undefined;
    });
    expect(op.status?.conditions?.length).toBeGreaterThan(0);
    expect(w.operator.crashed).toBe(false);
  });
});
