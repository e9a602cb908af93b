// Issue 23 item 2, the authority of spec.retention (ADR 0053). The operator deletes backups with its own
// identity — a DeleteBackupRequest in Velero's namespace, a VolumeSnapshot delete in the tenant's — so a
// tenant who may schedule a Backup but may not delete backups would delete them through it (the confused
// deputy, threat model item 6). As for the type verbs (ADR 0011), what runs is what the webhook checked
// at create and edit: spec.retention is admitted only from a requester who may do what the operator
// will do for them. And the operator's own RBAC (profile backup.snapshot) missing is a condition that
// says what to grant, with nothing deleted.

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LABEL_CRON_OPERATION,
  LABEL_INSTANCE,
  LABEL_OPERATION,
} from '../../../operator/src/api/annotations.ts';
import { startWorld, type World } from './harness.ts';
import { createScheduler, getScheduler, mergePatch, OPS } from './schedule-support.ts';

const SNAPSHOTS = (ns: string) => `/apis/snapshot.storage.k8s.io/v1/namespaces/${ns}/volumesnapshots`;

const backupSpec = (retention?: Record<string, unknown>) => ({
  schedule: '0 3 1 1 *',
  operationTemplate: { spec: { type: 'Backup', engine: 'snapshot', targetRef: { name: 'shop' } } },
  ...(retention ? { retention } : {}),
});

describe('spec.retention deletes only backups its requester may delete', () => {
  let w: World;
  let a: string;
  let b: string;

  /** Three snapshot Backups of shop (one VolumeSnapshot each) as CronOperation `cron`'s runs left them. */
  async function snapshotsOf(ns: string, cron: string): Promise<void> {
    for (const [i, hoursAgo] of [3, 2, 1].entries()) {
      const name = `${cron}-op${i + 1}-data`;
      await w.admin.request({
        method: 'POST',
        path: SNAPSHOTS(ns),
        body: {
          apiVersion: 'snapshot.storage.k8s.io/v1',
          kind: 'VolumeSnapshot',
          metadata: {
            name,
            labels: {
              [LABEL_CRON_OPERATION]: cron,
              [LABEL_INSTANCE]: 'shop',
              [LABEL_OPERATION]: `${cron}-op${i + 1}`,
            },
          },
          spec: { source: { persistentVolumeClaimName: 'data' } },
        },
      });
      await mergePatch(w.admin, `${SNAPSHOTS(ns)}/${name}/status`, {
        status: { readyToUse: true, creationTime: new Date(Date.now() - hoursAgo * 3_600_000).toISOString() },
      });
    }
  }

  async function snapshotNames(ns: string, cron: string): Promise<string[]> {
    const list = await w.admin.request<{ items: KubernetesObject[] }>({
      method: 'GET',
      path: SNAPSHOTS(ns),
      query: { labelSelector: `${LABEL_CRON_OPERATION}=${cron}` },
    });
    return list.items.map((s) => s.metadata?.name ?? '').sort();
  }

  const retentionCondition = async (ns: string, cron: string) =>
    (await getScheduler(w, ns, 'cronoperations', cron)).status?.conditions?.find(
      (c) => c.type === 'Retention',
    );

  beforeAll(async () => {
    w = await startWorld();
    [a, b] = w.namespaces;
    for (const ns of [a, b]) {
      await w.instance(ns, 'shop', { backup: 'snapshot' });
      const scheduling = [
        {
          apiGroups: ['ops.vworkspace.io'],
          resources: ['cronoperations'],
          verbs: ['create', 'get', 'patch'],
        },
        { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['backup'] },
      ];
      const readSnapshots = {
        apiGroups: ['snapshot.storage.k8s.io'],
        resources: ['volumesnapshots'],
        verbs: ['get', 'list'],
      };
      // mallory may schedule Backups and read snapshots, not delete them; alice may delete them too.
      await w.grant('mallory', ns, [...scheduling, readSnapshots]);
      await w.grant('alice', ns, [...scheduling, { ...readSnapshots, verbs: ['get', 'list', 'delete'] }]);
    }
    // The operator may delete VolumeSnapshots in namespace a only.
    await w.grantProfile('backup.snapshot', a);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses spec.retention from a tenant who may not delete VolumeSnapshots, deleting nothing', async () => {
    await snapshotsOf(a, 'mallory-nightly');
    const d = await w.denial(
      createScheduler(w.as('mallory'), a, 'cronoperations', 'mallory-nightly', backupSpec({ keepLast: 1 })),
    );
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual(['spec.retention']);
    expect(d.message).toContain('may not delete volumesnapshots.snapshot.storage.k8s.io');
    expect(await snapshotNames(a, 'mallory-nightly')).toHaveLength(3);
  });

  it('refuses such a tenant adding spec.retention to a CronOperation someone else created', async () => {
    await createScheduler(w.as('alice'), a, 'cronoperations', 'shared-nightly', backupSpec());
    await snapshotsOf(a, 'shared-nightly');
    const d = await w.denial(
      mergePatch(w.as('mallory'), `${OPS}/namespaces/${a}/cronoperations/shared-nightly`, {
        spec: { retention: { keepLast: 0 } },
      }),
    );
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual(['spec.retention']);
    expect(await snapshotNames(a, 'shared-nightly')).toHaveLength(3);
  });

  it('admits it from a tenant who may delete them, and the operator deletes on the CSV RBAC', async () => {
    await snapshotsOf(a, 'alice-nightly');
    await createScheduler(w.as('alice'), a, 'cronoperations', 'alice-nightly', backupSpec({ keepLast: 1 }));
    await w.waitFor('the two oldest backups deleted', async () =>
      (await snapshotNames(a, 'alice-nightly')).length === 1 ? true : undefined,
    );
    expect(await snapshotNames(a, 'alice-nightly')).toEqual(['alice-nightly-op3-data']);
    expect(await retentionCondition(a, 'alice-nightly')).toMatchObject({
      status: 'True',
      reason: 'RetentionApplied',
    });
  });

  it('says RetentionBlocked, deleting nothing, where the operator lacks its backup.snapshot profile', async () => {
    await snapshotsOf(b, 'alice-nightly');
    await createScheduler(w.as('alice'), b, 'cronoperations', 'alice-nightly', backupSpec({ keepLast: 1 }));
    const c = await w.waitFor('the Retention condition', () => retentionCondition(b, 'alice-nightly'));
    expect(c).toMatchObject({ status: 'False', reason: 'RetentionBlocked' });
    expect(c.message).toContain('backup.snapshot');
    expect(await snapshotNames(b, 'alice-nightly')).toHaveLength(3);
  });
});
