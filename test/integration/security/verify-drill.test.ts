// Restore drills (Verify, ADR 0054) in the security world: the operator on exactly the CSV's RBAC, tenants
// by impersonation. A drill restores a backup into a namespace the operator creates with its own cluster
// permission, so the holes to fear are a tenant drilling (and so reading, through the probe) another
// team's backup, a tenant choosing the namespace, and a scratch namespace left behind. The Velero and Job
// controllers are played by the test (status patches); the operator does everything else.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_RUN_NOW,
  FINALIZER_SCRATCH_NAMESPACE,
  LABEL_CRON_OPERATION,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
} from '../../../operator/src/api/annotations.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { startWorld, type World } from './harness.ts';
import { childrenOf, completeVeleroChild, getInstance, jobsIn, settled } from './support.ts';

const OPS = '/apis/ops.vworkspace.io/v1alpha1';
type ProbeJob = KubernetesObject & {
  spec: { template: { spec: { containers: { env?: unknown; envFrom?: unknown }[] } } };
};
const backup = { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } };
const drill = (parameters: Record<string, unknown> = {}) => ({
  type: 'Verify',
  engine: 'velero',
  targetRef: { name: 'shop' },
  parameters: { command: ['sh', '-c', 'echo rows=42'], ...parameters },
});

describe('a restore drill reads only its namespace’s backups and leaves no scratch namespace behind', () => {
  let w: World;
  let a: string;
  let b: string;
  let backups: string;
  let restores: string;

  /** The scratch namespaces a drill made (as the admin sees them). */
  const scratchOf = (ns: string, op: string) =>
    w.admin
      .request<{ items: KubernetesObject[] }>({
        method: 'GET',
        path: '/api/v1/namespaces',
        query: { labelSelector: `${LABEL_OPERATION}=${op},${LABEL_OPERATION_NAMESPACE}=${ns}` },
      })
      .then((l) => l.items);
  /** Waits until every scratch namespace of the drill is gone or being deleted. */
  const scratchGoing = (ns: string, op: string) =>
    w.waitFor(`the scratch namespace of ${op} to be deleted`, async () => {
      const left = await scratchOf(ns, op);
      return left.every((n) => n.metadata?.deletionTimestamp) ? true : undefined;
    });
  const waitPhase = (ns: string, name: string, phase: string) =>
    w.waitFor(`Operation ${name} to be ${phase}`, async () => {
      const o = await w.getOperation(ns, name);
      return o.status?.phase === phase ? o : undefined;
    });
  const patchRestore = async (op: string, status: Record<string, unknown>) => {
    const [r] = await childrenOf(w, restores, op);
    await w.admin.request({
      method: 'PATCH',
      path: `${restores}/${r!.metadata!.name}`,
      contentType: PATCH_TYPES.merge,
      body: { status },
    });
  };
  /** The probe Job of drill `op` in namespace a, once it exists. */
  const probeJob = (op: string) =>
    w.waitFor(`the probe Job of ${op}`, async () => {
      const [j] = await childrenOf(w, jobsIn(a), op);
      return j as ProbeJob | undefined;
    });
  const backupIn = async (ns: string, user: string, name: string) => {
    await w.operation(w.as(user), ns, name, backup);
    return (await completeVeleroChild(w, backups, ns, name)).metadata!.name!;
  };

  beforeAll(async () => {
    w = await startWorld();
    [a, b] = w.namespaces;
    backups = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`;
    restores = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/restores`;
    for (const [ns, user] of [
      [a, 'alice'],
      [b, 'bea'],
    ] as const) {
      await w.instance(ns, 'shop', { backup: 'velero', restore: 'velero' });
      await w.grantProfile('backup.velero', ns);
      await w.grantProfile('verify.velero', ns);
      await w.grant(user, ns, [
        {
          apiGroups: ['ops.vworkspace.io'],
          resources: ['operations', 'cronoperations'],
          verbs: ['create', 'get', 'list', 'patch', 'delete'],
        },
        {
          apiGroups: ['apps.vworkspace.io'],
          resources: ['applicationinstances'],
          verbs: ['backup', 'restore'],
        },
      ]);
    }
    // dave may drill like alice but may not read the namespace's Secrets.
    await w.grant('dave', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['operations', 'cronoperations'],
        verbs: ['create', 'get', 'list', 'patch', 'delete'],
      },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['restore'] },
    ]);
    // carol may back up the instance but not restore it.
    await w.grant('carol', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['backup'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it("refuses a drill of another team's backup: BackupNotAllowed, no Restore, no scratch namespace", async () => {
    const theirs = await backupIn(b, 'bea', 'bea-nightly');
    await w.operation(w.as('alice'), a, 'peek', drill({ backupName: theirs }));
    const out = await settled(w, a, 'peek');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'BackupNotAllowed' });
    expect(out.accepted?.message).toContain(`no velero.io Backup ${theirs} made for namespace ${a}`);
    expect(await childrenOf(w, restores, 'peek')).toEqual([]);
    expect(await scratchOf(a, 'peek')).toEqual([]);
  });

  it('needs restore on the instance, and never lets the requester name the namespace', async () => {
    const noRestore = await w.denial(w.operation(w.as('carol'), a, 'carol-drill', drill()));
    expect(noRestore.code).toBe(403);
    expect(noRestore.message).toContain('restore');
    const named = await w.denial(
      w.operation(w.as('alice'), a, 'into-kube-system', drill({ namespace: 'kube-system' })),
    );
    expect(named.causes.map((c) => c.field)).toEqual(['spec.parameters.namespace']);
  });

  it('a failed restore fails the drill with what Velero said, records it on the instance, and deletes the scratch namespace', async () => {
    const mine = await backupIn(a, 'alice', 'nightly-1');
    await w.operation(w.as('alice'), a, 'drill-bad', drill());
    await waitPhase(a, 'drill-bad', 'Running');
    const [scratch] = await scratchOf(a, 'drill-bad');
    expect(scratch?.metadata?.name).toMatch(/^vws-verify-/);
    const [r] = await childrenOf(w, restores, 'drill-bad');
    expect((r as KubernetesObject & { spec: Record<string, unknown> }).spec).toMatchObject({
      backupName: mine,
      includedNamespaces: [a],
      namespaceMapping: { [a]: scratch!.metadata!.name },
    });
    await patchRestore('drill-bad', { phase: 'PartiallyFailed', errors: 3, warnings: 0 });
    const failed = await waitPhase(a, 'drill-bad', 'Failed');
    const cond = failed.status?.conditions?.find((c) => c.type === 'Succeeded');
    expect(cond).toMatchObject({ status: 'False', reason: 'VerifyRestoreFailed' });
    expect(cond?.message).toContain('PartiallyFailed with 3 error(s)');
    await scratchGoing(a, 'drill-bad');
    const drilled = await w.waitFor('the failed drill on the instance', async () => {
      const i = await getInstance(w, a, 'shop');
      return i.status?.lastDrill?.operation === 'drill-bad' ? i : undefined;
    });
    expect(drilled.status?.lastDrill).toMatchObject({ result: 'Failed', reason: 'VerifyRestoreFailed' });
    expect(drilled.status?.lastVerifiedBackup).toBeUndefined();
  });

  it('a passing drill: the probe runs after the restore, RTO and RPO reach the Operation and the instance', async () => {
    await w.operation(w.as('alice'), a, 'drill-ok', drill());
    await waitPhase(a, 'drill-ok', 'Running');
    const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await patchRestore('drill-ok', { phase: 'Completed', startTimestamp: start });
    const job = await w.waitFor('the probe Job to be resumed', async () => {
      const [j] = (await childrenOf(w, jobsIn(a), 'drill-ok')) as (KubernetesObject & {
        spec: { suspend?: boolean };
      })[];
      return j && j.spec.suspend === false ? j : undefined;
    });
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const done = {
      status: 'True',
      lastProbeTime: now,
      lastTransitionTime: now,
      reason: 'CompletionsReached',
      message: 'Reached expected number of succeeded pods',
    };
    await w.admin.request({
      method: 'PATCH',
      path: `${jobsIn(a)}/${job.metadata!.name}/status`,
      contentType: PATCH_TYPES.merge,
      body: {
        status: {
          startTime: start,
          completionTime: now,
          succeeded: 1,
          conditions: [
            { type: 'SuccessCriteriaMet', ...done },
            { type: 'Complete', ...done },
          ],
        },
      },
    });
    const ok = await waitPhase(a, 'drill-ok', 'Succeeded');
    const outputs = ok.status?.outputs as Record<string, string>;
    expect(outputs.verifiedBackup).toBe(outputs.backupName);
    expect(Number(outputs.rtoSeconds)).toBeGreaterThanOrEqual(60);
    expect(Number(outputs.rpoSeconds)).toBeGreaterThanOrEqual(0);
    await scratchGoing(a, 'drill-ok');
    const verified = await w.waitFor('the verified backup on the instance', async () => {
      const i = await getInstance(w, a, 'shop');
      return i.status?.lastVerifiedBackup?.operation === 'drill-ok' ? i : undefined;
    });
    expect(verified.status?.lastVerifiedBackup).toMatchObject({
      backup: outputs.verifiedBackup,
      rtoSeconds: Number(outputs.rtoSeconds),
    });
    expect(verified.status?.lastDrill).toMatchObject({ operation: 'drill-ok', result: 'Succeeded' });
  });

  it('deleting a running drill deletes its scratch namespace first (finalizer)', async () => {
    await w.operation(w.as('alice'), a, 'drill-gone', drill());
    await waitPhase(a, 'drill-gone', 'Running');
    expect(await scratchOf(a, 'drill-gone')).toHaveLength(1);
    expect((await w.getOperation(a, 'drill-gone')).metadata.finalizers).toEqual([
      FINALIZER_SCRATCH_NAMESPACE,
    ]);
    await w.as('alice').request({ method: 'DELETE', path: `${OPS}/namespaces/${a}/operations/drill-gone` });
    await scratchGoing(a, 'drill-gone');
    await w.waitFor('the drill to be gone', async () => {
      try {
        await w.getOperation(a, 'drill-gone');
        return undefined;
      } catch {
        return true;
      }
    });
  });

  it('a probe Secret: only a requester who may read it names it; the probe Job gets it by name, its value is nowhere else', async () => {
    const secret = 'shop-db';
    const value = `pw-${randomBytes(12).toString('hex')}`;
    await w.admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${a}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secret },
        stringData: { PGPASSWORD: value },
      },
    });
    // dave may create drills but not get the Secret: naming it would have the probe print it into status.
    const denied = await w.denial(w.operation(w.as('dave'), a, 'dave-drill', drill({ probeSecret: secret })));
    expect(denied.code).toBe(403);
    expect(denied.causes.map((c) => c.field)).toEqual(['spec.parameters.probeSecret']);
    expect(denied.causes[0]?.message).toContain(`may not get secrets/${secret} in namespace ${a}`);
    const cron = {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'CronOperation',
      spec: { schedule: '0 0 1 1 *', operationTemplate: { spec: drill({ probeSecret: secret }) } },
    };
    const cronDenied = await w.denial(
      w.as('dave').request({
        method: 'POST',
        path: `${OPS}/namespaces/${a}/cronoperations`,
        body: { ...cron, metadata: { name: 'dave-drills' } },
      }),
    );
    expect(cronDenied.causes.map((c) => c.field)).toEqual([
      'spec.operationTemplate.spec.parameters.probeSecret',
    ]);
    // Nor may a name come from another Operation's outputs, which admission cannot check.
    const fromOutputs = await w.denial(
      w.operation(w.as('alice'), a, 'drill-from-outputs', {
        ...drill(),
        parametersFrom: [
          { latest: { type: 'Backup' }, outputs: [{ output: 'backupName', parameter: 'probeSecret' }] },
        ],
      }),
    );
    const cause = fromOutputs.causes.find((c) => c.field === 'spec.parametersFrom[0].outputs[0].parameter');
    expect(cause?.message).toContain('set spec.parameters.probeSecret');

    // alice may get exactly that Secret.
    await w.grant('alice', a, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [secret] },
    ]);
    await w.operation(w.as('alice'), a, 'drill-secret', drill({ probeSecret: secret }));
    await waitPhase(a, 'drill-secret', 'Running');
    const probe = await probeJob('drill-secret');
    const container = probe.spec.template.spec.containers[0];
    expect(container?.envFrom).toEqual([{ secretRef: { name: secret } }]);
    const op = await w.getOperation(a, 'drill-secret');
    const events = await w.admin.request({
      method: 'GET',
      path: `/apis/events.k8s.io/v1/namespaces/${a}/events`,
    });
    for (const [what, text] of [
      ['the probe Job', JSON.stringify(probe)],
      ['the Operation (spec, status, outputs)', JSON.stringify(op)],
      ['the events', JSON.stringify(events)],
      ["the operator's log", readFileSync(w.operator.logPath, 'utf8')],
    ] as const) {
      expect(text.includes(value), `the Secret's value in ${what}`).toBe(false);
    }
    await w.as('alice').request({
      method: 'PATCH',
      path: `${OPS}/namespaces/${a}/operations/drill-secret`,
      contentType: PATCH_TYPES.merge,
      body: { spec: { cancel: true } },
    });
    await scratchGoing(a, 'drill-secret');
  });

  it('a drill naming a Secret that does not exist waits Blocked/MissingSecret, with nothing created', async () => {
    await w.grant('alice', a, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['not-yet'] },
    ]);
    await w.operation(w.as('alice'), a, 'drill-no-secret', drill({ probeSecret: 'not-yet' }));
    const blocked = await waitPhase(a, 'drill-no-secret', 'Blocked');
    const cond = blocked.status?.conditions?.find((c) => c.type === 'Blocked');
    expect(cond).toMatchObject({ status: 'True', reason: 'MissingSecret' });
    expect(cond?.message).toContain('Secret not-yet does not exist');
    expect(await scratchOf(a, 'drill-no-secret')).toEqual([]);
    await w
      .as('alice')
      .request({ method: 'DELETE', path: `${OPS}/namespaces/${a}/operations/drill-no-secret` });
  });

  it('a CronOperation creates Verify Operations', async () => {
    await w.as('alice').request({
      method: 'POST',
      path: `${OPS}/namespaces/${a}/cronoperations`,
      body: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'CronOperation',
        metadata: { name: 'weekly-drill' },
        // Once a year: only the run-now request creates an Operation during the test.
        // alice may read shop-db (the probe Secret test above): her schedule may name it.
        spec: { schedule: '0 0 1 1 *', operationTemplate: { spec: drill({ probeSecret: 'shop-db' }) } },
      },
    });
    await w.as('alice').request({
      method: 'PATCH',
      path: `${OPS}/namespaces/${a}/cronoperations/weekly-drill`,
      contentType: PATCH_TYPES.merge,
      body: { metadata: { annotations: { [ANNOTATION_RUN_NOW]: 'now' } } },
    });
    const op = await w.waitFor('the scheduled drill', async () => {
      const list = await w.admin.request<{ items: Operation[] }>({
        method: 'GET',
        path: `${OPS}/namespaces/${a}/operations`,
        query: { labelSelector: `${LABEL_CRON_OPERATION}=weekly-drill` },
      });
      return list.items[0];
    });
    expect(op.spec).toMatchObject({ type: 'Verify', engine: 'velero' });
    const out = await settled(w, a, op.metadata.name ?? '');
    expect(out.op.status?.phase).toBe('Running');
    expect(await scratchOf(a, op.metadata.name ?? '')).toHaveLength(1);
    const probe = await probeJob(op.metadata.name ?? '');
    expect(probe.spec.template.spec.containers[0]?.envFrom).toEqual([{ secretRef: { name: 'shop-db' } }]);
  });
});
