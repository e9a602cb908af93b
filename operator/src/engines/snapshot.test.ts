import { describe, expect, it } from 'vitest';
import { anInput, materialized, withStatus } from '../../../test/support/builders/engines.ts';
import { snapshotAdapter } from './snapshot.ts';

const input = (
  pvcs: string[] = ['data', 'db'],
  parameters: Record<string, unknown> = { volumeSnapshotClassName: 'csi-hostpath' },
) => anInput({ name: 'snap', type: 'Backup', engine: 'snapshot', parameters, env: { pvcs } });

const snaps = (...statuses: Record<string, unknown>[]) =>
  materialized(snapshotAdapter.materialize(input())).map((c, i) => withStatus(c, statuses[i] ?? {}));

/** The snapshots as they are once the release patch was applied (no owner reference). */
const released = (...statuses: Record<string, unknown>[]) =>
  snaps(...statuses).map((c) => {
    const { ownerReferences: _gone, ...metadata } = c.metadata ?? {};
    return { ...c, metadata };
  });

describe('snapshot materialize', () => {
  it("labels the snapshots of a CronOperation's run with it, from the owner reference, for its retention", () => {
    const scheduled = input();
    scheduled.op.metadata.ownerReferences = [
      {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'CronOperation',
        name: 'nightly',
        uid: 'c1',
        controller: true,
      },
    ];
    // A label on the Operation is the tenant's to write: it is not what the backup is labelled from.
    scheduled.op.metadata.labels = { 'ops.vworkspace.io/cron-operation': 'forged' };
    for (const c of materialized(snapshotAdapter.materialize(scheduled)))
      expect(c.metadata.labels?.['ops.vworkspace.io/cron-operation']).toBe('nightly');
    for (const c of materialized(snapshotAdapter.materialize(input())))
      expect(c.metadata.labels).not.toHaveProperty(['ops.vworkspace.io/cron-operation']);
  });

  it('creates one VolumeSnapshot per PVC, with the class from the parameters', () => {
    const children = materialized(snapshotAdapter.materialize(input()));
    expect(children.map((c) => (c.spec as { source: unknown }).source)).toEqual([
      { persistentVolumeClaimName: 'data' },
      { persistentVolumeClaimName: 'db' },
    ]);
    expect(children[0]).toMatchObject({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: {
        namespace: 'team-a',
        ownerReferences: [{ kind: 'Operation', name: 'snap', controller: true, blockOwnerDeletion: true }],
        // Whose backup it is, once it no longer has an owner.
        labels: {
          'ops.vworkspace.io/operation': 'snap',
          'ops.vworkspace.io/operation-uid': '0a1b2c3d-0000-4000-8000-000000000001',
          'ops.vworkspace.io/instance': 'nextcloud',
        },
      },
      spec: { volumeSnapshotClassName: 'csi-hostpath' },
    });
  });

  it("leaves the class to the driver's default when unset", () => {
    const [c] = materialized(snapshotAdapter.materialize(input(['data'], {})));
    expect(c?.spec).not.toHaveProperty('volumeSnapshotClassName');
  });

  it('fails clearly without PVCs', () => {
    expect(snapshotAdapter.materialize(input([]))).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
  });
});

describe('snapshot observe', () => {
  it('releases the snapshots from the Operation once every one is readyToUse, before it succeeds', () => {
    const children = snaps({ readyToUse: true }, { readyToUse: true });
    const o = snapshotAdapter.observe(children, input());
    expect(o).toMatchObject({ phase: 'Running', reason: 'VolumeSnapshotInProgress' });
    expect(o.message).toContain('releasing');
    expect(o.actions?.map((a) => a.kind === 'patch' && [a.child.metadata.name, a.patch])).toEqual(
      children
        .map((c) => [c.metadata?.name, { metadata: { ownerReferences: null } }])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  });

  it('does not release part of a set: a snapshot still being cut keeps every one owned', () => {
    const o = snapshotAdapter.observe(snaps({ readyToUse: true }, { readyToUse: false }), input());
    expect(o.actions).toBeUndefined();
  });

  it('succeeds when every snapshot is readyToUse and released, with their names as outputs', () => {
    const children = released({ readyToUse: true }, { readyToUse: true });
    const o = snapshotAdapter.observe(children, input());
    expect(o).toMatchObject({ phase: 'Succeeded', reason: 'VolumeSnapshotReadyToUse' });
    expect(o.outputs?.snapshotNames).toBe(children.map((c) => c.metadata?.name).join(','));
    expect(o.outputs?.['snapshot.db']).toBe(children[1]?.metadata?.name);
  });

  it('is in progress while one is not ready', () => {
    expect(
      snapshotAdapter.observe(snaps({ readyToUse: true }, { readyToUse: false }), input()),
    ).toMatchObject({
      phase: 'Running',
      reason: 'VolumeSnapshotInProgress',
    });
  });

  it('fails with the error message of a snapshot', () => {
    const o = snapshotAdapter.observe(
      snaps({ readyToUse: true }, { error: { message: 'driver timeout' } }),
      input(),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'VolumeSnapshotFailed' });
    expect(o.message).toContain('driver timeout');
  });

  it('cancels by deleting the snapshots', () => {
    expect(snapshotAdapter.cancel(snaps())).toMatchObject([{ kind: 'delete' }, { kind: 'delete' }]);
  });
});
