// Restore drills of restic backups (volsync Verify, ADR 0060) in the security world: the operator on exactly
// the CSV's RBAC, tenants by impersonation. The drill reads a restic repository with the credentials of a
// Secret of the namespace and its probe prints what it finds into status, so the hole to fear is a tenant
// reading, through a drill, a repository whose Secret they may not read. And the copies must never be the
// instance's own claims, and must go whatever the outcome. VolSync and the Job controller are played by the
// test (status patches); the operator does everything else.
import type { KubernetesObject } from '@kubernetes/client-node';
import { PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { childrenOf, getInstance, jobsIn } from './support.ts';

const VOLSYNC = '/apis/volsync.backube/v1alpha1';
const RELEASE_CLAIM = 'data-shop-0';
const drill = (repository: unknown, extra: Record<string, unknown> = {}) => ({
  type: 'Verify',
  engine: 'volsync',
  targetRef: { name: 'shop' },
  parameters: { repository, command: ['sh', '-c', 'ls /restored/data-shop-0'], ...extra },
});

describe('a restic drill reads only repositories its requester may read, beside the instance, and leaves no copy', () => {
  let w: World;
  let a: string;
  const sources = () => `${VOLSYNC}/namespaces/${a}/replicationsources`;
  const destinations = () => `${VOLSYNC}/namespaces/${a}/replicationdestinations`;
  const claims = () => `/api/v1/namespaces/${a}/persistentvolumeclaims`;

  const waitPhase = (name: string, phase: string) =>
    w.waitFor(`Operation ${name} to be ${phase}`, async () => {
      const o = await w.getOperation(a, name);
      return o.status?.phase === phase ? o : undefined;
    });
  /** Plays VolSync: every ReplicationSource/Destination of `op` reports its manual sync done (or failed). */
  const sync = async (path: string, op: string, failed?: string) => {
    const children = await w.waitFor(`the VolSync children of ${op}`, async () => {
      const c = await childrenOf(w, path, op);
      return c.length > 0 ? c : undefined;
    });
    for (const c of children as (KubernetesObject & { spec: { trigger: { manual: string } } })[]) {
      await w.admin.request({
        method: 'PATCH',
        path: `${path}/${c.metadata!.name}/status`,
        contentType: PATCH_TYPES.merge,
        body: {
          status: failed
            ? { latestMoverStatus: { result: 'Failed', logs: failed } }
            : { lastManualSync: c.spec.trigger.manual },
        },
      });
    }
    return children;
  };
  /** The drill's copies (claims labelled with its name), as the admin sees them, not yet being deleted. */
  const liveCopies = async (op: string) =>
    (await childrenOf(w, claims(), op)).filter((c) => !c.metadata?.deletionTimestamp);

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { backup: 'volsync', restore: 'volsync' });
    await w.grantProfile('backup.volsync', a);
    await w.grantProfile('verify.volsync', a);
    for (const name of ['restic-shop', 'restic-payroll']) {
      await w.admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${a}/secrets`,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name },
          stringData: { RESTIC_REPOSITORY: `s3:http://minio/${name}`, RESTIC_PASSWORD: `${name}-password` },
        },
      });
    }
    await w.admin.request({
      method: 'POST',
      path: claims(),
      body: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: RELEASE_CLAIM, labels: { 'app.kubernetes.io/instance': 'shop' } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    // alice runs backups and drills of shop, and may read the shop repository's Secret, not payroll's.
    await w.grant('alice', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['operations'],
        verbs: ['create', 'get', 'list', 'delete'],
      },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['backup', 'restore'],
      },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['restic-shop'], verbs: ['get'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a drill of a repository whose Secret the requester may not read, at the field that names it', async () => {
    const single = await w.denial(w.operation(w.as('alice'), a, 'peek', drill('restic-payroll')));
    expect(single.code).toBe(403);
    expect(single.causes.map((c) => c.field)).toEqual(['spec.parameters.repository']);
    expect(single.message).toContain('may not get secrets');
    const mapped = await w.denial(
      w.operation(w.as('alice'), a, 'peek-map', drill({ [RELEASE_CLAIM]: 'restic-payroll' })),
    );
    expect(mapped.causes.map((c) => c.field)).toEqual([`spec.parameters.repository[${RELEASE_CLAIM}]`]);
  });

  it('refuses a Backup or Restore with a repository whose Secret the requester may not read', async () => {
    // A Backup with retain makes VolSync forget that repository's snapshots; a Restore reads it into the
    // requester's instance: both act on the repository with credentials the requester may not read.
    const backup = await w.denial(
      w.operation(w.as('alice'), a, 'forget-payroll', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: 'shop' },
        parameters: { repository: 'restic-payroll', retain: { daily: 1 } },
      }),
    );
    expect(backup.code).toBe(403);
    expect(backup.causes.map((c) => c.field)).toEqual(['spec.parameters.repository']);
    const restore = await w.denial(
      w.operation(w.as('alice'), a, 'read-payroll', {
        type: 'Restore',
        engine: 'volsync',
        targetRef: { name: 'shop' },
        parameters: { repository: { [RELEASE_CLAIM]: 'restic-payroll' } },
      }),
    );
    expect(restore.code).toBe(403);
    expect(restore.causes.map((c) => c.field)).toEqual([`spec.parameters.repository[${RELEASE_CLAIM}]`]);
  });

  it('a passing drill restores the Backup into a copy beside the instance, probes it, records RTO and RPO, and drops the copy', async () => {
    await w.operation(w.as('alice'), a, 'nightly', {
      type: 'Backup',
      engine: 'volsync',
      targetRef: { name: 'shop' },
      parameters: { repository: 'restic-shop' },
    });
    await sync(sources(), 'nightly');
    const backup = await waitPhase('nightly', 'Succeeded');

    await w.operation(w.as('alice'), a, 'drill-ok', drill('restic-shop'));
    const [rd] = (await sync(destinations(), 'drill-ok')) as (KubernetesObject & {
      spec: { restic: Record<string, unknown> };
    })[];
    const [copy] = await childrenOf(w, claims(), 'drill-ok');
    expect(copy?.metadata?.name).not.toBe(RELEASE_CLAIM);
    expect(rd?.spec.restic).toEqual({
      repository: 'restic-shop',
      destinationPVC: copy?.metadata?.name,
      copyMethod: 'Direct',
      restoreAsOf: backup.status?.finishedAt,
    });
    const job = await w.waitFor('the probe Job to be resumed', async () => {
      const [j] = (await childrenOf(w, jobsIn(a), 'drill-ok')) as (KubernetesObject & {
        spec: { suspend?: boolean };
      })[];
      return j && j.spec.suspend === false ? j : undefined;
    });
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const done = { status: 'True', lastProbeTime: now, lastTransitionTime: now };
    await w.admin.request({
      method: 'PATCH',
      path: `${jobsIn(a)}/${job.metadata!.name}/status`,
      contentType: PATCH_TYPES.merge,
      body: {
        status: {
          startTime: now,
          completionTime: now,
          succeeded: 1,
          conditions: [
            { type: 'SuccessCriteriaMet', ...done },
            { type: 'Complete', ...done },
          ],
        },
      },
    });
    const ok = await waitPhase('drill-ok', 'Succeeded');
    const outputs = ok.status?.outputs as Record<string, string>;
    expect(outputs).toMatchObject({ verifiedBackup: 'nightly', restoredClaims: copy?.metadata?.name });
    expect(Number(outputs.rtoSeconds)).toBeGreaterThanOrEqual(0);
    expect(Number(outputs.rpoSeconds)).toBeGreaterThanOrEqual(0);
    await w.waitFor('the copy and the ReplicationDestination to go', async () =>
      (await liveCopies('drill-ok')).length === 0 &&
      (await childrenOf(w, destinations(), 'drill-ok')).every((d) => d.metadata?.deletionTimestamp)
        ? true
        : undefined,
    );
    const source = await w.admin.request<KubernetesObject>({
      method: 'GET',
      path: `${claims()}/${RELEASE_CLAIM}`,
    });
    expect(source.metadata?.deletionTimestamp).toBeUndefined();
    const verified = await w.waitFor('the verified backup on the instance', async () => {
      const i = await getInstance(w, a, 'shop');
      return i.status?.lastVerifiedBackup?.operation === 'drill-ok' ? i : undefined;
    });
    expect(verified.status?.lastVerifiedBackup).toMatchObject({ backup: 'nightly' });
  });

  it('a failed restore fails the drill with what the mover said, and drops the copy', async () => {
    await w.operation(w.as('alice'), a, 'drill-bad', drill('restic-shop'));
    await sync(destinations(), 'drill-bad', 'ERROR: pack 3f2a: ciphertext verification failed');
    const failed = await waitPhase('drill-bad', 'Failed');
    const cond = failed.status?.conditions?.find((c) => c.type === 'Succeeded');
    expect(cond).toMatchObject({ status: 'False', reason: 'VerifyRestoreFailed' });
    expect(cond?.message).toContain('ciphertext verification failed');
    await w.waitFor('the copy to go', async () =>
      (await liveCopies('drill-bad')).length === 0 ? true : undefined,
    );
    const [probe] = (await childrenOf(w, jobsIn(a), 'drill-bad')) as (KubernetesObject & {
      spec: { suspend?: boolean };
    })[];
    expect(probe?.spec.suspend).toBe(true);
  });
});
