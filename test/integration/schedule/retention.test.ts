// spec.retention on the real API server: the CronOperation controller in-process on a FakeClock, velero.io
// Backups and VolumeSnapshots as Velero and the snapshot controller would leave them (their CRDs are
// installed here; nothing runs them), deletions asked through each engine's own API.

import type { KubernetesObject } from '@kubernetes/client-node';
import { FakeClock, PATCH_TYPES, resourcePath } from '@vworkspace/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CronOperation,
  type CronOperationSpec,
  LABEL_CRON_OPERATION,
  LABEL_INSTANCE,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
} from '../../../operator/src/api/index.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  create,
  cronObject,
  eventsAbout,
  eventually,
  getObject,
  instanceObject,
  kinds,
  mergePatch,
  pathOf,
  startSchedulers,
} from './support.ts';

const kc = adminKubeConfig();
const raw = testClient(kc);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const VELERO = { group: 'velero.io', version: 'v1' };
const SNAPSHOTS = { group: 'snapshot.storage.k8s.io', version: 'v1', plural: 'volumesnapshots' };
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Creates `obj` with the status its controller would write: in the body for velero.io kinds (they have no
 * status subresource), through the status subresource for VolumeSnapshots.
 */
async function withStatus(path: string, obj: KubernetesObject, status: Record<string, unknown>) {
  if (obj.apiVersion?.startsWith('velero.io/')) {
    await raw.request({ method: 'POST', path, body: { ...obj, status } });
    return;
  }
  await raw.request({ method: 'POST', path, body: obj });
  await raw.request({
    method: 'PATCH',
    path: `${path}/${obj.metadata?.name}/status`,
    contentType: PATCH_TYPES.merge,
    body: { status },
  });
}

async function veleroBackup(
  veleroNs: string,
  ns: string,
  name: string,
  completed: number,
  instance = 'shop',
) {
  await withStatus(
    resourcePath({ ...VELERO, plural: 'backups', namespace: veleroNs }),
    {
      apiVersion: 'velero.io/v1',
      kind: 'Backup',
      metadata: {
        name,
        labels: {
          [LABEL_CRON_OPERATION]: 'nightly',
          [LABEL_OPERATION_NAMESPACE]: ns,
          [LABEL_INSTANCE]: instance,
        },
      },
      spec: { includedNamespaces: [ns] },
    } as KubernetesObject,
    { phase: 'Completed', startTimestamp: iso(completed - 60_000), completionTimestamp: iso(completed) },
  );
}

async function deleteRequests(veleroNs: string): Promise<{ name: string; backup: string }[]> {
  const list = await raw.request<{ items: { metadata: { name: string }; spec: { backupName: string } }[] }>({
    method: 'GET',
    path: resourcePath({ ...VELERO, plural: 'deletebackuprequests', namespace: veleroNs }),
  });
  return list.items
    .map((r) => ({ name: r.metadata.name, backup: r.spec.backupName }))
    .sort((a, b) => (a.backup < b.backup ? -1 : 1));
}

async function cronWithRetention(ns: string, spec: Partial<CronOperationSpec>) {
  await create(raw, cronObject(ns, 'nightly', { schedule: '0 3 1 1 *', ...spec }));
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, 'nightly') }).catch(() => undefined);
  });
}

const getCron = (ns: string) => getObject<CronOperation>(raw, kinds.cron, ns, 'nightly');
const retentionOf = async (ns: string) => {
  const c = await getCron(ns);
  return {
    status: c.status?.retention,
    condition: c.status?.conditions?.find((x) => x.type === 'Retention'),
  };
};
/** Any change of its annotations makes the controller reconcile it: a resync, as far as retention sees. */
const resync = (ns: string, value: string) =>
  mergePatch(raw, pathOf(kinds.cron, ns, 'nightly'), {
    metadata: { annotations: { 'example.com/poke': value } },
  });

async function startOperator(veleroNamespace: string) {
  const clock = new FakeClock(Date.now());
  const op = startSchedulers(kc, clock, { veleroNamespace });
  stops.push(() => op.stop());
  return clock;
}

describe('retention of velero Backups', () => {
  it('keepLast 2 over 5 Backups files one DeleteBackupRequest for each of the 3 oldest, once', async () => {
    const ns = await createNamespace(kc, 'ret-velero');
    const veleroNs = await createNamespace(kc, 'ret-velero-ns');
    await create(raw, instanceObject(ns, 'shop'));
    const now = Date.now();
    for (const i of [1, 2, 3, 4, 5]) await veleroBackup(veleroNs, ns, `b${i}`, now - (6 - i) * HOUR);
    // Another CronOperation's backup and another namespace's with the same name: not this policy's.
    await veleroBackup(veleroNs, 'elsewhere', 'foreign', now - 9 * HOUR);
    await startOperator(veleroNs);
    await cronWithRetention(ns, { retention: { keepLast: 2 } });

    await eventually('3 DeleteBackupRequests', async () => (await deleteRequests(veleroNs)).length === 3);
    expect(await deleteRequests(veleroNs)).toEqual([
      { name: 'b1-retention', backup: 'b1' },
      { name: 'b2-retention', backup: 'b2' },
      { name: 'b3-retention', backup: 'b3' },
    ]);
    const { status, condition } = await eventually('status.retention', async () => {
      const r = await retentionOf(ns);
      return r.status ? r : undefined;
    });
    expect(status).toMatchObject({ kept: 2, deleting: 3 });
    expect(status?.deleted?.map((d) => `${d.name}:${d.reason}`)).toEqual([
      'b3:not-selected',
      'b2:not-selected',
      'b1:not-selected',
    ]);
    expect(condition).toMatchObject({ status: 'True', reason: 'RetentionApplied' });
    const events = await eventually('an Event per deletion', async () => {
      const e = (await eventsAbout(raw, ns, 'CronOperation', 'nightly')).filter(
        (x) => x.reason === 'BackupDeleted',
      );
      return e.length >= 3 ? e : undefined;
    });
    expect(events.map((e) => e.note).sort()).toEqual([
      'deleting velero Backup b1 of shop (not-selected: no rule of spec.retention keeps it)',
      'deleting velero Backup b2 of shop (not-selected: no rule of spec.retention keeps it)',
      'deleting velero Backup b3 of shop (not-selected: no rule of spec.retention keeps it)',
    ]);

    // A newer Backup, then a reconcile while Velero has not acted on the requests yet: one request for the
    // Backup that now falls out (b4), none again for b1..b3, and one Event more.
    await veleroBackup(veleroNs, ns, 'b6', now);
    await resync(ns, '1');
    await eventually('a request for b4', async () => (await deleteRequests(veleroNs)).length === 4);
    expect((await deleteRequests(veleroNs)).map((r) => r.backup)).toEqual(['b1', 'b2', 'b3', 'b4']);
    const after = await eventually('the fourth Event', async () => {
      const e = (await eventsAbout(raw, ns, 'CronOperation', 'nightly')).filter(
        (x) => x.reason === 'BackupDeleted',
      );
      return e.length >= 4 ? e : undefined;
    });
    expect(after).toHaveLength(4);
    // Written after the deletions and their Events.
    expect(
      await eventually('the new record', async () => {
        const r = (await retentionOf(ns)).status;
        return r?.deleting === 4 ? r : undefined;
      }),
    ).toMatchObject({ kept: 2, deleting: 4 });
  });

  it('never asks to delete the newest verified Backup, and says which deletion Velero refused', async () => {
    const ns = await createNamespace(kc, 'ret-verified');
    const veleroNs = await createNamespace(kc, 'ret-verified-ns');
    await create(raw, instanceObject(ns, 'shop'));
    await raw.request({
      method: 'PATCH',
      path: pathOf(kinds.instance, ns, 'shop', 'status'),
      contentType: PATCH_TYPES.merge,
      body: {
        status: {
          lastVerifiedBackup: { time: iso(Date.now()), operation: 'drill-1', backup: 'b2', rtoSeconds: 42 },
        },
      },
    });
    const now = Date.now();
    for (const i of [1, 2, 3, 4, 5]) await veleroBackup(veleroNs, ns, `b${i}`, now - (6 - i) * HOUR);
    // Asked before, and Velero could not do it (it answers a request once and never retries it).
    await raw.request({
      method: 'POST',
      path: resourcePath({ ...VELERO, plural: 'deletebackuprequests', namespace: veleroNs }),
      body: {
        apiVersion: 'velero.io/v1',
        kind: 'DeleteBackupRequest',
        metadata: { name: 'b1-retention' },
        spec: { backupName: 'b1' },
        status: { phase: 'Processed', errors: ['error deleting backup from backup storage: boom'] },
      },
    });
    await startOperator(veleroNs);
    await cronWithRetention(ns, { retention: { keepLast: 2 } });

    const { status, condition } = await eventually('the pass', async () => {
      const r = await retentionOf(ns);
      return r.status ? r : undefined;
    });
    expect((await deleteRequests(veleroNs)).map((r) => r.backup)).toEqual(['b1', 'b3']);
    expect(status).toMatchObject({ kept: 3, deleting: 2 });
    expect(condition?.message).toContain(
      `Velero could not delete Backup b1: error deleting backup from backup storage: boom (DeleteBackupRequest ${veleroNs}/b1-retention; delete it to ask again)`,
    );
  });
});

describe('retention of VolumeSnapshots', () => {
  it('deletes every VolumeSnapshot of the backups the policy lets go, and nothing of another CronOperation', async () => {
    const ns = await createNamespace(kc, 'ret-snap');
    await create(raw, instanceObject(ns, 'shop'));
    const path = resourcePath({ ...SNAPSHOTS, namespace: ns });
    const now = Date.now();
    const snap = async (name: string, operation: string, hoursAgo: number, cron = 'nightly') =>
      withStatus(
        path,
        {
          apiVersion: 'snapshot.storage.k8s.io/v1',
          kind: 'VolumeSnapshot',
          metadata: {
            name,
            labels: { [LABEL_CRON_OPERATION]: cron, [LABEL_INSTANCE]: 'shop', [LABEL_OPERATION]: operation },
          },
          spec: { source: { persistentVolumeClaimName: 'data' } },
        } as KubernetesObject,
        { readyToUse: true, creationTime: iso(now - hoursAgo * HOUR) },
      );
    await snap('op1-data', 'op1', 3);
    await snap('op1-logs', 'op1', 3);
    await snap('op2-data', 'op2', 2);
    await snap('op3-data', 'op3', 1);
    await snap('weekly-data', 'weekly-op', 9, 'weekly');
    await startOperator('velero');
    await cronWithRetention(ns, {
      operationTemplate: { spec: { type: 'Backup', engine: 'snapshot', targetRef: { name: 'shop' } } },
      retention: { keepLast: 1, maxAge: '1000h' },
    });

    const left = async () =>
      (await raw.request<{ items: KubernetesObject[] }>({ method: 'GET', path })).items
        .map((s) => s.metadata?.name ?? '')
        .sort();
    await eventually('op1 and op2 deleted', async () => (await left()).length === 2);
    expect(await left()).toEqual(['op3-data', 'weekly-data']);
    // The status is written after the deletions.
    const { status } = await eventually('status.retention', async () => {
      const r = await retentionOf(ns);
      return r.status ? r : undefined;
    });
    expect(status?.deleted?.map((d) => `${d.instance}/${d.name}:${d.reason}`)).toEqual([
      'shop/op2:not-selected',
      'shop/op1:not-selected',
    ]);
  });

  it('says RetentionBlocked, deleting nothing, for a policy stored where the webhook did not run', async () => {
    const ns = await createNamespace(kc, 'ret-bad');
    await create(raw, instanceObject(ns, 'shop'));
    await startOperator('velero');
    // The schema accepts any string; the webhook (not running here) would refuse it at spec.retention.maxAge.
    await cronWithRetention(ns, { retention: { maxAge: '30d' } });
    const { condition } = await eventually('the condition', async () => {
      const r = await retentionOf(ns);
      return r.condition ? r : undefined;
    });
    expect(condition).toMatchObject({ status: 'False', reason: 'RetentionBlocked' });
    expect(condition?.message).toContain('spec.retention.maxAge');
    expect(condition?.message).toContain('720h');
  });
});
