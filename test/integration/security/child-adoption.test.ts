// Item 7 of the threat model: child names are a function of the Operation's uid, which anyone who may
// read the Operation knows. A tenant who pre-creates a Job under that name (while the Operation waits for
// approval) must not fake its outcome: the operator adopts only a child whose controller owner reference
// is the Operation, and otherwise ends it Failed/ChildConflict with an Event. Outside the namespace
// (velero.io objects), where owner references cannot point, only the operation-uid label counts: the
// operation and operation-namespace labels anyone could copy do not.

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_OPERATION, LABEL_OPERATION_NAMESPACE } from '../../../operator/src/api/annotations.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { childName, NAME_LIMITS } from '../../../operator/src/engines/names.ts';
import { startWorld, type World } from './harness.ts';
import { jobsIn, settled } from './support.ts';

const OPS = '/apis/ops.vworkspace.io/v1alpha1';

describe('a pre-created child is never adopted', () => {
  let w: World;

  /** Creates Operation `name` waiting for approval, and returns it with its uid. */
  async function waitingOperation(
    ns: string,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<Operation> {
    await w.operation(w.as('alice'), ns, name, {
      ...spec,
      policy: { requiresApproval: true, requireReady: false },
    });
    return w.waitFor(`${name} to wait for approval`, async () => {
      const o = await w.getOperation(ns, name);
      return o.status?.conditions?.some((c) => c.reason === 'AwaitingApproval') ? o : undefined;
    });
  }

  async function approve(ns: string, name: string) {
    await w.as('alice').request({
      method: 'PATCH',
      path: `${OPS}/namespaces/${ns}/operations/${name}`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { 'ops.vworkspace.io/approve': 'true' } } },
    });
  }

  async function eventReasons(ns: string, name: string): Promise<string[]> {
    const list = await w.admin.request<{ items?: { reason?: string; regarding?: { name?: string } }[] }>({
      method: 'GET',
      path: `/apis/events.k8s.io/v1/namespaces/${ns}/events`,
    });
    return (list.items ?? []).filter((e) => e.regarding?.name === name).map((e) => e.reason ?? '');
  }

  beforeAll(async () => {
    w = await startWorld();
    const [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job', backup: 'velero' });
    await w.grantProfile('runCommand.job', a);
    await w.grantProfile('backup.velero', a);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get', 'patch'] },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['runcommand', 'backup', 'approve'],
      },
    ]);
    // mallory may read Operations and create Jobs in the namespace: enough to squat a child's name.
    await w.grant('mallory', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['get'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a Job someone pre-created under the child name: Failed/ChildConflict with an Event, the Job not recorded', async () => {
    const [a] = w.namespaces;
    const op = await waitingOperation(a, 'migrate-db', {
      type: 'RunCommand',
      engine: 'job',
      targetRef: { name: 'shop' },
      parameters: { command: ['/migrate', '--really'] },
    });
    const squatted = childName(op, 1, NAME_LIMITS.job);
    await w.as('mallory').request({
      method: 'POST',
      path: jobsIn(a),
      body: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: squatted, labels: { [LABEL_OPERATION]: 'migrate-db' } },
        spec: {
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'fake', image: RUNCOMMAND_IMAGES[0], command: ['true'] }],
            },
          },
        },
      },
    });
    await approve(a, 'migrate-db');
    const out = await settled(w, a, 'migrate-db');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.succeeded).toMatchObject({ status: 'False', reason: 'ChildConflict' });
    expect(out.succeeded?.message).toContain(
      `Job ${a}/${squatted} already exists and was not created for this Operation`,
    );
    expect(out.op.status?.childRef).toBeUndefined();
    expect(
      await w.waitFor('the ChildConflict Event', async () =>
        (await eventReasons(a, 'migrate-db')).includes('ChildConflict'),
      ),
    ).toBe(true);
  });

  it('refuses a velero.io Backup under the child name that lacks the operation-uid label, whoever made it', async () => {
    const [a] = w.namespaces;
    const backups = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`;
    // The tenant cannot write in the Velero namespace at all...
    const denied = await w.denial(
      w.as('mallory').request({
        method: 'POST',
        path: backups,
        body: { apiVersion: 'velero.io/v1', kind: 'Backup', metadata: { name: 'x' }, spec: {} },
      }),
    );
    expect(denied.code).toBe(403);
    // ...and labels anyone could copy (operation name and namespace) are no proof of ownership.
    const op = await waitingOperation(a, 'nightly', {
      type: 'Backup',
      engine: 'velero',
      targetRef: { name: 'shop' },
    });
    const name = childName(op, 1, NAME_LIMITS.velero);
    await w.admin.request({
      method: 'POST',
      path: backups,
      body: {
        apiVersion: 'velero.io/v1',
        kind: 'Backup',
        metadata: { name, labels: { [LABEL_OPERATION]: 'nightly', [LABEL_OPERATION_NAMESPACE]: a } },
        spec: {},
        status: { phase: 'Completed' },
      } satisfies KubernetesObject & Record<string, unknown>,
    });
    await approve(a, 'nightly');
    const out = await settled(w, a, 'nightly');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.succeeded).toMatchObject({ status: 'False', reason: 'ChildConflict' });
    expect(out.succeeded?.message).toContain('ops.vworkspace.io/operation-uid');
  });

  it('records its own child by uid, under its controller owner reference', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'plain', {
      type: 'RunCommand',
      engine: 'job',
      targetRef: { name: 'shop' },
      parameters: { command: ['true'] },
    });
    const out = await settled(w, a, 'plain');
    expect(out.op.status?.phase).toBe('Running');
    const job = await w.admin.request<KubernetesObject>({
      method: 'GET',
      path: `${jobsIn(a)}/${out.op.status?.childRef?.name}`,
    });
    expect(job.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Operation',
      uid: out.op.metadata.uid,
      controller: true,
    });
    expect(out.op.status?.childRef?.uid).toBe(job.metadata?.uid);
  });
});
