import { describe, expect, it } from 'vitest';
import { anInput, materialized, withStatus } from '../../../test/support/builders/engines.ts';
import { ANNOTATION_PVC, NAME_LIMITS } from './names.ts';
import { manualTrigger, volsyncAdapter } from './volsync.ts';

const PVCS = ['nextcloud-data', 'nextcloud-db'];
/** One restic repository Secret per claim (claims must not share one): restic-<last word>. */
const perClaim = (pvcs: readonly string[]) =>
  pvcs.length === 0
    ? 'restic-repo'
    : Object.fromEntries(pvcs.map((p) => [p, `restic-${p.split('-').pop()}`]));
const REPOSITORIES = perClaim(PVCS);
const backup = (o: { pvcs?: string[]; attempt?: number; parameters?: Record<string, unknown> } = {}) =>
  anInput({
    name: 'vs-backup',
    type: 'Backup',
    engine: 'volsync',
    parameters: o.parameters ?? { repository: perClaim(o.pvcs ?? PVCS), retain: { daily: 7 } },
    env: { pvcs: o.pvcs ?? PVCS },
    attempt: o.attempt ?? 1,
  });
const restore = () =>
  anInput({
    name: 'vs-restore',
    type: 'Restore',
    engine: 'volsync',
    parameters: { repository: REPOSITORIES, previous: 1 },
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
        restic: { repository: 'restic-data', copyMethod: 'Snapshot', retain: { daily: 7 } },
      },
    });
    expect(new Set(children.map((c) => c.metadata.name)).size).toBe(2);
    for (const c of children) expect(c.metadata.name.length).toBeLessThanOrEqual(NAME_LIMITS.volsync);
  });

  it("keeps every restic snapshot unless parameters.retain chooses (VolSync's default forgets all but the last)", () => {
    const [c] = materialized(
      volsyncAdapter.materialize(
        backup({ pvcs: ['nextcloud-data'], parameters: { repository: 'restic-repo' } }),
      ),
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
          repository: 'restic-data',
          destinationPVC: 'nextcloud-data',
          copyMethod: 'Direct',
          previous: 1,
        },
      },
    });
    expect(d?.spec).not.toHaveProperty('sourcePVC');
  });

  it("gives each claim its own restic repository: claims sharing one would restore each other's data", () => {
    // The release has two claims; one repository Secret for both is refused for Backup and Restore.
    const shared = { repository: 'restic-repo' };
    for (const type of ['Backup', 'Restore'] as const) {
      const r = volsyncAdapter.materialize(
        anInput({ name: 'vs', type, engine: 'volsync', parameters: shared, env: { pvcs: PVCS } }),
      );
      expect(r).toMatchObject({ ok: false, reason: 'InvalidParameters' });
      expect(!r.ok && r.message).toContain(
        'the release has 2 claims (nextcloud-data, nextcloud-db) and parameters.repository names one restic repository Secret (restic-repo) for all',
      );
      expect(!r.ok && r.message).toContain(
        'parameters.repository: {nextcloud-data: <Secret>, nextcloud-db: <Secret>}',
      );
    }
    const repositoriesOf = (type: 'Backup' | 'Restore', parameters: Record<string, unknown>) =>
      materialized(
        volsyncAdapter.materialize(
          anInput({ name: 'vs', type, engine: 'volsync', parameters, env: { pvcs: PVCS } }),
        ),
      ).map((c) => [
        c.metadata.annotations?.[ANNOTATION_PVC],
        (c.spec as { restic: { repository: string } }).restic.repository,
      ]);
    const mapped = { repository: { 'nextcloud-data': 'repo-data', 'nextcloud-db': 'repo-db' } };
    const expected = [
      ['nextcloud-data', 'repo-data'],
      ['nextcloud-db', 'repo-db'],
    ];
    expect(repositoriesOf('Backup', mapped)).toEqual(expected);
    expect(repositoriesOf('Restore', mapped)).toEqual(expected);
  });

  it.each([
    [{ 'nextcloud-data': 'repo-data' }, 'has no restic repository Secret for claim(s) nextcloud-db'],
    [
      { 'nextcloud-dta': 'x', 'nextcloud-db': 'y' },
      'parameters.repository names nextcloud-dta, not a claim of the release (its claims: nextcloud-data, nextcloud-db)',
    ],
    [
      { 'nextcloud-data': 'same', 'nextcloud-db': 'same' },
      'claims nextcloud-data, nextcloud-db would share the restic repository Secret same',
    ],
  ])(
    'refuses a per-claim map that leaves a claim out, names another or shares: %j',
    (repository, message) => {
      const r = volsyncAdapter.materialize(backup({ parameters: { repository } }));
      expect(r).toMatchObject({ ok: false, reason: 'InvalidParameters' });
      expect(!r.ok && r.message).toContain(message);
    },
  );

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
