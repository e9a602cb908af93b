// decideCatchUp against a brute-force reference: random schedules, zones, outages, deadlines and
// policies; the reference lists every firing minute by minute (reference.ts) and applies the policy's
// definition (ADR 0047) to that list directly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HOUR, MIN } from '../../../test/support/builders/schedule.ts';
import { referenceFirings, surveyZone } from '../../../test/support/dst-reference.ts';
import type { CatchUpPolicy } from '../api/catch-up.ts';
import { parseSchedule } from '../time/cron.ts';
import { decideCatchUp } from './catch-up.ts';
import { MAX_MISSED_SLOTS } from './run-plan.ts';
import { MISSED_COUNT_CAP } from './slots.ts';

const DAY = 24 * HOUR;

const SCHEDULES = ['0 * * * *', '*/20 * * * *', '30 2 * * *', '15 1-3 * * *', '0 0 * * 1-5', '*/5 * * * *'];
const ZONES = ['UTC', 'America/New_York', 'Australia/Lord_Howe', 'Pacific/Chatham'];
// Around DST changes in the zones above, so gaps and overlaps fall inside outages.
const STARTS = [
  Date.UTC(2025, 2, 8, 12),
  Date.UTC(2025, 3, 5, 10),
  Date.UTC(2025, 9, 4, 8),
  Date.UTC(2025, 5, 1),
];

interface Reference {
  run: number[];
  notRun: { slot: number; reason: string }[];
  handled?: number;
  uncounted: number;
}

function reference(
  firings: number[],
  policy: CatchUpPolicy,
  maxRuns: number,
  now: number,
  deadline: number | undefined,
  runningSince: number,
): Reference {
  const late = (t: number) => deadline !== undefined && now - t > deadline * 1000;
  const eligible = (t: number) => !late(t) && (policy !== 'Skip' || t >= runningSince);
  const last = firings.at(-1);
  const run =
    policy === 'All'
      ? firings.filter(eligible).slice(-maxRuns)
      : last !== undefined && eligible(last)
        ? [last]
        : [];
  const others = firings.filter((t) => !run.includes(t));
  const notRun = others
    .slice(-MAX_MISSED_SLOTS)
    .map((slot) => ({ slot, reason: late(slot) ? 'StartingDeadlineExceeded' : 'CatchUpSkipped' }));
  const uncounted = Math.max(0, Math.min(firings.length, MISSED_COUNT_CAP) - run.length - notRun.length);
  return { run, notRun, uncounted, ...(last !== undefined ? { handled: last } : {}) };
}

describe('decideCatchUp', () => {
  it('runs exactly what the policy defines, in order, never twice (property, brute-force reference)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SCHEDULES),
        fc.constantFrom(...ZONES),
        fc.constantFrom(...STARTS),
        fc.integer({ min: 0, max: 3 * 24 * 60 }), // outage, minutes
        fc.integer({ min: 0, max: 3 * 24 * 60 }), // when the operator came back, minutes after `since`
        fc.constantFrom<CatchUpPolicy>('Skip', 'Latest', 'All'),
        fc.integer({ min: 1, max: 24 }),
        fc.option(fc.integer({ min: 1, max: 2 * 24 * 3600 }), { nil: undefined }),
        (expr, zone, since, outage, back, policy, maxRuns, deadline) => {
          const now = since + outage * MIN + 17_000;
          const runningSince = Math.min(now, since + back * MIN);
          // surveyZone samples the offset every 6 hours: a span of days around the outage lets it find
          // every change inside it.
          const survey = surveyZone(zone, since - 3 * DAY, now + 3 * DAY);
          const firings = referenceFirings(survey, expr).filter((t) => t > since && t <= now);
          const schedule = parseSchedule(expr, zone);
          const got = decideCatchUp({
            schedule,
            policy,
            ...(policy === 'All' ? { maxRuns } : {}),
            since: new Date(since),
            now: new Date(now),
            ...(deadline !== undefined ? { startingDeadlineSeconds: deadline } : {}),
            runningSince: new Date(runningSince),
          });
          const want = reference(firings, policy, maxRuns, now, deadline, runningSince);
          expect({
            run: got.run.map((d) => d.getTime()),
            notRun: got.notRun.map((n) => ({ slot: n.slot.getTime(), reason: n.reason })),
            handled: got.handled?.getTime(),
            uncounted: got.uncounted,
          }).toEqual({ ...want, handled: want.handled });
          // Handled once: deciding again from the handled slot runs nothing.
          if (got.handled) {
            const again = decideCatchUp({
              schedule,
              policy,
              maxRuns,
              since: got.handled,
              now: new Date(now),
              runningSince: new Date(runningSince),
            });
            expect(again.run).toEqual([]);
          }
        },
      ),
      {
        numRuns: 300,
        // Lord Howe's half-hour fall-back inside the outage (found when the reference's span was too short).
        examples: [
          ['0 * * * *', 'Australia/Lord_Howe', Date.UTC(2025, 3, 5, 10), 300, 0, 'Skip', 1, undefined],
        ],
      },
    );
  });

  it('Skip runs a slot that came due after the operator started, not one before', () => {
    const schedule = parseSchedule('0 * * * *', 'UTC');
    const since = new Date('2025-06-01T00:00:00Z');
    const now = new Date('2025-06-01T05:00:10Z');
    const before = decideCatchUp({
      schedule,
      policy: 'Skip',
      since,
      now,
      runningSince: new Date('2025-06-01T05:00:05Z'),
    });
    expect(before.run).toEqual([]);
    expect(before.notRun.map((n) => n.slot.toISOString())).toEqual([
      '2025-06-01T01:00:00.000Z',
      '2025-06-01T02:00:00.000Z',
      '2025-06-01T03:00:00.000Z',
      '2025-06-01T04:00:00.000Z',
      '2025-06-01T05:00:00.000Z',
    ]);
    const after = decideCatchUp({
      schedule,
      policy: 'Skip',
      since,
      now,
      runningSince: new Date('2025-06-01T04:30:00Z'),
    });
    expect(after.run.map((d) => d.toISOString())).toEqual(['2025-06-01T05:00:00.000Z']);
  });

  it('All after a year-long outage of a per-minute schedule looks at a bounded number of slots', () => {
    const schedule = parseSchedule('* * * * *', 'UTC');
    const got = decideCatchUp({
      schedule,
      policy: 'All',
      maxRuns: 3,
      since: new Date('2024-06-01T00:00:00Z'),
      now: new Date('2025-06-01T00:00:30Z'),
      runningSince: new Date('2025-06-01T00:00:20Z'),
    });
    expect(got.run.map((d) => d.toISOString())).toEqual([
      '2025-05-31T23:58:00.000Z',
      '2025-05-31T23:59:00.000Z',
      '2025-06-01T00:00:00.000Z',
    ]);
    expect(got.notRun).toHaveLength(MAX_MISSED_SLOTS);
  });
});
