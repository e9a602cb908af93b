// decideCron with spec.catchUp: which missed slots get Operations, what is recorded and said, and that
// deciding again (a restart that lost the status write) adopts instead of creating twice.
import { describe, expect, it } from 'vitest';
import { CronWorld, cronOp, HOUR, MIN, slotName } from '../../../test/support/builders/schedule.ts';
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_SKIP_NEXT } from '../api/index.ts';
import { CRON_EVENT, decideCron } from './cron-decide.ts';

/** Down from 00:30 to 05:50: the slots 01:00 … 05:00 were missed. */
function afterDowntime(w: CronWorld, runningSince: string) {
  w.reconcile();
  w.clock.advanceSync(5 * HOUR + 20 * MIN);
  return w.apply(decideCron(w.cron, w.ops, new Date(w.clock.now()), [], new Date(runningSince)));
}

describe('decideCron: spec.catchUp', () => {
  it('All runs the most recent maxRuns missed slots, oldest first, with their scheduled times', () => {
    const w = new CronWorld(cronOp({ catchUp: { policy: 'All', maxRuns: 3 } }), '2025-06-01T00:30:00Z');
    const plan = afterDowntime(w, '2025-06-01T05:50:00Z');
    const slots = ['03:00', '04:00', '05:00'].map((h) => `2025-06-01T${h}:00Z`);
    expect(plan.create.map((o) => o.metadata.name)).toEqual(slots.map(slotName));
    expect(plan.create.map((o) => o.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME])).toEqual(slots);
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T05:00:00Z');
    expect(w.cron.status?.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual([
      ['2025-06-01T01:00:00Z', 'CatchUpSkipped'],
      ['2025-06-01T02:00:00Z', 'CatchUpSkipped'],
    ]);
    expect(plan.skippedSlots).toBe(2);
    expect(plan.events.filter((e) => e.reason === CRON_EVENT.CatchUpSkipped)).toEqual([
      {
        type: 'Normal',
        reason: CRON_EVENT.CatchUpSkipped,
        note: '2 slots missed while the operator was not running did not run (spec.catchUp.policy All, maxRuns 3); the latest: 2025-06-01T01:00:00Z, 2025-06-01T02:00:00Z; kubectl vws backfill runs past slots',
      },
    ]);
  });

  it('All decided again from the old status (the status write was lost) adopts: nothing is created twice', () => {
    const w = new CronWorld(cronOp({ catchUp: { policy: 'All', maxRuns: 3 } }), '2025-06-01T00:30:00Z');
    w.reconcile();
    const before = w.cron.status;
    w.clock.advanceSync(5 * HOUR + 20 * MIN);
    const first = w.apply(decideCron(w.cron, w.ops, new Date(w.clock.now()), [], new Date(w.clock.now())));
    expect(first.create).toHaveLength(3);
    w.cron.status = before; // lost
    const again = decideCron(w.cron, w.ops, new Date(w.clock.now() + MIN), [], new Date(w.clock.now()));
    expect(again.create).toEqual([]);
    expect(again.status.lastScheduleTime).toBe('2025-06-01T05:00:00Z');
  });

  it('skip-next consumes the first catch-up slot only', () => {
    const w = new CronWorld(
      cronOp({ catchUp: { policy: 'All', maxRuns: 2 } }, { [ANNOTATION_SKIP_NEXT]: 'true' }),
      '2025-06-01T00:30:00Z',
    );
    w.clock.advanceSync(5 * HOUR + 20 * MIN);
    const plan = w.apply(decideCron(w.cron, w.ops, new Date(w.clock.now()), [], new Date(w.clock.now())));
    expect(plan.removeSkipNext).toBe(true);
    expect(plan.create.map((o) => o.metadata.name)).toEqual([slotName('2025-06-01T05:00:00Z')]);
  });

  it('Skip runs none of the slots due before the operator started, and records them', () => {
    const w = new CronWorld(cronOp({ catchUp: { policy: 'Skip' } }), '2025-06-01T00:30:00Z');
    const plan = afterDowntime(w, '2025-06-01T05:50:00Z');
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.missedSlots).toHaveLength(5);
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T05:00:00Z');
    // The next slot, due while it runs, runs.
    w.clock.advanceSync(10 * MIN);
    const next = w.apply(
      decideCron(w.cron, w.ops, new Date(w.clock.now()), [], new Date('2025-06-01T05:50:00Z')),
    );
    expect(next.create.map((o) => o.metadata.name)).toEqual([slotName('2025-06-01T06:00:00Z')]);
  });

  it('Skip runs a slot that came due after the operator started even when the reconcile is late', () => {
    const w = new CronWorld(cronOp({ catchUp: { policy: 'Skip' } }), '2025-06-01T00:30:00Z');
    const plan = afterDowntime(w, '2025-06-01T04:30:00Z');
    expect(plan.create.map((o) => o.metadata.name)).toEqual([slotName('2025-06-01T05:00:00Z')]);
  });

  it('startingDeadlineSeconds still applies under All; the late slots are a Warning', () => {
    const w = new CronWorld(
      cronOp({ catchUp: { policy: 'All', maxRuns: 10 }, startingDeadlineSeconds: 2 * 3600 }),
      '2025-06-01T00:30:00Z',
    );
    const plan = afterDowntime(w, '2025-06-01T05:50:00Z');
    expect(plan.create.map((o) => o.metadata.name)).toEqual(
      ['04:00', '05:00'].map((h) => slotName(`2025-06-01T${h}:00Z`)),
    );
    expect(w.cron.status?.missedSlots?.map((m) => m.reason)).toEqual([
      'StartingDeadlineExceeded',
      'StartingDeadlineExceeded',
      'StartingDeadlineExceeded',
    ]);
    expect(plan.events.find((e) => e.reason === CRON_EVENT.MissedSchedule)?.type).toBe('Warning');
  });

  it('Latest (explicit) is the default behaviour: only the most recent slot', () => {
    const w = new CronWorld(cronOp({ catchUp: { policy: 'Latest' } }), '2025-06-01T00:30:00Z');
    const plan = afterDowntime(w, '2025-06-01T05:50:00Z');
    expect(plan.create.map((o) => o.metadata.name)).toEqual([slotName('2025-06-01T05:00:00Z')]);
    expect(w.cron.status?.missedSlots).toBeUndefined();
  });
});
