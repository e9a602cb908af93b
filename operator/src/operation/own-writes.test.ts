import { describe, expect, it } from 'vitest';
import { findConflicts } from './conflicts.ts';
import { OwnWrites, withOwnWrites } from './own-writes.ts';
import { operation, withPhase } from './testing.ts';

// The Upgrade was created first and waited for its target's Ready; the Backup queued behind it.
const upgrade = operation(
  'upgrade',
  { type: 'Upgrade', engine: 'helm' },
  { created: '2025-01-01T00:00:00Z' },
);
const backup = operation('backup', { type: 'Backup' }, { created: '2025-01-01T00:01:00Z' });
const cached = [withPhase(upgrade, 'Blocked', 'TargetNotReady'), backup];
/** The controller just wrote the Upgrade's Running status; the watch event has not arrived yet. */
const running = withPhase(upgrade, 'Running').status!;

describe('withOwnWrites', () => {
  it('a conflict check on a lagging cache lets the Backup start beside the Upgrade (the race)', () => {
    expect(findConflicts(backup, cached)).toMatchObject({ running: [], ahead: [] });
  });

  it("with this replica's last status write laid over the cache, the Backup waits for the Upgrade", () => {
    const written = new Map([['upgrade', { uid: 'uid-upgrade', status: running }]]);
    const ops = withOwnWrites(cached, written);
    expect(findConflicts(backup, ops)).toMatchObject({ running: ['upgrade'], queuePosition: 1 });
  });

  it('keeps the cached object when it already shows the write, or belongs to another incarnation', () => {
    const caughtUp = [withPhase(upgrade, 'Running'), backup];
    expect(withOwnWrites(caughtUp, new Map([['upgrade', { uid: 'uid-upgrade', status: running }]]))[0]).toBe(
      caughtUp[0],
    );
    const recreated = new Map([['upgrade', { uid: 'uid-of-a-deleted-one', status: running }]]);
    expect(withOwnWrites(cached, recreated)).toEqual(cached);
  });
});

describe('withOwnWrites by resourceVersion', () => {
  const at = (o: typeof upgrade, resourceVersion: string) => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion },
  });
  const write = { uid: 'uid-upgrade', status: running, resourceVersion: '42' };

  it('lays the write over a cached object of another version, without reading its status', () => {
    const untouchable = new Proxy({} as NonNullable<typeof upgrade.status>, {
      get: () => {
        throw new Error('the cached status was read');
      },
      ownKeys: () => {
        throw new Error('the cached status was read');
      },
    });
    const stale = { ...at(cached[0]!, '41'), status: untouchable };
    const ops = withOwnWrites([stale, backup], new Map([['upgrade', write]]));
    expect(ops[0]?.status).toBe(running);
    expect(findConflicts(backup, ops)).toMatchObject({ running: ['upgrade'] });
  });

  it('keeps the cached object once it is the version the write returned', () => {
    const shown = at(withPhase(upgrade, 'Running'), '42');
    expect(withOwnWrites([shown, backup], new Map([['upgrade', write]]))[0]).toBe(shown);
  });

  it('OwnWrites forgets the write when the cache shows its version', () => {
    const w = new OwnWrites();
    const ns = upgrade.metadata.namespace ?? '';
    w.set(ns, 'upgrade', write);
    w.caughtUp(at(cached[0]!, '41'));
    expect(w.size).toBe(1);
    w.caughtUp(at(withPhase(upgrade, 'Running'), '42'));
    expect(w.size).toBe(0);
  });
});

describe('OwnWrites', () => {
  const ns = upgrade.metadata.namespace ?? '';
  const pendingUpgrade = () => {
    const w = new OwnWrites();
    w.set(ns, 'upgrade', { uid: upgrade.metadata.uid ?? '', status: running });
    return w;
  };

  it('lays a pending write over its namespace only', () => {
    const w = pendingUpgrade();
    expect(findConflicts(backup, w.overlay(ns, cached))).toMatchObject({ running: ['upgrade'] });
    // Another namespace has nothing pending: its list comes back as it is, not copied.
    expect(w.overlay('elsewhere', cached)).toBe(cached);
  });

  it('forgets a write once the cache shows it, or shows another incarnation, and not before', () => {
    const w = pendingUpgrade();
    w.caughtUp(withPhase(upgrade, 'Blocked', 'TargetNotReady'));
    expect(w.get(ns, 'upgrade')?.status).toBe(running);
    w.caughtUp(withPhase(upgrade, 'Running'));
    expect(w.get(ns, 'upgrade')).toBeUndefined();
    expect(w.size).toBe(0);
    expect(w.overlay(ns, cached)).toBe(cached);

    const again = pendingUpgrade();
    again.caughtUp({ ...upgrade, metadata: { ...upgrade.metadata, uid: 'uid-of-a-new-one' } });
    expect(again.size).toBe(0);
  });

  it('deleting the last write of a namespace leaves nothing pending', () => {
    const w = pendingUpgrade();
    w.delete(ns, 'upgrade');
    w.delete(ns, 'never-written');
    expect(w.size).toBe(0);
  });
});
