import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type ApplicationInstance,
  LABEL_CRON_OPERATION,
  LABEL_INSTANCE,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
  MAX_RETENTION_DELETED,
  type Operation,
} from '../api/index.ts';
import {
  namesInUse,
  planRetention,
  type RetentionFacts,
  retentionStatus,
  snapshotUnits,
  veleroOutcome,
  veleroUnits,
} from './retention-units.ts';

const CRON = { name: 'nightly', namespace: 'team-a' };
const NOW = Date.parse('2026-03-10T12:00:00Z');
const hoursAgo = (h: number) => new Date(NOW - h * 3_600_000).toISOString();

function backup(
  name: string,
  completedHoursAgo: number | undefined,
  phase = 'Completed',
  labels: Record<string, string> = {},
): KubernetesObject {
  return {
    apiVersion: 'velero.io/v1',
    kind: 'Backup',
    metadata: {
      name,
      namespace: 'velero',
      uid: `uid-${name}`,
      labels: {
        [LABEL_CRON_OPERATION]: CRON.name,
        [LABEL_OPERATION_NAMESPACE]: CRON.namespace,
        [LABEL_INSTANCE]: 'shop',
        ...labels,
      },
    },
    status: {
      phase,
      ...(completedHoursAgo !== undefined ? { completionTimestamp: hoursAgo(completedHoursAgo) } : {}),
    },
  } as KubernetesObject;
}

function snapshot(
  name: string,
  operation: string,
  takenHoursAgo: number,
  extra: { ready?: boolean; owned?: boolean; error?: string; instance?: string } = {},
): KubernetesObject {
  return {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshot',
    metadata: {
      name,
      namespace: CRON.namespace,
      uid: `uid-${name}`,
      labels: {
        [LABEL_CRON_OPERATION]: CRON.name,
        [LABEL_INSTANCE]: extra.instance ?? 'shop',
        [LABEL_OPERATION]: operation,
      },
      ...(extra.owned
        ? {
            ownerReferences: [
              { apiVersion: 'ops.vworkspace.io/v1alpha1', kind: 'Operation', name: operation, uid: 'u' },
            ],
          }
        : {}),
    },
    status: {
      readyToUse: extra.ready ?? true,
      creationTime: hoursAgo(takenHoursAgo),
      ...(extra.error ? { error: { message: extra.error } } : {}),
    },
  } as KubernetesObject;
}

function instance(name: string, verifiedBackup?: string): ApplicationInstance {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: { name, namespace: CRON.namespace },
    spec: { appRef: { catalogId: 'shop' }, release: { name } },
    ...(verifiedBackup
      ? {
          status: {
            lastVerifiedBackup: {
              time: hoursAgo(1),
              operation: 'verify-1',
              backup: verifiedBackup,
              rtoSeconds: 30,
            },
          },
        }
      : {}),
  } as unknown as ApplicationInstance;
}

function operation(
  name: string,
  phase: string,
  parameters: Record<string, unknown>,
  outputs = {},
): Operation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, namespace: CRON.namespace },
    spec: { type: 'Restore', engine: 'velero', targetRef: { name: 'shop' }, parameters },
    status: { phase, outputs },
  } as unknown as Operation;
}

const facts = (over: Partial<RetentionFacts> = {}): RetentionFacts => ({
  instances: [instance('shop')],
  operations: [],
  now: NOW,
  ...over,
});

const names = (plan: ReturnType<typeof planRetention>) => plan.deletions.map((d) => d.unit.name);

describe('velero Backups as retention sees them', () => {
  it('maps phases: Completed succeeds, partial and failed fail, Deleting is not judged, the rest is in progress', () => {
    expect(veleroOutcome('Completed')).toBe('Succeeded');
    expect(veleroOutcome('PartiallyFailed')).toBe('PartiallyFailed');
    expect(veleroOutcome('FailedValidation')).toBe('Failed');
    expect(veleroOutcome('Deleting')).toBeUndefined();
    for (const p of [undefined, 'New', 'Queued', 'InProgress', 'Finalizing'])
      expect(veleroOutcome(p)).toBe('InProgress');
  });

  it('keepLast 2 over 5 backups deletes the 3 oldest, but never the newest verified one', () => {
    const backups = [1, 2, 3, 4, 5].map((i) => backup(`b${i}`, 10 - i));
    const { units } = veleroUnits(CRON, backups, facts({ instances: [instance('shop', 'b2')] }));
    const plan = planRetention({ keepLast: 2 }, units, facts());
    expect(names(plan).sort()).toEqual(['b1', 'b3']);
    expect(plan.kept).toBe(3);
    expect(plan.deletions.every((d) => d.reason === 'not-selected')).toBe(true);
  });

  it('judges only backups labelled with this CronOperation and made for its namespace', () => {
    const backups = [
      backup('mine-old', 5),
      backup('mine-new', 1),
      backup('other-cron', 9, 'Completed', { [LABEL_CRON_OPERATION]: 'weekly' }),
      backup('other-namespace', 9, 'Completed', { [LABEL_OPERATION_NAMESPACE]: 'team-b' }),
    ];
    const { units } = veleroUnits(CRON, backups, facts());
    expect(units.map((u) => u.name).sort()).toEqual(['mine-new', 'mine-old']);
    expect(names(planRetention({ keepLast: 0 }, units, facts()))).toEqual(['mine-old']);
  });

  it('keeps a backup a running Operation names, and forgets that once the Operation finished', () => {
    const backups = [backup('b1', 3), backup('b2', 2), backup('b3', 1)];
    const running = operation('restore-1', 'Running', { backupName: 'b1' });
    const inUse = veleroUnits(CRON, backups, facts({ operations: [running] })).units;
    expect(names(planRetention({ keepLast: 1 }, inUse, facts()))).toEqual(['b2']);
    const done = operation('restore-1', 'Succeeded', { backupName: 'b1' });
    const free = veleroUnits(CRON, backups, facts({ operations: [done] })).units;
    expect(names(planRetention({ keepLast: 1 }, free, facts())).sort()).toEqual(['b1', 'b2']);
  });

  it('counts a Backup being deleted without judging it, and keeps one in progress', () => {
    const backups = [
      backup('gone', 9, 'Deleting'),
      backup('old', 5),
      backup('running', undefined, 'InProgress'),
    ];
    const { units, deleting } = veleroUnits(CRON, backups, facts());
    expect(deleting).toBe(1);
    const plan = planRetention({ keepLast: 0 }, units, facts(), deleting);
    // "old" is the newest success: kept whatever keepLast says.
    expect(names(plan)).toEqual([]);
    expect(retentionStatus(plan, new Date(NOW))).toEqual({
      time: '2026-03-10T12:00:00Z',
      kept: 2,
      deleting: 1,
    });
  });

  it('applies the policy to each instance on its own', () => {
    const backups = [
      backup('a1', 4),
      backup('a2', 3),
      backup('b1', 2, 'Completed', { [LABEL_INSTANCE]: 'cart' }),
      backup('b2', 1, 'Completed', { [LABEL_INSTANCE]: 'cart' }),
    ];
    const { units } = veleroUnits(CRON, backups, facts());
    const plan = planRetention({ keepLast: 1 }, units, facts());
    expect(plan.deletions.map((d) => `${d.unit.instance}/${d.unit.name}`)).toEqual(['cart/b1', 'shop/a1']);
  });

  it('bounds the names in status and counts every deletion', () => {
    const backups = Array.from({ length: MAX_RETENTION_DELETED + 5 }, (_, i) => backup(`b${i}`, 100 - i));
    const { units } = veleroUnits(CRON, backups, facts());
    const status = retentionStatus(planRetention({ keepLast: 1 }, units, facts()), new Date(NOW));
    expect(status.deleting).toBe(MAX_RETENTION_DELETED + 4);
    expect(status.deleted).toHaveLength(MAX_RETENTION_DELETED);
  });
});

describe('VolumeSnapshots as retention sees them', () => {
  it('is one backup per snapshot Backup Operation, deleted with all its VolumeSnapshots', () => {
    const snaps = [
      snapshot('op1-data', 'op1', 3),
      snapshot('op1-logs', 'op1', 3),
      snapshot('op2-data', 'op2', 2),
      snapshot('op3-data', 'op3', 1),
    ];
    const { units } = snapshotUnits(CRON, snaps, facts());
    const plan = planRetention({ keepLast: 2 }, units, facts());
    expect(names(plan)).toEqual(['op1']);
    expect(plan.deletions[0]?.unit.objects.map((o) => o.metadata?.name).sort()).toEqual([
      'op1-data',
      'op1-logs',
    ]);
  });

  it('leaves sets still owned by their Operation or not ready alone, and keeps the verified one by a snapshot name', () => {
    const snaps = [
      snapshot('op0-data', 'op0', 5),
      snapshot('op1-data', 'op1', 4),
      snapshot('op2-data', 'op2', 3, { owned: true }),
      snapshot('op3-data', 'op3', 2, { ready: false }),
      snapshot('op4-data', 'op4', 1),
    ];
    const { units } = snapshotUnits(CRON, snaps, facts({ instances: [instance('shop', 'op0-data')] }));
    const plan = planRetention({ keepLast: 1 }, units, facts());
    expect(names(plan)).toEqual(['op1']);
  });

  it("does not judge a set one of whose snapshots is being deleted, nor another namespace's", () => {
    const deleting = snapshot('op1-data', 'op1', 3);
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: new Date(NOW) };
    const elsewhere = snapshot('op2-data', 'op2', 2);
    elsewhere.metadata = { ...elsewhere.metadata, namespace: 'team-b' };
    const { units, deleting: n } = snapshotUnits(
      CRON,
      [deleting, elsewhere, snapshot('op3-data', 'op3', 1)],
      facts(),
    );
    expect(units.map((u) => u.name)).toEqual(['op3']);
    expect(n).toBe(1);
  });
});

describe('names a running Operation reads', () => {
  it('takes parameter and output values, comma-separated lists and arrays, of unfinished Operations only', () => {
    const ops = [
      operation('r1', 'Running', { backupName: 'b1', list: ['x', 'y'] }, { snapshotNames: 's1, s2' }),
      operation('r2', 'Pending', { backupName: 'b2' }),
      operation('r3', 'Failed', { backupName: 'b3' }),
    ];
    expect([...namesInUse(ops)].sort()).toEqual(['b1', 'b2', 's1', 's2', 'x', 'y']);
  });
});
