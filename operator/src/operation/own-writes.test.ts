import { describe, expect, it } from 'vitest';
import { findConflicts } from './conflicts.ts';
import { withOwnWrites } from './own-writes.ts';
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
    const written = new Map([['team/upgrade', { uid: 'uid-upgrade', status: running }]]);
    const ops = withOwnWrites(cached, written);
    expect(findConflicts(backup, ops)).toMatchObject({ running: ['upgrade'], queuePosition: 1 });
  });

  it('keeps the cached object when it already shows the write, or belongs to another incarnation', () => {
    const caughtUp = [withPhase(upgrade, 'Running'), backup];
    expect(
      withOwnWrites(caughtUp, new Map([['team/upgrade', { uid: 'uid-upgrade', status: running }]]))[0],
    ).toBe(caughtUp[0]);
    const recreated = new Map([['team/upgrade', { uid: 'uid-of-a-deleted-one', status: running }]]);
    expect(withOwnWrites(cached, recreated)).toEqual(cached);
  });
});
