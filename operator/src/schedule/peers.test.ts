// Cases from the peers' own test suites, restated against our schedule and slot decisions. Each names its
// source (repository, file, test and case). Where we differ on purpose (the DST policy, catch-up), the case
// asserts our answer and says why. Read from:
//  - kubernetes/kubernetes pkg/controller/cronjob/utils_test.go (TestMostRecentScheduleTime,
//    TestNextScheduleTime, TestNextScheduleTimeDuration), whose clock starts at topOfTheHour, 2016-05-19T10:00Z
//    (a Thursday);
//  - robfig/cron spec_test.go (TestActivation, TestNext), the parser CronJob uses;
//  - harrisiirak/cron-parser tests/CronExpressionParser.test.ts, the parser we expand fields with.

import { describe, expect, it } from 'vitest';
import { parseSchedule, validateSchedule } from '../time/cron.ts';
import { decideRun, type RunInput } from './slots.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const TOP = Date.parse('2016-05-19T10:00:00Z');
/** topOfTheHour + d (Kubernetes: deltaTimeAfterTopOfTheHour). */
const top = (d: number) => new Date(TOP + d);

function run(schedule: string, fields: Partial<RunInput> & { now: Date }): RunInput {
  return { schedule, timeZone: 'UTC', creationTime: top(0), ...fields };
}

describe('Kubernetes CronJob controller: utils_test.go TestMostRecentScheduleTime', () => {
  it('"now before next schedule": nothing runs', () => {
    const d = decideRun(run('0 * * * *', { now: top(30_000) }));
    expect(d.runSlot).toBeUndefined();
    expect(d.next).toEqual(top(HOUR));
  });

  it('"now just after next schedule": that slot runs', () => {
    expect(decideRun(run('0 * * * *', { now: top(61 * MIN) })).runSlot).toEqual(top(HOUR));
  });

  it('"missed 5 schedules": only the most recent runs, the four before it are counted, not "too many"', () => {
    const d = decideRun(run('0 * * * *', { creationTime: top(10_000), now: top(301 * MIN) }));
    expect(d).toMatchObject({ runSlot: top(300 * MIN), skippedCount: 4, tooManyMissed: false });
  });

  it.each([
    // "complex schedule": Thu 10:30 done, now Fri 10:31.
    ['30 6-16/4 * * 1-5', top(30 * MIN), top(24 * HOUR + 31 * MIN), top(24 * HOUR + 30 * MIN)],
    // "complex schedule with longer diff between executions": now Mon 10:31, over the weekend.
    ['30 6-16/4 * * 1-5', top(30 * MIN), top(96 * HOUR + 31 * MIN), top(96 * HOUR + 30 * MIN)],
    // "complex schedule with shorter diff between executions": never ran, created Thu 10:00.
    ['30 6-16/4 * * 1-5', undefined, top(24 * HOUR + 31 * MIN), top(24 * HOUR + 30 * MIN)],
  ])('complex schedule %s (last %s, now %s) runs %s', (schedule, last, now, slot) => {
    const d = decideRun(run(schedule, { ...(last ? { lastScheduleTime: last } : {}), now }));
    expect(d).toMatchObject({ runSlot: slot, tooManyMissed: false });
  });

  it('"another complex schedule": CronJob expects no recent time there; we run the most recent missed slot', () => {
    // Thu 10:30 done, now Fri 16:30: Thu 11:30, 12:30 and Fri 10:30, 11:30, 12:30 were missed. CronJob's
    // case expects nil from its estimate; our contract (docs/scheduling.md, catch-up) runs the latest, Fri 12:30.
    const d = decideRun(
      run('30 10,11,12 * * 1-5', { lastScheduleTime: top(30 * MIN), now: top(30 * HOUR + 30 * MIN) }),
    );
    expect(d).toMatchObject({ runSlot: top(26 * HOUR + 30 * MIN), skippedCount: 4, tooManyMissed: false });
  });

  it('"rogue cronjob" (59 23 31 2 *): CronJob errors at reconcile time; we refuse the schedule itself', () => {
    expect(validateSchedule('59 23 31 2 *', 'UTC')).toMatchObject({ ok: false, field: 'schedule' });
  });

  it.each([
    ['"earliestTime being LastScheduleTime"', undefined, 31 * MIN],
    ['"earliestTime being LastScheduleTime (within StartingDeadlineSeconds)"', 60, 31 * MIN],
    ['"earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)"', 60, 32 * MIN],
  ])('%s: nothing is due, nothing is missed', (_name, deadline, now) => {
    const d = decideRun(
      run('*/5 * * * *', {
        lastScheduleTime: top(30 * MIN),
        now: top(now),
        ...(deadline !== undefined ? { startingDeadlineSeconds: deadline } : {}),
      }),
    );
    expect(d).toMatchObject({ skippedCount: 0, tooManyMissed: false });
    expect(d.runSlot ?? d.missedPastDeadline).toBeUndefined();
  });
});

describe('Kubernetes CronJob controller: utils_test.go TestNextScheduleTime', () => {
  // T1 = topOfTheHour, T2 = T1 + 1h; last run at T1 − 1h; now = T2 + 10 days.
  const base = { lastScheduleTime: top(-HOUR), now: top(HOUR + 240 * HOUR) };

  it('Case 6 "now is way way ahead of last start time, and there is no deadline": too many missed', () => {
    expect(decideRun(run('0 * * * *', base))).toMatchObject({ runSlot: base.now, tooManyMissed: true });
  });

  it('Case 7 "... but there is a short deadline": the 2 h window holds 3 slots, so no warning', () => {
    const d = decideRun(run('0 * * * *', { ...base, startingDeadlineSeconds: 2 * 60 * 60 }));
    expect(d).toMatchObject({ runSlot: base.now, skippedCount: 2, tooManyMissed: false });
  });

  it('(ours) a deadline window that does hold more than 100 slots still warns', () => {
    const d = decideRun(run('* * * * *', { ...base, startingDeadlineSeconds: 3 * 60 * 60 }));
    expect(d).toMatchObject({ runSlot: base.now, tooManyMissed: true });
  });

  it('(ours) after a long outage the latest slot past a short deadline is still reported once', () => {
    const d = decideRun(
      run('0 * * * *', { ...base, now: top(HOUR + 240 * HOUR + 30 * MIN), startingDeadlineSeconds: 60 }),
    );
    expect(d).toMatchObject({ missedPastDeadline: base.now, tooManyMissed: false });
    expect(d.runSlot).toBeUndefined();
  });
});

describe('Kubernetes CronJob controller: utils_test.go TestNextScheduleTimeDuration', () => {
  // CronJob adds a 100 ms nextScheduleDelta to its requeue; ours is exact.
  it.each([
    [
      'complex schedule skipping weekend',
      '30 6-16/4 * * 1-5',
      30 * MIN,
      24 * HOUR + 31 * MIN,
      3 * HOUR + 59 * MIN,
    ],
    [
      'another complex schedule skipping weekend',
      '30 10,11,12 * * 1-5',
      30 * MIN,
      30 * HOUR + 30 * MIN,
      66 * HOUR,
    ],
    [
      'once a week cronjob, missed two runs',
      '0 12 * * 4',
      2 * HOUR,
      19 * 24 * HOUR + HOUR + 30 * MIN,
      48 * HOUR + 30 * MIN,
    ],
    ['no previous run of a cronjob', '0 12 * * 5', undefined, 6 * HOUR, 20 * HOUR],
  ])('"%s"', (_name, schedule, last, now, wait) => {
    const d = decideRun(
      run(schedule, { ...(last !== undefined ? { lastScheduleTime: top(last) } : {}), now: top(now) }),
    );
    expect(d.requeueAfterMs).toBe(wait);
  });
});

/** robfig's times are "Mon Jul 9 15:00 2012" in UTC. */
const utc = (s: string) => new Date(`${s.replace(/^\w{3} /, '')} UTC`);

describe('robfig/cron spec_test.go TestActivation (5-field cases)', () => {
  it.each([
    // Every fifteen minutes.
    ['Mon Jul 9 15:00 2012', '0/15 * * * *', true],
    ['Mon Jul 9 15:45 2012', '0/15 * * * *', true],
    ['Mon Jul 9 15:40 2012', '0/15 * * * *', false],
    // Every fifteen minutes, starting at 5 minutes.
    ['Mon Jul 9 15:05 2012', '5/15 * * * *', true],
    ['Mon Jul 9 15:20 2012', '5/15 * * * *', true],
    ['Mon Jul 9 15:50 2012', '5/15 * * * *', true],
    // Named months.
    ['Sun Jul 15 15:00 2012', '0/15 * * Jul *', true],
    ['Sun Jul 15 15:00 2012', '0/15 * * Jun *', false],
    // Everything set.
    ['Sun Jul 15 08:30 2012', '30 08 ? Jul Sun', true],
    ['Sun Jul 15 08:30 2012', '30 08 15 Jul ?', true],
    ['Mon Jul 16 08:30 2012', '30 08 ? Jul Sun', false],
    ['Mon Jul 16 08:30 2012', '30 08 15 Jul ?', false],
    // Predefined schedules.
    ['Mon Jul 9 15:00 2012', '@hourly', true],
    ['Mon Jul 9 15:04 2012', '@hourly', false],
    ['Mon Jul 9 15:00 2012', '@daily', false],
    ['Mon Jul 9 00:00 2012', '@daily', true],
    ['Mon Jul 9 00:00 2012', '@weekly', false],
    ['Sun Jul 8 00:00 2012', '@weekly', true],
    ['Sun Jul 8 01:00 2012', '@weekly', false],
    ['Sun Jul 8 00:00 2012', '@monthly', false],
    ['Sun Jul 1 00:00 2012', '@monthly', true],
    // Day of month and day of week both restricted: either matches ("*/10" is restricted: robfig/cron#70).
    ['Sun Jul 15 00:00 2012', '* * 1,15 * Sun', true],
    ['Fri Jun 15 00:00 2012', '* * 1,15 * Sun', true],
    ['Wed Aug 1 00:00 2012', '* * 1,15 * Sun', true],
    ['Sun Jul 15 00:00 2012', '* * */10 * Sun', true],
    // One of them a star: both must match.
    ['Sun Jul 15 00:00 2012', '* * * * Mon', false],
    ['Mon Jul 9 00:00 2012', '* * 1,15 * *', false],
    ['Sun Jul 15 00:00 2012', '* * 1,15 * *', true],
    ['Sun Jul 15 00:00 2012', '* * */2 * Sun', true],
  ])('%s "%s" → %s', (time, spec, expected) => {
    const t = utc(time);
    const fired = parseSchedule(spec, 'UTC').next(new Date(t.getTime() - 1000)).at;
    expect(fired.getTime() === t.getTime()).toBe(expected);
  });
});

describe('robfig/cron spec_test.go TestNext (cases without seconds)', () => {
  it.each([
    ['Mon Jul 9 14:45 2012', '0/15 * * * *', 'Mon Jul 9 15:00 2012'],
    ['Mon Jul 9 14:59 2012', '0/15 * * * *', 'Mon Jul 9 15:00 2012'],
    ['Mon Jul 9 15:45 2012', '20-35/15 * * * *', 'Mon Jul 9 16:20 2012'],
    ['Mon Jul 9 23:46 2012', '*/15 * * * *', 'Tue Jul 10 00:00 2012'],
    ['Mon Jul 9 23:45 2012', '20-35/15 * * * *', 'Tue Jul 10 00:20 2012'],
    ['Mon Jul 9 23:35 2012', '0 0 9 Apr-Oct ?', 'Thu Aug 9 00:00 2012'],
    ['Mon Jul 9 23:35 2012', '0 0 */5 Apr,Aug,Oct Mon', 'Wed Aug 1 00:00 2012'],
    ['Mon Jul 9 23:35 2012', '0 0 */5 Oct Mon', 'Mon Oct 1 00:00 2012'],
    ['Mon Jul 9 23:35 2012', '0 0 * Feb Mon', 'Mon Feb 4 00:00 2013'],
    // A day-of-week step: Mon/2 is Mon, Wed, Fri (and never Sunday).
    ['Mon Jul 9 23:35 2012', '0 0 * Feb Mon/2', 'Fri Feb 1 00:00 2013'],
    ['Mon Jul 9 23:35 2012', '0 0 29 Feb ?', 'Mon Feb 29 00:00 2016'],
  ])('after %s "%s" → %s', (from, spec, expected) => {
    expect(parseSchedule(spec, 'UTC').next(utc(from)).at).toEqual(utc(expected));
  });

  it('"Unsatisfiable" (0 0 30 Feb ?, 0 0 31 Apr ?): refused when parsed, never a silent zero time', () => {
    expect(validateSchedule('0 0 30 Feb ?', 'UTC')).toMatchObject({ ok: false });
    expect(validateSchedule('0 0 31 Apr ?', 'UTC')).toMatchObject({ ok: false });
  });

  it('"2am nightly job (skipped)" on the spring-forward day: robfig skips the day; we run when the gap ends', () => {
    // robfig expects 2012-03-12T02:00-0400 (robfig/cron#541); our DST policy runs 02:00 at 03:00 EDT.
    expect(parseSchedule('0 2 * * ?', 'America/New_York').next(new Date('2012-03-11T05:00:00Z')).at).toEqual(
      new Date('2012-03-11T07:00:00Z'),
    );
  });

  it('"1am nightly job (runs twice)" on the fall-back day: robfig runs both 01:00s; we run the first only', () => {
    const s = parseSchedule('0 1 * * ?', 'America/New_York');
    const first = s.next(new Date('2012-11-04T04:00:00Z')).at; // from 00:00 EDT
    expect(first).toEqual(new Date('2012-11-04T05:00:00Z')); // 01:00 EDT
    expect(s.next(first).at).toEqual(new Date('2012-11-05T06:00:00Z')); // next day, 01:00 EST
  });

  it('"hourly job" across both transitions: every real hour once, both 01:00s in autumn (as robfig)', () => {
    const s = parseSchedule('0 * * * ?', 'America/New_York');
    expect(s.next(new Date('2012-03-11T06:00:00Z')).at).toEqual(new Date('2012-03-11T07:00:00Z')); // 01:00 EST → 03:00 EDT
    expect(s.next(new Date('2012-11-04T05:00:00Z')).at).toEqual(new Date('2012-11-04T06:00:00Z')); // 01:00 EDT → 01:00 EST
  });
});

describe('cron-parser tests/CronExpressionParser.test.ts', () => {
  /** The weekdays (0 = Sunday) a schedule fires on over two weeks. */
  const weekdays = (spec: string) => {
    const s = parseSchedule(spec, 'UTC');
    const days = new Set<number>();
    for (let t = new Date('2025-01-01T00:00:00Z'), i = 0; i < 14; i++) {
      t = s.next(t).at;
      days.add(t.getUTCDay());
    }
    return [...days].sort();
  };

  it.each([
    // "day-of-week step does not add Sunday when the step never reaches 7" (fixed in cron-parser 5.8)
    ['0 0 * * 2/2', [2, 4, 6]],
    ['0 0 * * 2-7/2', [2, 4, 6]],
    ['0 0 * * 4/2', [4, 6]],
    ['0 0 * * 1/2', [0, 1, 3, 5]],
    ['0 0 * * 6/1', [0, 6]],
    ['0 0 * * 0/2', [0, 2, 4, 6]],
    // The named form of the same step.
    ['0 0 * * TUE/2', [2, 4, 6]],
  ])('"%s" fires on weekdays %j', (spec, days) => {
    expect(weekdays(spec)).toEqual(days);
  });
});
