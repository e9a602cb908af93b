import { describe, expect, it } from 'vitest';
import { ANNOTATION_PVC, NAME_LIMITS } from './names.ts';
import { anInput, materialized, withStatus } from './testing.ts';
import { manualTrigger, volsyncAdapter } from './volsync.ts';

const PVCS = ['nextcloud-data', 'nextcloud-db'];
const backup = (o: { pvcs?: string[]; attempt?: number; parameters?: Record<string, unknown> } = {}) =>
  anInput({
    name: 'vs-backup',
    type: 'Backup',
    engine: 'volsync',
    parameters: o.parameters ?? { repository: 'restic-repo', retain: { daily: 7 } },
    env: { pvcs: o.pvcs ?? PVCS },
    attempt: o.attempt ?? 1,
  });
const restore = () =>
  anInput({
    name: 'vs-restore',
    type: 'Restore',
    engine: 'volsync',
    parameters: { repository: 'restic-repo', previous: 1 },
    env: { pvcs: PVCS },
  });

function synced(children = materialized(volsyncAdapter.materialize(backup())), done: number) {
  return children.map((c, i) => {
    const trigger = (c.spec as { trigger: { manual: string } }).trigger.manual;
    return withStatus(c, i < done ? { lastManualSync: trigger } : {});
  });
}

describe('volsync materialize', () => {
  it('creates one ReplicationSource per PVC with a restic mover and the attempt-qualified manual trigger', () => {
    const children = materialized(
      volsyncAdapter.materialize(backup({ pvcs: ['nextcloud-db', 'nextcloud-data'] })),
    );
    expect(children).toHaveLength(2);
    expect(children.map((c) => c.metadata.annotations?.[ANNOTATION_PVC])).toEqual(PVCS);
    expect(children[0]).toMatchObject({
      apiVersion: 'volsync.backube/v1alpha1',
      kind: 'ReplicationSource',
      metadata: { namespace: 'team-a', ownerReferences: [{ kind: 'Operation' }] },
      spec: {
        sourcePVC: 'nextcloud-data',
        trigger: { manual: manualTrigger('vs-backup', 1) },
        restic: { repository: 'restic-repo', copyMethod: 'Snapshot', retain: { daily: 7 } },
      },
    });
    expect(new Set(children.map((c) => c.metadata.name)).size).toBe(2);
    for (const c of children) expect(c.metadata.name.length).toBeLessThanOrEqual(NAME_LIMITS.volsync);
  });

  it("keeps every restic snapshot unless parameters.retain chooses (VolSync's default forgets all but the last)", () => {
    const [c] = materialized(
      volsyncAdapter.materialize(backup({ parameters: { repository: 'restic-repo' } })),
    );
    expect((c?.spec as { restic: { retain: unknown } }).restic.retain).toEqual({ last: 'unlimited' });
  });

  it('uses a new trigger and new names on a retry', () => {
    const [a] = materialized(volsyncAdapter.materialize(backup()));
    const [b] = materialized(volsyncAdapter.materialize(backup({ attempt: 2 })));
    expect(b?.metadata.name).not.toBe(a?.metadata.name);
    expect((b?.spec as { trigger: { manual: string } }).trigger.manual).toBe('vs-backup-2');
  });

  it('restores each PVC in place with a ReplicationDestination', () => {
    const [d] = materialized(volsyncAdapter.materialize(restore()));
    expect(d).toMatchObject({
      kind: 'ReplicationDestination',
      spec: {
        trigger: { manual: 'vs-restore-1' },
        restic: {
          repository: 'restic-repo',
          destinationPVC: 'nextcloud-data',
          copyMethod: 'Direct',
          previous: 1,
        },
      },
    });
    expect(d?.spec).not.toHaveProperty('sourcePVC');
  });

  it('supports an rsync-tls mover when a catalog template offers it', () => {
    const i = backup();
    const [s] = materialized(
      volsyncAdapter.materialize({
        ...i,
        parameters: { method: 'rsync-tls', address: 'dr.example.com', keySecret: 'tls-psk', port: 8000 },
      }),
    );
    expect(s?.spec).toMatchObject({
      rsyncTLS: { address: 'dr.example.com', keySecret: 'tls-psk', port: 8000 },
    });
    expect(s?.spec).not.toHaveProperty('restic');
  });

  it('fails clearly when the release has no PVC', () => {
    const r = volsyncAdapter.materialize(backup({ pvcs: [] }));
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!r.ok) expect(r.message).toContain('app.kubernetes.io/instance=nextcloud-team-a');
  });
});

describe('volsync observe', () => {
  it('is in progress until every lastManualSync equals its trigger', () => {
    const none = volsyncAdapter.observe(synced(undefined, 0), backup());
    expect(none).toMatchObject({ phase: 'Running', reason: 'VolSyncSyncInProgress' });
    const half = volsyncAdapter.observe(synced(undefined, 1), backup());
    expect(half).toMatchObject({ phase: 'Running', reason: 'VolSyncSyncInProgress' });
    expect(half.message).toContain('1/2');
    const all = volsyncAdapter.observe(synced(undefined, 2), backup());
    expect(all).toMatchObject({ phase: 'Succeeded', reason: 'VolSyncSyncCompleted' });
    expect(all.outputs?.replicationSources?.split(',')).toHaveLength(2);
  });

  it('does not take an older sync for this one', () => {
    const [c] = materialized(volsyncAdapter.materialize(backup({ pvcs: ['x'] })));
    if (!c) throw new Error('no child');
    expect(volsyncAdapter.observe([withStatus(c, { lastManualSync: 'vs-backup-0' })], backup()).phase).toBe(
      'Running',
    );
  });

  it('fails with the mover result when a sync failed', () => {
    const [c] = materialized(volsyncAdapter.materialize(backup({ pvcs: ['x'] })));
    if (!c) throw new Error('no child');
    const o = volsyncAdapter.observe(
      [withStatus(c, { latestMoverStatus: { result: 'Failed', logs: 'starting\nFatal: wrong password\n' } })],
      backup(),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'VolSyncSyncFailed', retryable: true });
    expect(o.message).toContain('Fatal: wrong password');
  });

  it('says the last line of the mover log as VolSync records it (restic mover, wrong password)', () => {
    // The log of VolSync v0.14.0's restic mover (entry.sh) after a wrong RESTIC_PASSWORD, as the real node
    // journey (test/e2e/engines/volsync.ts) saw it; VolSync copies a failed pod's lines into the status.
    const logs = [
      'Starting container',
      'VolSync restic container version: unknown',
      'backup',
      'restic 0.18.0 compiled with go1.26.8 on linux/amd64',
      'Testing mandatory env variables',
      '== Checking directory for content ===',
      '=== Check for dir initialized ===',
      'Fatal: wrong password or no key found',
      'ERROR: failure connecting to repository, incorrect password',
      '',
    ].join('\n');
    const [c] = materialized(volsyncAdapter.materialize(backup({ pvcs: ['data'] })));
    if (!c) throw new Error('no child');
    const o = volsyncAdapter.observe(
      [withStatus(c, { latestMoverStatus: { result: 'Failed', logs } })],
      backup(),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'VolSyncSyncFailed' });
    expect(o.message).toMatch(
      /\(PVC data\) failed to sync: ERROR: failure connecting to repository, incorrect password; see the mover Job's logs$/,
    );
  });

  it('cancels by deleting every child in the background (VolSync recreates dependents a foreground deletion waits for)', () => {
    const actions = volsyncAdapter.cancel(synced(undefined, 0));
    expect(actions).toHaveLength(2);
    for (const a of actions) expect(a).toMatchObject({ kind: 'delete', propagationPolicy: 'Background' });
  });
});
