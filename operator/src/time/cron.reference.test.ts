// nextFire against the independent brute-force reference (reference.ts): ten years, eight zones chosen for
// their DST shapes, zero missed and zero duplicate firings.

import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { referenceFirings, surveyZone, type ZoneSurvey } from '../../../test/support/dst-reference.ts';
import { parseSchedule } from './cron.ts';

const START = Date.UTC(2016, 0, 1);
const END = Date.UTC(2026, 0, 1);
const MARGIN = 2 * 24 * 3_600_000;

const ZONES = [
  'America/New_York', // 1 h at 02:00 local, northern
  'Europe/Berlin', // 1 h at 02:00/03:00 local
  'Australia/Lord_Howe', // 30-minute DST
  'Pacific/Chatham', // +12:45/+13:45, changes at 02:45/03:45
  'America/Santiago', // southern, changes at local midnight (24:00 → 01:00)
  'Asia/Kolkata', // +05:30, no DST
  'America/Sao_Paulo', // midnight changes until DST ended in 2019
  'UTC',
];

const SCHEDULES = [
  '30 2 * * *', // inside the usual spring gap
  '0 * * * *',
  '15 * * * *',
  '*/30 * * * *',
  '0 0 28-31 * *', // last days, midnight (Santiago/Sao Paulo gaps)
  '0 12 29 2 *', // leap day
  '45 1 * * 0', // Sunday, inside the usual autumn overlap
  '0 3 1 * *',
  '0 0 * * *', // midnight
  '30 1 * * *', // repeated in New York, Lord Howe
  '0 2 * * *', // repeated in Berlin, gap in New York
  '45 2 * * 1-5', // Chatham's gap edge
  '*/20 1-3 * * *', // several slots in one gap / overlap
  '30 23 * * 6', // Santiago/Sao Paulo autumn overlap
  '0 0 L * *',
  '0 6 1,15 * 1', // day-of-month OR day-of-week
  // Day-of-week steps that never reach 7 must not add Sunday (cron-parser < 5.8 did).
  '0 0 * * 2/2',
  '30 2 * * 2-7/2',
  '45 1 * * 4/2',
];

const surveys = new Map<string, ZoneSurvey>();
function survey(zone: string, from = START, to = END): ZoneSurvey {
  const key = `${zone} ${from} ${to}`;
  let s = surveys.get(key);
  if (!s) {
    s = surveyZone(zone, from - MARGIN, to + MARGIN);
    surveys.set(key, s);
  }
  return s;
}

function expected(zone: string, expr: string, from = START, to = END): number[] {
  return referenceFirings(survey(zone, from, to), expr).filter((t) => t > from && t < to);
}

function actual(next: (after: number) => number, from = START, to = END): number[] {
  const out: number[] = [];
  for (let t = next(from); t < to; t = next(t)) out.push(t);
  return out;
}

/** Missed (expected, not fired), extra (fired, not expected) and duplicate firings; both inputs sorted. */
function compare(exp: number[], act: number[]) {
  const missed: number[] = [];
  const extra: number[] = [];
  let duplicates = 0;
  let i = 0;
  let j = 0;
  while (i < exp.length || j < act.length) {
    if (j > 0 && j < act.length && act[j] === act[j - 1]) {
      duplicates++;
      j++;
    } else if (j >= act.length || (i < exp.length && exp[i]! < act[j]!)) {
      missed.push(exp[i++]!);
    } else if (i >= exp.length || act[j]! < exp[i]!) {
      extra.push(act[j++]!);
    } else {
      i++;
      j++;
    }
  }
  const iso = (ts: number[]) => ts.slice(0, 5).map((t) => new Date(t).toISOString());
  return {
    missed: missed.length,
    extra: extra.length,
    duplicates,
    firstMissed: iso(missed),
    firstExtra: iso(extra),
  };
}

const CLEAN = { missed: 0, extra: 0, duplicates: 0, firstMissed: [], firstExtra: [] };

// ~1–2 s per zone on an idle 2-core box; the ceiling only guards a loaded machine (e.g. a parallel build).
const HEAVY = { timeout: 60_000 };

describe('nextFire matches the brute-force reference over 2016–2025', HEAVY, () => {
  it.each(ZONES)('%s', (zone) => {
    for (const expr of SCHEDULES) {
      const schedule = parseSchedule(expr, zone);
      const act = actual((t) => schedule.next(new Date(t)).at.getTime());
      const exp = expected(zone, expr);
      expect({ expr, ...compare(exp, act) }).toEqual({ expr, ...CLEAN });
    }
  });
});

describe('transitions larger than an hour', HEAVY, () => {
  it.each([
    ['Antarctica/Troll', 2024, 2026], // +00 ↔ +02: a two-hour gap and overlap
    ['Pacific/Apia', 2011, 2012], // 2011-12-30 skipped entirely (−10 → +14)
  ])('%s %i–%i', (zone, y1, y2) => {
    const [from, to] = [Date.UTC(y1, 0, 1), Date.UTC(y2 + 1, 0, 1)];
    for (const expr of SCHEDULES) {
      const schedule = parseSchedule(expr, zone);
      const act = actual((t) => schedule.next(new Date(t)).at.getTime(), from, to);
      expect({ expr, ...compare(expected(zone, expr, from, to), act) }).toEqual({ expr, ...CLEAN });
    }
  });
});

describe('the reference itself', HEAVY, () => {
  it('finds the transitions it should', () => {
    const windows = (zone: string) => survey(zone).windows.length;
    expect(windows('UTC')).toBe(0);
    expect(windows('Asia/Kolkata')).toBe(0);
    expect(windows('America/New_York')).toBe(20);
    // Brazil dropped DST in 2019: transitions in 2016–2019 only.
    expect(windows('America/Sao_Paulo')).toBe(7);
  });

  it('applies the DST policy (hand-checked New York and Lord Howe days)', () => {
    // Firings (as UTC HH:MM) within the 24 hours from `from` (UTC).
    const on = (zone: string, expr: string, from: string) => {
      const a = Date.parse(from);
      return expected(zone, expr)
        .filter((t) => t >= a && t < a + 86_400_000)
        .map((t) => new Date(t).toISOString().slice(11, 16));
    };
    // Spring forward 2025-03-09 02:00 EST → 03:00 EDT (07:00Z): 02:30 runs at 03:00 EDT.
    expect(on('America/New_York', '30 2 * * *', '2025-03-09T00:00Z')).toEqual(['07:00']);
    // Fall back 2025-11-02 02:00 EDT → 01:00 EST: 01:30 runs once, at 01:30 EDT (05:30Z).
    expect(on('America/New_York', '30 1 * * *', '2025-11-02T00:00Z')).toEqual(['05:30']);
    // Hourly: both 01:15s (05:15Z EDT, 06:15Z EST); in spring the non-existent 02:15 is skipped.
    expect(on('America/New_York', '15 * * * *', '2025-11-02T04:00Z').slice(0, 4)).toEqual([
      '04:15',
      '05:15',
      '06:15',
      '07:15',
    ]);
    expect(on('America/New_York', '15 * * * *', '2025-03-09T05:00Z').slice(0, 3)).toEqual([
      '05:15',
      '06:15',
      '07:15',
    ]);
    // Lord Howe 2025-10-05: 02:00 +10:30 → 02:30 +11 (15:30Z): 02:00 runs at 02:30.
    expect(on('Australia/Lord_Howe', '0 2 * * *', '2025-10-04T12:00Z')).toEqual(['15:30']);
  });

  it('detects a deviating implementation (raw cron-parser in New York, March 2025)', () => {
    const expr = '30 2 * * *';
    const [from, to] = [Date.UTC(2025, 2, 1), Date.UTC(2025, 3, 1)];
    const raw: number[] = [];
    const it = CronExpressionParser.parse(expr, { tz: 'America/New_York', currentDate: new Date(from) });
    for (let t = it.next().getTime(); t < to; t = it.next().getTime()) raw.push(t);
    const exp = expected('America/New_York', expr).filter((t) => t > from && t < to);
    // cron-parser moves the gap's 02:30 to 03:30 instead of running it when the gap ends.
    expect(compare(exp, raw)).toMatchObject({
      missed: 1,
      extra: 1,
      firstMissed: ['2025-03-09T07:00:00.000Z'],
      firstExtra: ['2025-03-09T07:30:00.000Z'],
    });
  });
});
