import { describe, expect, it } from 'vitest';
import { parseSchedule, type Schedule } from '../time/cron.ts';
import {
  decideRun,
  latestFiring,
  MISSED_COUNT_CAP,
  mostRecentMissed,
  nextRuns,
  operationNameForSlot,
  type RunInput,
} from './slots.ts';

const at = (iso: string) => new Date(iso);

/** A CronOperation's scheduling inputs, hourly in UTC, created at midnight, unless overridden. */
function run(overrides: Partial<RunInput> = {}): RunInput {
  return {
    schedule: '0 * * * *',
    timeZone: 'UTC',
    creationTime: at('2025-06-01T00:00:00Z'),
    now: at('2025-06-01T00:00:00Z'),
    ...overrides,
  };
}

/** Wraps a schedule to count next() calls. */
function counting(s: Schedule): { schedule: Schedule; calls: () => number } {
  let calls = 0;
  return {
    schedule: {
      expr: s.expr,
      timeZone: s.timeZone,
      kind: s.kind,
      next: (after) => {
        calls++;
        return s.next(after);
      },
    },
    calls: () => calls,
  };
}

describe('mostRecentMissed', () => {
  it('nothing due yet', () => {
    expect(
      mostRecentMissed('0 * * * *', 'UTC', at('2025-06-01T10:00:00Z'), at('2025-06-01T10:59:59Z')),
    ).toEqual({
      missedCount: 0,
      tooMany: false,
    });
  });

  it('counts the slots in (since, now] and returns the latest', () => {
    expect(
      mostRecentMissed('0 * * * *', 'UTC', at('2025-06-01T10:00:00Z'), at('2025-06-01T15:00:00Z')),
    ).toEqual({
      slot: at('2025-06-01T15:00:00Z'),
      missedCount: 5,
      tooMany: false,
    });
  });

  it('caps the count after a long outage, still finds the latest slot, and does bounded work', () => {
    const { schedule, calls } = counting(parseSchedule('* * * * *', 'UTC'));
    const m = mostRecentMissed(schedule, undefined, at('2025-01-01T00:00:00Z'), at('2025-06-01T12:34:56Z'));
    expect(m).toEqual({ slot: at('2025-06-01T12:34:00Z'), missedCount: MISSED_COUNT_CAP, tooMany: true });
    // ~217,000 minutes were missed; enumerating them is what must not happen.
    expect(calls()).toBeLessThan(3 * MISSED_COUNT_CAP);
  });

  it('exactly the cap is not "too many"', () => {
    const m = mostRecentMissed('* * * * *', 'UTC', at('2025-06-01T00:00:00Z'), at('2025-06-01T01:40:00Z'));
    expect(m).toEqual({ slot: at('2025-06-01T01:40:00Z'), missedCount: 100, tooMany: false });
    expect(
      mostRecentMissed('* * * * *', 'UTC', at('2025-06-01T00:00:00Z'), at('2025-06-01T01:41:00Z')),
    ).toEqual({
      slot: at('2025-06-01T01:41:00Z'),
      missedCount: MISSED_COUNT_CAP,
      tooMany: true,
    });
  });
});

describe('latestFiring', () => {
  it('finds a sparse schedule years back', () => {
    const s = parseSchedule('0 12 29 2 *', 'UTC');
    expect(latestFiring(s, at('2010-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'))).toEqual(
      at('2024-02-29T12:00:00Z'),
    );
    expect(latestFiring(s, at('2024-02-29T12:00:00Z'), at('2027-01-01T00:00:00Z'))).toBeUndefined();
  });

  it('is bounded for a burst-y schedule far behind', () => {
    // Every minute on the 1st of the month; "now" is on the 2nd, so the last firing is 23:59 on the 1st.
    const { schedule, calls } = counting(parseSchedule('* * 1 * *', 'UTC'));
    expect(latestFiring(schedule, at('2020-01-01T00:00:00Z'), at('2025-06-02T00:30:00Z'))).toEqual(
      at('2025-06-01T23:59:00Z'),
    );
    expect(calls()).toBeLessThan(200);
  });
});

describe('decideRun', () => {
  it('before the first slot: wait for it', () => {
    const d = decideRun(run({ now: at('2025-06-01T00:20:00Z') }));
    expect(d).toEqual({
      skippedCount: 0,
      tooManyMissed: false,
      next: at('2025-06-01T01:00:00Z'),
      requeueAfterMs: 40 * 60_000,
    });
  });

  it('at the slot: run it', () => {
    const d = decideRun(run({ now: at('2025-06-01T01:00:00Z') }));
    expect(d.runSlot).toEqual(at('2025-06-01T01:00:00Z'));
    expect(d.next).toEqual(at('2025-06-01T02:00:00Z'));
  });

  it('after downtime: only the most recent missed slot runs, never a burst', () => {
    const d = decideRun(
      run({ lastScheduleTime: at('2025-06-01T10:00:00Z'), now: at('2025-06-01T15:30:00Z') }),
    );
    expect(d).toEqual({
      runSlot: at('2025-06-01T15:00:00Z'),
      skippedCount: 4,
      tooManyMissed: false,
      next: at('2025-06-01T16:00:00Z'),
      requeueAfterMs: 30 * 60_000,
    });
  });

  it('a slot missed past the deadline is reported, not run, and the schedule moves on', () => {
    const input = run({
      lastScheduleTime: at('2025-06-01T10:00:00Z'),
      now: at('2025-06-01T15:30:00Z'),
      startingDeadlineSeconds: 600,
    });
    const d = decideRun(input);
    expect(d.runSlot).toBeUndefined();
    expect(d.missedPastDeadline).toEqual(at('2025-06-01T15:00:00Z'));
    expect(d.next).toEqual(at('2025-06-01T16:00:00Z'));
    // The reconciler records the miss as lastScheduleTime; the next slot then runs on time.
    const later = decideRun({
      ...input,
      lastScheduleTime: d.missedPastDeadline,
      now: at('2025-06-01T16:00:05Z'),
    });
    expect(later.runSlot).toEqual(at('2025-06-01T16:00:00Z'));
    expect(later.missedPastDeadline).toBeUndefined();
  });

  it('never stalls on an old miss, even if lastScheduleTime was never advanced (the Crossplane bug)', () => {
    const d = decideRun(
      run({
        lastScheduleTime: at('2025-06-01T10:00:00Z'),
        now: at('2025-06-03T09:00:30Z'),
        startingDeadlineSeconds: 60,
      }),
    );
    expect(d.runSlot).toEqual(at('2025-06-03T09:00:00Z'));
  });

  it('the deadline boundary is inclusive', () => {
    const input = run({ lastScheduleTime: at('2025-06-01T00:00:00Z'), startingDeadlineSeconds: 60 });
    expect(decideRun({ ...input, now: at('2025-06-01T01:01:00Z') }).runSlot).toEqual(
      at('2025-06-01T01:00:00Z'),
    );
    expect(decideRun({ ...input, now: at('2025-06-01T01:01:00.001Z') }).missedPastDeadline).toEqual(
      at('2025-06-01T01:00:00Z'),
    );
  });

  it('is idempotent across restarts: same status, same answer; after recording the slot, nothing to run', () => {
    const input = run({ lastScheduleTime: at('2025-06-01T10:00:00Z'), now: at('2025-06-01T11:00:07Z') });
    const first = decideRun(input);
    expect(decideRun({ ...input })).toEqual(first);
    expect(operationNameForSlot('nightly', first.runSlot!)).toBe(
      operationNameForSlot('nightly', first.runSlot!),
    );
    const after = decideRun({ ...input, lastScheduleTime: first.runSlot, now: at('2025-06-01T11:00:09Z') });
    expect(after.runSlot).toBeUndefined();
    expect(after.next).toEqual(at('2025-06-01T12:00:00Z'));
  });

  it('a clock behind lastScheduleTime does not schedule that slot again', () => {
    const d = decideRun(
      run({ lastScheduleTime: at('2025-06-01T12:00:00Z'), now: at('2025-06-01T11:59:50Z') }),
    );
    expect(d.runSlot).toBeUndefined();
    expect(d.next).toEqual(at('2025-06-01T13:00:00Z'));
    expect(d.requeueAfterMs).toBe(60 * 60_000 + 10_000);
  });

  it('reports too many missed after a long outage', () => {
    const d = decideRun(run({ schedule: '*/5 * * * *', now: at('2025-06-03T00:02:00Z') }));
    expect(d).toMatchObject({ runSlot: at('2025-06-03T00:00:00Z'), tooManyMissed: true });
  });

  it('follows the DST policy: the gap slot runs when the gap ends', () => {
    const d = decideRun({
      schedule: '30 2 * * *',
      timeZone: 'America/New_York',
      creationTime: at('2025-03-01T00:00:00Z'),
      lastScheduleTime: at('2025-03-08T07:30:00Z'), // 02:30 EST
      now: at('2025-03-09T07:00:30Z'), // 03:00:30 EDT
    });
    expect(d.runSlot).toEqual(at('2025-03-09T07:00:00Z'));
    expect(d.next).toEqual(at('2025-03-10T06:30:00Z'));
  });

  it('throws on an invalid schedule (the webhook should have refused it)', () => {
    expect(() => decideRun(run({ schedule: '0 0 0 * * *' }))).toThrow(/6 fields/);
  });
});

describe('operationNameForSlot', () => {
  const slot = at('2025-06-01T02:00:00Z'); // 29145720 minutes since the epoch

  it('is <name>-<unix minutes>', () => {
    expect(operationNameForSlot('nightly-backup', slot)).toBe('nightly-backup-29145720');
    expect(operationNameForSlot('x', at('2025-06-01T02:00:59.999Z'))).toBe('x-29145720');
  });

  it('keeps names that fit exactly', () => {
    const name = 'a'.repeat(54);
    expect(operationNameForSlot(name, slot)).toBe(`${name}-29145720`);
    expect(operationNameForSlot(name, slot)).toHaveLength(63);
  });

  it('cuts long names to 63 characters, deterministically, without collisions or a dangling dash', () => {
    const a = `${'very-long-cron-operation-name-'.repeat(2)}nightly-a`;
    const b = `${'very-long-cron-operation-name-'.repeat(2)}nightly-b`;
    const na = operationNameForSlot(a, slot);
    const nb = operationNameForSlot(b, slot);
    expect(na.length).toBeLessThanOrEqual(63);
    expect(nb.length).toBeLessThanOrEqual(63);
    expect(na).not.toBe(nb);
    expect(operationNameForSlot(a, slot)).toBe(na);
    expect(na).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(na).toMatch(/^very-long-cron-operation-name-very-long-cron-[0-9a-f]{8}-29145720$/);
    expect(na.endsWith('-29145720')).toBe(true);
  });
});

describe('nextRuns', () => {
  it('previews five runs in UTC and local time, flagging DST-affected ones (New York, autumn)', () => {
    expect(nextRuns('30 1 * * *', 'America/New_York', at('2025-10-31T12:00:00Z'))).toEqual([
      { utc: '2025-11-01T05:30:00.000Z', local: '2025-11-01T01:30:00-04:00', dstShifted: false },
      { utc: '2025-11-02T05:30:00.000Z', local: '2025-11-02T01:30:00-04:00', dstShifted: true },
      { utc: '2025-11-03T06:30:00.000Z', local: '2025-11-03T01:30:00-05:00', dstShifted: false },
      { utc: '2025-11-04T06:30:00.000Z', local: '2025-11-04T01:30:00-05:00', dstShifted: false },
      { utc: '2025-11-05T06:30:00.000Z', local: '2025-11-05T01:30:00-05:00', dstShifted: false },
    ]);
  });

  it('shows a gap run at the time it really happens', () => {
    expect(nextRuns('30 2 * * *', 'America/New_York', at('2025-03-08T12:00:00Z'), 2)).toEqual([
      { utc: '2025-03-09T07:00:00.000Z', local: '2025-03-09T03:00:00-04:00', dstShifted: true },
      { utc: '2025-03-10T06:30:00.000Z', local: '2025-03-10T02:30:00-04:00', dstShifted: false },
    ]);
  });

  it('flags both copies of a repeated hour for interval schedules; half-hour and UTC offsets format', () => {
    expect(nextRuns('45 * * * *', 'Australia/Lord_Howe', at('2025-04-05T14:00:00Z'), 3)).toEqual([
      { utc: '2025-04-05T14:45:00.000Z', local: '2025-04-06T01:45:00+11:00', dstShifted: true },
      { utc: '2025-04-05T15:15:00.000Z', local: '2025-04-06T01:45:00+10:30', dstShifted: true },
      { utc: '2025-04-05T16:15:00.000Z', local: '2025-04-06T02:45:00+10:30', dstShifted: false },
    ]);
    expect(nextRuns('0 0 * * *', 'UTC', at('2025-01-01T00:00:00Z'), 1)).toEqual([
      { utc: '2025-01-02T00:00:00.000Z', local: '2025-01-02T00:00:00+00:00', dstShifted: false },
    ]);
  });
});
