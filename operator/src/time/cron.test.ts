import { CronExpressionParser } from 'cron-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refMatches, refParse, wallReader } from '../../../test/support/dst-reference.ts';
import { nextFire, parseSchedule, ScheduleError, validateSchedule } from './cron.ts';

const at = (iso: string) => new Date(iso);
const iso = (d: Date) => d.toISOString();

/** The next `n` firings after `from`, as UTC ISO strings. */
function fires(expr: string, zone: string, from: string, n: number): string[] {
  const s = parseSchedule(expr, zone);
  const out: string[] = [];
  let t = at(from);
  for (let i = 0; i < n; i++) {
    t = s.next(t).at;
    out.push(iso(t));
  }
  return out;
}

describe('syntax', () => {
  it.each([
    ['0 2 * * *'],
    ['*/15 9-17 * * 1-5'],
    ['0 0 1,15 * *'],
    ['5/20 * * * *'],
    ['0 0 * JAN-MAR,dec sun'],
    ['0 0 ? * MON'],
    ['0 0 L * *'],
    ['0 0 1,L * *'],
    ['0 0 * * 7'],
    ['  0   2 * *\t* '],
    ['@hourly'],
    ['@daily'],
    ['@midnight'],
    ['@weekly'],
    ['@monthly'],
    ['@yearly'],
    ['@annually'],
    ['0 0 30 2 1'], // never on Feb 30, but Mondays in February (day fields OR)
  ])('accepts %j', (expr) => {
    expect(validateSchedule(expr, 'UTC')).toEqual({ ok: true });
  });

  it.each([
    ['', /must not be empty/],
    ['0 0 0 * * *', /6 fields; seconds are not supported/],
    ['0 0 * *', /4 fields; expected 5/],
    ['0 0 * * * * *', /7 fields; expected 5/],
    ['@every 1h', /supported macros are @yearly/],
    ['@Daily', /supported macros/],
    ['CRON_TZ=Europe/Berlin 0 2 * * *', /set the timeZone field/],
    ['TZ=UTC 0 2 * * *', /set the timeZone field/],
    ['60 * * * *', /minute field "60".*0-59/],
    ['0 24 * * *', /hour field "24".*0-23/],
    ['0 0 0 * *', /day-of-month field "0"/],
    ['0 0 * 13 *', /month field "13"/],
    ['0 0 * * 8', /day-of-week field "8"/],
    ['*/0 * * * *', /minute field "\*\/0"/],
    ['5-2 * * * *', /minute field "5-2"/],
    ['H * * * *', /"H" is not supported/],
    ['0 0 15W * *', /"15W" is not supported/],
    ['0 0 * * 5L', /"5L" is not supported/],
    ['0 0 * * L', /only supported in the day-of-month field/],
    ['0 0 * * 1#2', /"#" \(nth weekday\) is not supported/],
    ['? * * * *', /"\?" is only allowed alone, in the day-of-month or day-of-week field/],
    ['0 0 ?/2 * *', /"\?" is only allowed alone/],
    ['0,,5 * * * *', /empty list item/],
    ['0 0 * * FOO', /"FOO" is not a number \(names: SUN/],
    ['0 0 * JANUARY *', /"JANUARY" is not a number \(names: JAN/],
    ['0 0 * * MON-FOO', /"FOO"/],
    ['0 0 31 2 *', /never fires/],
    ['0 0 31 4,6,9,11 *', /never fires/],
  ])('rejects %j', (expr, message) => {
    const v = validateSchedule(expr, 'UTC');
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.field).toBe('schedule');
      expect(v.message).toMatch(message);
    }
  });

  it('macros mean their five-field forms', () => {
    const from = '2025-06-15T12:34:00Z';
    for (const [macro, expr] of [
      ['@hourly', '0 * * * *'],
      ['@daily', '0 0 * * *'],
      ['@midnight', '0 0 * * *'],
      ['@weekly', '0 0 * * 0'],
      ['@monthly', '0 0 1 * *'],
      ['@yearly', '0 0 1 1 *'],
      ['@annually', '0 0 1 1 *'],
    ] as const) {
      expect(fires(macro, 'Europe/Berlin', from, 3)).toEqual(fires(expr, 'Europe/Berlin', from, 3));
    }
  });

  it('nextFire throws a ScheduleError naming the field', () => {
    expect(() => nextFire('0 0 0 * * *', 'UTC', at('2025-01-01T00:00:00Z'))).toThrow(ScheduleError);
    try {
      nextFire('0 0 * * *', 'Mars/Olympus_Mons', at('2025-01-01T00:00:00Z'));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ScheduleError);
      expect((err as ScheduleError).field).toBe('timeZone');
    }
  });
});

describe('time zones', () => {
  it.each([
    'UTC',
    'Etc/UTC',
    'Etc/GMT+5',
    'GMT',
    'America/New_York',
    'Asia/Kolkata',
    'Asia/Calcutta',
    'Europe/Kyiv',
    'Europe/Kiev',
    'US/Eastern',
    'America/Argentina/Buenos_Aires',
    'America/Port-au-Prince',
    'Australia/Lord_Howe',
  ])('accepts %s', (zone) => {
    expect(validateSchedule('0 0 * * *', zone)).toEqual({ ok: true });
  });

  it('defaults to UTC', () => {
    expect(validateSchedule('0 0 * * *', undefined)).toEqual({ ok: true });
    expect(iso(nextFire('0 12 * * *', undefined, at('2025-01-01T00:00:00Z')))).toBe(
      '2025-01-01T12:00:00.000Z',
    );
  });

  it.each([
    ['', /must not be empty/],
    ['Mars/Olympus_Mons', /unknown time zone "Mars\/Olympus_Mons": use an IANA name/],
    ['america/new_york', /case-sensitive.*did you mean "America\/New_York"/],
    ['us/eastern', /case-sensitive.*did you mean "America\/New_York"/],
    ['+05:30', /UTC offset, not an IANA time zone name/],
    ['-08:00', /UTC offset/],
    ['Local', /"Local" is not allowed/],
    [' UTC', /whitespace/],
    ['Europe/', /unknown time zone/],
    ['../etc/passwd', /unknown time zone/],
  ])('rejects %j', (zone, message) => {
    const v = validateSchedule('0 0 * * *', zone);
    expect(v).toMatchObject({ ok: false, field: 'timeZone' });
    if (!v.ok) expect(v.message).toMatch(message);
  });

  it('reports the zone before the schedule when both are wrong', () => {
    expect(validateSchedule('bad', 'Nowhere/Land')).toMatchObject({ ok: false, field: 'timeZone' });
  });
});

describe('nextFire', () => {
  it('is strictly after `after`', () => {
    expect(iso(nextFire('0 2 * * *', 'UTC', at('2025-01-01T02:00:00Z')))).toBe('2025-01-02T02:00:00.000Z');
    expect(iso(nextFire('0 2 * * *', 'UTC', at('2025-01-01T01:59:59.999Z')))).toBe(
      '2025-01-01T02:00:00.000Z',
    );
  });

  it('reads the schedule in the zone', () => {
    expect(fires('0 2 * * *', 'Asia/Kolkata', '2025-01-01T00:00:00Z', 2)).toEqual([
      '2025-01-01T20:30:00.000Z',
      '2025-01-02T20:30:00.000Z',
    ]);
    expect(fires('0 9 * * *', 'Pacific/Chatham', '2025-01-01T00:00:00Z', 1)).toEqual([
      '2025-01-01T19:15:00.000Z',
    ]);
  });

  it('combines day-of-month and day-of-week like cron: OR when both are restricted', () => {
    // 2025-06: the 13th is a Friday; Fridays are 6, 13, 20, 27.
    expect(fires('0 0 13 * 5', 'UTC', '2025-06-01T00:00:00Z', 4)).toEqual([
      '2025-06-06T00:00:00.000Z',
      '2025-06-13T00:00:00.000Z',
      '2025-06-20T00:00:00.000Z',
      '2025-06-27T00:00:00.000Z',
    ]);
    expect(fires('0 0 * * 5', 'UTC', '2025-06-01T00:00:00Z', 1)).toEqual(['2025-06-06T00:00:00.000Z']);
    expect(fires('0 0 13 * ?', 'UTC', '2025-06-01T00:00:00Z', 1)).toEqual(['2025-06-13T00:00:00.000Z']);
    expect(fires('0 0 * * 7', 'UTC', '2025-06-01T00:00:00Z', 1)).toEqual(['2025-06-08T00:00:00.000Z']);
  });

  it('finds rare dates: leap days across 2100 (not a leap year), last days of the month', () => {
    expect(fires('0 12 29 2 *', 'UTC', '2096-03-01T00:00:00Z', 1)).toEqual(['2104-02-29T12:00:00.000Z']);
    expect(fires('0 0 L * *', 'UTC', '2024-01-15T00:00:00Z', 3)).toEqual([
      '2024-01-31T00:00:00.000Z',
      '2024-02-29T00:00:00.000Z',
      '2024-03-31T00:00:00.000Z',
    ]);
    expect(fires('0 0 31 * *', 'UTC', '2025-02-01T00:00:00Z', 2)).toEqual([
      '2025-03-31T00:00:00.000Z',
      '2025-05-31T00:00:00.000Z',
    ]);
  });

  it('rejects an invalid date', () => {
    expect(() => nextFire('0 0 * * *', 'UTC', new Date(Number.NaN))).toThrow(TypeError);
  });

  it('classifies interval vs wall-clock schedules by whether the hour field covers every hour', () => {
    for (const e of ['15 * * * *', '*/30 * * * *', '@hourly', '0 */1 * * *', '0 0-23 * * 1']) {
      expect(parseSchedule(e, 'UTC').kind).toBe('interval');
    }
    for (const e of ['30 2 * * *', '0 */2 * * *', '0 1-23 * * *', '*/5 1 * * *', '@daily']) {
      expect(parseSchedule(e, 'UTC').kind).toBe('wall-clock');
    }
  });
});

describe('DST policy', () => {
  // New York: 2025-03-09 02:00 EST → 03:00 EDT (07:00Z); 2025-11-02 02:00 EDT → 01:00 EST (06:00Z).
  it('New York, wall-clock: a time in the gap runs once when the gap ends', () => {
    expect(fires('30 2 * * *', 'America/New_York', '2025-03-08T12:00:00Z', 2)).toEqual([
      '2025-03-09T07:00:00.000Z', // 03:00 EDT
      '2025-03-10T06:30:00.000Z', // 02:30 EDT
    ]);
    const f = parseSchedule('30 2 * * *', 'America/New_York').next(at('2025-03-08T12:00:00Z'));
    expect(f).toMatchObject({ slot: '2025-03-09T02:30', dst: 'gap' });
  });

  it('New York, wall-clock: several gap times collapse into one run', () => {
    expect(fires('*/20 2-3 * * *', 'America/New_York', '2025-03-09T06:00:00Z', 3)).toEqual([
      '2025-03-09T07:00:00.000Z', // 02:00, 02:20, 02:40 and 03:00 EDT
      '2025-03-09T07:20:00.000Z',
      '2025-03-09T07:40:00.000Z',
    ]);
  });

  it('New York, wall-clock: a repeated time runs once, at its first occurrence', () => {
    expect(fires('30 1 * * *', 'America/New_York', '2025-11-01T12:00:00Z', 2)).toEqual([
      '2025-11-02T05:30:00.000Z', // 01:30 EDT, not again at 01:30 EST
      '2025-11-03T06:30:00.000Z',
    ]);
    expect(fires('*/20 1 * * *', 'America/New_York', '2025-11-02T04:59:00Z', 4)).toEqual([
      '2025-11-02T05:00:00.000Z',
      '2025-11-02T05:20:00.000Z',
      '2025-11-02T05:40:00.000Z',
      '2025-11-03T06:00:00.000Z',
    ]);
  });

  it('New York, wall-clock: starting inside the repeated hour does not rerun it', () => {
    // 06:10Z is 01:10 EST, the second copy: 01:30's first occurrence (05:30Z) has passed.
    expect(fires('30 1 * * *', 'America/New_York', '2025-11-02T06:10:00Z', 1)).toEqual([
      '2025-11-03T06:30:00.000Z',
    ]);
  });

  it('New York, interval: every real hour runs once, both 01:15s in autumn, no 02:15 in spring', () => {
    expect(fires('15 * * * *', 'America/New_York', '2025-11-02T04:00:00Z', 4)).toEqual([
      '2025-11-02T04:15:00.000Z', // 00:15 EDT
      '2025-11-02T05:15:00.000Z', // 01:15 EDT
      '2025-11-02T06:15:00.000Z', // 01:15 EST
      '2025-11-02T07:15:00.000Z', // 02:15 EST
    ]);
    expect(fires('15 * * * *', 'America/New_York', '2025-03-09T05:00:00Z', 3)).toEqual([
      '2025-03-09T05:15:00.000Z', // 00:15 EST
      '2025-03-09T06:15:00.000Z', // 01:15 EST
      '2025-03-09T07:15:00.000Z', // 03:15 EDT
    ]);
    // Starting inside the first copy still finds the second copy of an earlier minute.
    expect(fires('15 * * * *', 'America/New_York', '2025-11-02T05:50:00Z', 1)).toEqual([
      '2025-11-02T06:15:00.000Z',
    ]);
  });

  // Lord Howe: 30-minute DST. 2025-10-05 02:00 +10:30 → 02:30 +11 (15:30Z on the 4th);
  // 2025-04-06 02:00 +11 → 01:30 +10:30 (15:00Z on the 5th).
  it('Lord Howe: half-hour gap and overlap', () => {
    expect(fires('0 2 * * *', 'Australia/Lord_Howe', '2025-10-04T00:00:00Z', 2)).toEqual([
      '2025-10-04T15:30:00.000Z', // 02:30 +11
      '2025-10-05T15:00:00.000Z', // 02:00 +11
    ]);
    expect(fires('45 1 * * *', 'Australia/Lord_Howe', '2025-04-05T00:00:00Z', 1)).toEqual([
      '2025-04-05T14:45:00.000Z',
    ]);
    expect(fires('45 * * * *', 'Australia/Lord_Howe', '2025-04-05T14:00:00Z', 3)).toEqual([
      '2025-04-05T14:45:00.000Z', // 01:45 +11
      '2025-04-05T15:15:00.000Z', // 01:45 +10:30
      '2025-04-05T16:15:00.000Z', // 02:45 +10:30
    ]);
  });

  it('Santiago: midnight does not exist on the spring-forward day', () => {
    // 2025-09-07 00:00 −04 → 01:00 −03 (04:00Z).
    expect(fires('0 0 * * *', 'America/Santiago', '2025-09-06T12:00:00Z', 2)).toEqual([
      '2025-09-07T04:00:00.000Z',
      '2025-09-08T03:00:00.000Z',
    ]);
  });
});

// --- property tests -------------------------------------------------------------------------------------

function field(lo: number, hi: number): fc.Arbitrary<string> {
  const v = fc.integer({ min: lo, max: hi });
  const step = fc.integer({ min: 1, max: Math.min(30, hi - lo) });
  return fc.oneof(
    fc.constant('*'),
    v.map(String),
    fc.tuple(v, v).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    step.map((s) => `*/${s}`),
    fc.tuple(v, v, step).map(([a, b, s]) => `${Math.min(a, b)}-${Math.max(a, b)}/${s}`),
    fc.tuple(v, step).map(([a, s]) => `${a}/${s}`),
    fc.uniqueArray(v, { minLength: 2, maxLength: 4 }).map((xs) => xs.join(',')),
  );
}

const cronExpr = fc
  .tuple(
    field(0, 59),
    field(0, 23),
    fc.oneof({ arbitrary: fc.constant('*'), weight: 4 }, { arbitrary: field(1, 31), weight: 1 }),
    fc.oneof({ arbitrary: fc.constant('*'), weight: 4 }, { arbitrary: field(1, 12), weight: 1 }),
    // 0-7: 7 is Sunday too, and steps such as 2/2 (= 2-7/2) must not add a Sunday they never reach.
    fc.oneof({ arbitrary: fc.constant('*'), weight: 3 }, { arbitrary: field(0, 7), weight: 1 }),
  )
  .map((f) => f.join(' '))
  .filter((e) => validateSchedule(e, 'UTC').ok);

const instant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2040, 0, 1) }).map((t) => new Date(t));
const zone = fc.constantFrom(
  'America/New_York',
  'Europe/Berlin',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'America/Santiago',
  'Asia/Kolkata',
  'America/Sao_Paulo',
);

describe('properties', { timeout: 60_000 }, () => {
  it('in UTC (no DST) it agrees with cron-parser', () => {
    fc.assert(
      fc.property(cronExpr, instant, (expr, after) => {
        const theirs = CronExpressionParser.parse(expr, { tz: 'UTC', currentDate: after });
        const ours = parseSchedule(expr, 'UTC');
        let t = after;
        for (let i = 0; i < 3; i++) {
          t = ours.next(t).at;
          expect(iso(t)).toBe(theirs.next().toISOString());
        }
      }),
      { numRuns: 150 },
    );
  });

  it('firings strictly increase, and each is a matching wall time or the end of the gap one fell in', () => {
    const readers = new Map<string, (t: number) => number>();
    fc.assert(
      fc.property(cronExpr, zone, instant, (expr, z, after) => {
        let reader = readers.get(z);
        if (!reader) {
          reader = wallReader(z);
          readers.set(z, reader);
        }
        const c = refParse(expr);
        const s = parseSchedule(expr, z);
        let t = after;
        for (let i = 0; i < 3; i++) {
          const f = s.next(t);
          const ft = f.at.getTime();
          expect(ft).toBeGreaterThan(t.getTime());
          const slot = Date.parse(`${f.slot}:00Z`);
          expect(refMatches(c, slot)).toBe(true);
          if (f.dst === 'gap') {
            // The clock jumped over the slot exactly here.
            expect(reader(ft - 60_000)).toBeLessThan(slot);
            expect(reader(ft)).toBeGreaterThan(slot);
          } else {
            expect(reader(ft)).toBe(slot);
          }
          t = f.at;
        }
      }),
      { numRuns: 300 },
    );
  });
});
