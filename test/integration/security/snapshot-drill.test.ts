// Restore drills of snapshot Backups (Verify, engine snapshot; ADR 0059) in the security world: the operator
// on exactly the CSV's RBAC, tenants by impersonation. The drill copies a VolumeSnapshot into a new claim the
// probe mounts, so the holes to fear are a tenant drilling (and so reading, through the probe) a snapshot
// that is not a backup of their instance — another team's, or one made by hand — and a drill that writes or
// deletes the source snapshot. The CSI and Job controllers are played by the test (status patches).
import type { KubernetesObject } from '@kubernetes/client-node';
import { PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_PVC,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_OPERATION,
  MANAGED_BY,
} from '../../../operator/src/api/annotations.ts';
import { startWorld, type World } from './harness.ts';
import { jobsIn, settled } from './support.ts';

const SNAPSHOTS = (ns: string) => `/apis/snapshot.storage.k8s.io/v1/namespaces/${ns}/volumesnapshots`;
const CLAIMS = (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`;
const drill = (parameters: Record<string, unknown> = {}) => ({
  type: 'Verify',
  engine: 'snapshot',
  targetRef: { name: 'shop' },
  parameters: { command: ['sh', '-c', 'test -d $VWS_RESTORED_DIR/data'], ...parameters },
});

describe('a snapshot drill reads only its instance’s snapshot Backups and never touches them', () => {
  let w: World;
  let a: string;
  let b: string;

  const merge = (path: string, body: Record<string, unknown>) =>
    w.admin.request({ method: 'PATCH', path, contentType: PATCH_TYPES.merge, body });

  /** A readyToUse VolumeSnapshot of claim `data`: as a snapshot Backup of shop made it, or by hand. */
  async function snapshot(ns: string, name: string, byBackup: boolean): Promise<KubernetesObject> {
    await w.admin.request({
      method: 'POST',
      path: SNAPSHOTS(ns),
      body: {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: {
          name,
          labels: byBackup
            ? { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_INSTANCE]: 'shop', [LABEL_OPERATION]: `${name}-op` }
            : { [LABEL_INSTANCE]: 'shop' },
          annotations: { [ANNOTATION_PVC]: 'data' },
        },
        spec: { source: { persistentVolumeClaimName: 'data' } },
      },
    });
    await merge(`${SNAPSHOTS(ns)}/${name}/status`, {
      status: {
        readyToUse: true,
        restoreSize: '1Gi',
        creationTime: new Date(Date.now() - 3_600_000).toISOString(),
      },
    });
    return w.admin.request<KubernetesObject>({ method: 'GET', path: `${SNAPSHOTS(ns)}/${name}` });
  }
  const current = (ns: string, name: string) =>
    w.admin.request<KubernetesObject>({ method: 'GET', path: `${SNAPSHOTS(ns)}/${name}` });
  /** The claims a drill made (as the admin sees them). */
  const copiesOf = (ns: string, op: string) =>
    w.admin
      .request<{ items: KubernetesObject[] }>({
        method: 'GET',
        path: CLAIMS(ns),
        query: { labelSelector: `${LABEL_OPERATION}=${op}` },
      })
      .then((l) => l.items);
  const waitPhase = (ns: string, name: string, phase: string) =>
    w.waitFor(`Operation ${name} to be ${phase}`, async () => {
      const o = await w.getOperation(ns, name);
      return o.status?.phase === phase ? o : undefined;
    });
  const copiesGoing = (ns: string, op: string) =>
    w.waitFor(`the restored claims of ${op} to be deleted`, async () => {
      const left = await copiesOf(ns, op);
      return left.every((c) => c.metadata?.deletionTimestamp) ? true : undefined;
    });
  /** Plays the CSI driver (the copy is Bound) and the Job controller (the probe ends `ok` or not). */
  async function runDrill(ns: string, op: string, ok: boolean): Promise<KubernetesObject[]> {
    const copies = await w.waitFor(`the restored claim of ${op}`, async () => {
      const c = await copiesOf(ns, op);
      return c.length > 0 ? c : undefined;
    });
    for (const c of copies)
      await merge(`${CLAIMS(ns)}/${c.metadata?.name}/status`, { status: { phase: 'Bound' } });
    const job = await w.waitFor(`the probe Job of ${op}`, async () => {
      const l = await w.admin.request<{ items: KubernetesObject[] }>({
        method: 'GET',
        path: jobsIn(ns),
        query: { labelSelector: `${LABEL_OPERATION}=${op}` },
      });
      return l.items[0];
    });
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const c = (type: string, reason: string) => ({
      type,
      status: 'True',
      lastProbeTime: now,
      lastTransitionTime: now,
      reason,
      message: reason,
    });
    await merge(`${jobsIn(ns)}/${job.metadata?.name}/status`, {
      status: ok
        ? {
            startTime: now,
            completionTime: now,
            succeeded: 1,
            conditions: [c('SuccessCriteriaMet', 'CompletionsReached'), c('Complete', 'CompletionsReached')],
          }
        : {
            startTime: now,
            failed: 1,
            conditions: [c('FailureTarget', 'BackoffLimitExceeded'), c('Failed', 'BackoffLimitExceeded')],
          },
    });
    return copies;
  }

  beforeAll(async () => {
    w = await startWorld();
    [a, b] = w.namespaces;
    for (const [ns, user] of [
      [a, 'alice'],
      [b, 'bea'],
    ] as const) {
      await w.instance(ns, 'shop', { backup: 'snapshot', restore: 'snapshot' });
      await w.grantProfile('verify.snapshot', ns);
      await w.grant(user, ns, [
        { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get', 'list'] },
        {
          apiGroups: ['apps.vworkspace.io'],
          resources: ['applicationinstances'],
          verbs: ['backup', 'restore'],
        },
        { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['get', 'list'] },
      ]);
    }
    // carol may run drills of the instance but not read its VolumeSnapshots herself.
    await w.grant('carol', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['restore'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it("refuses another namespace's snapshot and one no Backup made: BackupNotAllowed, no claim", async () => {
    await snapshot(b, 'bea-nightly', true);
    await snapshot(a, 'hand-made', false);
    for (const [op, name] of [
      ['peek', 'bea-nightly'],
      ['forged', 'hand-made'],
    ] as const) {
      await w.operation(w.as('alice'), a, op, drill({ snapshotName: name }));
      const out = await settled(w, a, op);
      expect(out.op.status?.phase).toBe('Failed');
      expect(out.accepted).toMatchObject({ status: 'False', reason: 'BackupNotAllowed' });
      expect(out.accepted?.message).toContain(`there is no VolumeSnapshot ${name} made by a snapshot Backup`);
      expect(await copiesOf(a, op)).toEqual([]);
    }
  });

  it('refuses a requester who may not read the VolumeSnapshots the drill would read (403 at the field)', async () => {
    await snapshot(a, 'nightly-0', true);
    const named = await w.denial(
      w.operation(w.as('carol'), a, 'carol-named', drill({ snapshotName: 'nightly-0' })),
    );
    expect(named.code).toBe(403);
    expect(named.causes.map((c) => c.field)).toEqual(['spec.parameters.snapshotName']);
    expect(named.message).toContain(
      'may not get volumesnapshots.snapshot.storage.k8s.io/nightly-0 in namespace',
    );
    const newest = await w.denial(w.operation(w.as('carol'), a, 'carol-newest', drill()));
    expect(newest.causes.map((c) => c.field)).toEqual(['spec.parameters']);
    expect(newest.message).toContain('may not list volumesnapshots.snapshot.storage.k8s.io');
    expect(await copiesOf(a, 'carol-named')).toEqual([]);
  });

  it('a passing drill: RTO and RPO in the outputs, the copy deleted, the source snapshot untouched', async () => {
    const before = await snapshot(a, 'nightly-1', true);
    await w.operation(w.as('alice'), a, 'drill-ok', drill({ snapshotName: 'nightly-1' }));
    const [copy] = await runDrill(a, 'drill-ok', true);
    expect((copy as KubernetesObject & { spec: Record<string, unknown> }).spec.dataSource).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: 'nightly-1',
    });
    const ok = await waitPhase(a, 'drill-ok', 'Succeeded');
    const outputs = ok.status?.outputs as Record<string, string>;
    expect(outputs.verifiedBackup).toBe('nightly-1');
    expect(Number(outputs.rpoSeconds)).toBeGreaterThan(3500);
    expect(Number(outputs.rtoSeconds)).toBeGreaterThanOrEqual(0);
    await copiesGoing(a, 'drill-ok');
    expect(await current(a, 'nightly-1')).toEqual(before);
  });

  it('a failing probe fails the drill, deletes the copy, and leaves the source snapshot untouched', async () => {
    const before = await snapshot(a, 'nightly-2', true);
    await w.operation(w.as('alice'), a, 'drill-bad', drill({ snapshotName: 'nightly-2' }));
    await runDrill(a, 'drill-bad', false);
    const failed = await waitPhase(a, 'drill-bad', 'Failed');
    expect(failed.status?.conditions?.find((c) => c.type === 'Succeeded')).toMatchObject({
      status: 'False',
      reason: 'VerifyProbeFailed',
    });
    await copiesGoing(a, 'drill-bad');
    expect(await current(a, 'nightly-2')).toEqual(before);
  });
});
