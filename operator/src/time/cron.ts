// The one entry point for cron schedules: parse + validate (cron-parser does field expansion), then find firing
// instants with our own wall-clock arithmetic, because cron-parser's DST handling is not the contract (it moves
// a gap time by the gap's length, and 5.x has had skipped days and wrong results after gaps).
//
// DST POLICY (docs/scheduling.md has examples). Two kinds of schedule:
//  - interval schedules: the hour field matches all 24 hours ("15 * * * *", "*/30 * * * *", "@hourly").
//    They fire at every instant whose local wall-clock minute matches: both copies of a repeated time fire
//    (they are different real hours), and a minute the clock never shows (a gap) is skipped — every real hour
//    still gets its run.
//  - wall-clock schedules: everything else ("30 2 * * *"). Each local date-time the expression matches fires
//    exactly once: at the instant the clock shows it; if it shows it twice, at the first; if never (a gap), at
//    the first instant after the gap (the transition). Slots that land on the same instant fire once.

import { CronExpressionParser } from 'cron-parser';
import { DAY, MINUTE, timeZoneProblem, type ZoneRules, zoneRules } from './tz.ts';

export type ScheduleField = 'schedule' | 'timeZone';

export class ScheduleError extends Error {
  readonly field: ScheduleField;
  constructor(field: ScheduleField, message: string) {
    super(message);
    this.name = 'ScheduleError';
    this.field = field;
  }
}

export type ScheduleKind = 'interval' | 'wall-clock';

/** How DST affected one firing: it stood in for a wall time inside a gap, or its wall time occurs twice. */
export type DstEffect = 'none' | 'gap' | 'repeated';

export interface Firing {
  at: Date;
  /** The matched local wall time, "YYYY-MM-DDTHH:MM" (differs from the clock at `at` when effect is 'gap'). */
  slot: string;
  dst: DstEffect;
}

export interface Schedule {
  readonly expr: string;
  readonly timeZone: string;
  readonly kind: ScheduleKind;
  /** The first firing strictly after `after`. */
  next(after: Date): Firing;
}

export const DEFAULT_TIME_ZONE = 'UTC';

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const FIELD_NAMES = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;
type FieldIndex = 0 | 1 | 2 | 3 | 4;

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const ITEM = /^(?:\*|\?|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:\/[0-9]+)?$/;

// Field matching tables. Day-of-month and day-of-week combine like Vixie cron: when both are restricted
// (neither is "*" nor "?"), a day matches if EITHER matches.
interface Matcher {
  minutes: boolean[];
  hours: boolean[];
  dom: boolean[];
  lastDom: boolean;
  months: boolean[];
  dow: boolean[];
  domStar: boolean;
  dowStar: boolean;
  /** nextMinute[m]: first matching minute ≥ m, or −1 (index 60 is −1). */
  nextMinute: number[];
  nextHour: number[];
}

// A schedule that matches nothing in this many years never will (the calendar repeats within 28 years, and
// Feb 29 recurs within 8).
const SEARCH_YEARS = 30;

function syntaxProblem(index: FieldIndex, text: string): string | undefined {
  const name = FIELD_NAMES[index];
  for (const item of text.split(',')) {
    if (item === '') return `${name} field "${text}": empty list item`;
    if (/#/.test(item)) return `${name} field "${text}": "#" (nth weekday) is not supported`;
    if (item === 'L') {
      if (index === 2) continue;
      return `${name} field "${text}": "L" is only supported in the day-of-month field`;
    }
    if (!ITEM.test(item)) return `${name} field "${text}": "${item}" is not a value, range, list or step`;
    if (item.startsWith('?') && (item !== '?' || (index !== 2 && index !== 4))) {
      return `${name} field "${text}": "?" is only allowed alone, in the day-of-month or day-of-week field`;
    }
    const names = index === 3 ? MONTH_NAMES : index === 4 ? DAY_NAMES : [];
    for (const token of item.split(/[-/]/)) {
      if (token === '*' || token === '?' || /^\d+$/.test(token)) continue;
      if (names.includes(token.toUpperCase())) continue;
      if (/^\d*[LW]$/i.test(token) || token.toUpperCase() === 'H') {
        return `${name} field "${text}": "${token}" is not supported (only "L" alone, in the day-of-month field)`;
      }
      const hint = names.length > 0 ? ` (names: ${names.join(', ')})` : '';
      return `${name} field "${text}": "${token}" is not a number${hint}`;
    }
  }
  return undefined;
}

// Expands one field with cron-parser on its own (the other fields "*"), so errors name the field and
// cron-parser's whole-expression checks cannot reject valid combinations such as "0 0 30 2 1".
function expandField(index: FieldIndex, text: string): (number | string)[] {
  const parts = ['0', '0', '*', '*', '*'];
  parts[index] = text;
  let fields: ReturnType<typeof CronExpressionParser.parse>['fields'];
  try {
    fields = CronExpressionParser.parse(parts.join(' '), { tz: 'UTC' }).fields;
  } catch (err) {
    throw new ScheduleError('schedule', `${FIELD_NAMES[index]} field "${text}": ${(err as Error).message}`);
  }
  const field = [fields.minute, fields.hour, fields.dayOfMonth, fields.month, fields.dayOfWeek][index]!;
  return [...field.values];
}

function flags(size: number, values: (number | string)[], map: (v: number) => number = (v) => v): boolean[] {
  const out = new Array<boolean>(size).fill(false);
  for (const v of values) if (typeof v === 'number') out[map(v)] = true;
  return out;
}

function nextTable(set: boolean[]): number[] {
  const out = new Array<number>(set.length + 1).fill(-1);
  for (let i = set.length - 1; i >= 0; i--) out[i] = set[i] ? i : out[i + 1]!;
  return out;
}

function buildMatcher(fieldTexts: string[]): Matcher {
  const values = fieldTexts.map((t, i) => expandField(i as FieldIndex, t));
  const minutes = flags(60, values[0]!);
  const hours = flags(24, values[1]!);
  const domValues = values[2]!;
  return {
    minutes,
    hours,
    dom: flags(32, domValues),
    lastDom: domValues.includes('L'),
    months: flags(13, values[3]!),
    dow: flags(7, values[4]!, (v) => v % 7),
    domStar: fieldTexts[2] === '*' || fieldTexts[2] === '?',
    dowStar: fieldTexts[4] === '*' || fieldTexts[4] === '?',
    nextMinute: nextTable(minutes),
    nextHour: nextTable(hours),
  };
}

function dayMatches(m: Matcher, d: Date): boolean {
  const dom = d.getUTCDate();
  const domHit =
    m.dom[dom] === true ||
    (m.lastDom && dom === new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate());
  const dowHit = m.dow[d.getUTCDay()] === true;
  if (m.domStar && m.dowStar) return true;
  if (m.domStar) return dowHit;
  if (m.dowStar) return domHit;
  return domHit || dowHit;
}

/**
 * First matching wall time ≥ `from` on the plain (zone-less) calendar. Wall times are "naive" ms: the local
 * fields read through Date's UTC getters. Undefined if nothing matches within SEARCH_YEARS.
 */
function nextWall(m: Matcher, from: number): number | undefined {
  let t = Math.ceil(from / MINUTE) * MINUTE;
  const limit = t + SEARCH_YEARS * 366 * DAY;
  while (t <= limit) {
    const dayStart = Math.floor(t / DAY) * DAY;
    const verdict = dayVerdict(m, dayStart);
    if (verdict !== true) {
      t = verdict;
      continue;
    }
    const minuteOfDay = (t - dayStart) / MINUTE;
    const h = Math.floor(minuteOfDay / 60);
    const min = minuteOfDay - h * 60;
    if (m.hours[h]) {
      const nm = m.nextMinute[min]!;
      if (nm >= 0) return t + (nm - min) * MINUTE;
    }
    const nh = m.nextHour[h + 1]!;
    if (nh >= 0) return dayStart + (nh * 60 + m.nextMinute[0]!) * MINUTE;
    t = dayStart + DAY;
  }
  return undefined;
}

// Consecutive nextWall calls mostly ask about the same day: remember the last answer per matcher.
const lastDay = new WeakMap<Matcher, { day: number; verdict: true | number }>();

/** true if the day starting at `dayStart` matches, else the start of the next day worth looking at. */
function dayVerdict(m: Matcher, dayStart: number): true | number {
  const cached = lastDay.get(m);
  if (cached?.day === dayStart) return cached.verdict;
  const d = new Date(dayStart);
  const mon = d.getUTCMonth();
  let verdict: true | number;
  if (!m.months[mon + 1]) verdict = Date.UTC(d.getUTCFullYear(), mon + 1, 1);
  else verdict = dayMatches(m, d) ? true : dayStart + DAY;
  lastDay.set(m, { day: dayStart, verdict });
  return verdict;
}

function formatSlot(wall: number): string {
  return new Date(wall).toISOString().slice(0, 16);
}

class CompiledSchedule implements Schedule {
  readonly expr: string;
  readonly timeZone: string;
  readonly kind: ScheduleKind;
  readonly #m: Matcher;
  readonly #zone: ZoneRules;

  constructor(expr: string, timeZone: string, m: Matcher) {
    this.expr = expr;
    this.timeZone = timeZone;
    this.#m = m;
    this.#zone = zoneRules(timeZone);
    this.kind = m.hours.every(Boolean) ? 'interval' : 'wall-clock';
  }

  next(after: Date): Firing {
    const a = after.getTime();
    if (!Number.isFinite(a)) throw new TypeError('next(): invalid date');
    const zone = this.#zone;
    // A wall time earlier than the clock's reading at `after` can still fire later, by up to the size of a
    // nearby fall-back: start that far back. (Firing instants of later slots are never earlier, except the
    // second copies of repeated times, which only interval schedules use and which this window covers.)
    const o1 = zone.offsetAt(a - DAY);
    const o2 = zone.offsetAt(a);
    const o3 = zone.offsetAt(a + DAY);
    const back = Math.max(o1, o2, o3) - Math.min(o1, o2, o3);
    let w = this.#nextWall(Math.floor((a + o2) / MINUTE) * MINUTE - back);
    let best: Firing | undefined;
    for (;;) {
      const r = zone.resolve(w);
      const first = r.instants[0];
      if (this.kind === 'wall-clock') {
        const at = first ?? r.gapEnd!;
        if (at > a)
          return firing(at, w, first === undefined ? 'gap' : r.instants.length > 1 ? 'repeated' : 'none');
      } else if (first !== undefined) {
        const dst: DstEffect = r.instants.length > 1 ? 'repeated' : 'none';
        for (const at of r.instants) {
          if (at > a && (best === undefined || at < best.at.getTime())) best = firing(at, w, dst);
        }
        // Later slots' first instants only grow, so nothing after this slot can beat `best`.
        if (first > a) return best!;
      }
      w = this.#nextWall(w + MINUTE);
    }
  }

  #nextWall(from: number): number {
    const w = nextWall(this.#m, from);
    if (w === undefined) throw new ScheduleError('schedule', `schedule "${this.expr}" never fires`);
    return w;
  }
}

function firing(at: number, wall: number, dst: DstEffect): Firing {
  return new FiringImpl(at, wall, dst);
}

class FiringImpl implements Firing {
  readonly at: Date;
  readonly dst: DstEffect;
  readonly #wall: number;
  constructor(at: number, wall: number, dst: DstEffect) {
    this.at = new Date(at);
    this.dst = dst;
    this.#wall = wall;
  }
  // Formatting is the costliest step of a firing and rarely wanted: do it on demand.
  get slot(): string {
    return formatSlot(this.#wall);
  }
}

/** Why `timeZone` is unusable, as a ScheduleError, or nothing. Undefined means UTC. */
export function validateTimeZone(timeZone: string | undefined): ScheduleError | undefined {
  if (timeZone === undefined) return undefined;
  const problem = timeZoneProblem(timeZone);
  return problem === undefined ? undefined : new ScheduleError('timeZone', problem);
}

function compile(expr: string, timeZone: string): CompiledSchedule {
  const zoneError = validateTimeZone(timeZone);
  if (zoneError) throw zoneError;
  const bad = (message: string) => new ScheduleError('schedule', message);
  const text = expr.trim();
  if (text === '') throw bad('schedule must not be empty');
  if (/^(CRON_)?TZ=/i.test(text)) {
    throw bad('a TZ= or CRON_TZ= prefix is not supported in the schedule: set the timeZone field instead');
  }
  let fieldsText = text;
  if (text.startsWith('@')) {
    const macro = MACROS[text];
    if (macro === undefined) {
      throw bad(`unknown schedule "${text}": supported macros are ${Object.keys(MACROS).join(', ')}`);
    }
    fieldsText = macro;
  }
  const fields = fieldsText.split(/\s+/);
  if (fields.length === 6) {
    throw bad(
      `schedule "${text}" has 6 fields; seconds are not supported: use 5 fields (minute hour day-of-month month day-of-week)`,
    );
  }
  if (fields.length !== 5) {
    throw bad(
      `schedule "${text}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; expected 5 (minute hour day-of-month month day-of-week) or a macro such as @daily`,
    );
  }
  fields.forEach((f, i) => {
    const problem = syntaxProblem(i as FieldIndex, f);
    if (problem) throw bad(problem);
  });
  const m = buildMatcher(fields);
  if (nextWall(m, Date.UTC(2000, 0, 1)) === undefined) {
    throw bad(`schedule "${text}" never fires (no month has that day)`);
  }
  return new CompiledSchedule(text, timeZone, m);
}

const CACHE_LIMIT = 500;
const cache = new Map<string, CompiledSchedule>();

/** A parsed, validated schedule (cached). Throws ScheduleError naming the offending field. */
export function parseSchedule(expr: string, timeZone: string | undefined = DEFAULT_TIME_ZONE): Schedule {
  const key = `${timeZone}\u0000${expr}`;
  let s = cache.get(key);
  if (!s) {
    s = compile(expr, timeZone);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, s);
  }
  return s;
}

/** The first firing of `expr` in `timeZone` strictly after `after`. Throws ScheduleError on bad input. */
export function nextFire(expr: string, timeZone: string | undefined, after: Date): Date {
  return parseSchedule(expr, timeZone).next(after).at;
}

export type ScheduleValidation = { ok: true } | { ok: false; field: ScheduleField; message: string };

/** For the admission webhook: is this schedule + zone usable, and if not, which field is wrong and why. */
export function validateSchedule(expr: string, timeZone: string | undefined): ScheduleValidation {
  try {
    parseSchedule(expr, timeZone);
    return { ok: true };
  } catch (err) {
    if (err instanceof ScheduleError) return { ok: false, field: err.field, message: err.message };
    throw err;
  }
}
