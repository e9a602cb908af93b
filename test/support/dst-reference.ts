// TEST-ONLY brute-force reference for the schedule DST policy, written independently of cron.ts/tz.ts: its own
// tiny cron matcher, and local wall time read straight from Intl.DateTimeFormat#formatToParts for every minute
// near a transition (the code under test uses longOffset strings and transition tables instead).
//
// Policy restated from docs/scheduling.md:
//  - interval schedules (hour field covers all 24 hours): fire at every instant whose wall minute matches;
//  - other schedules: fire once per matching wall minute — at its first occurrence, or, if the clock never
//    shows it, at the first instant whose reading is later than it.

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const SAMPLE = 6 * HOUR;

export interface RefCron {
  minutes: Set<number>;
  hours: Set<number>;
  doms: Set<number>;
  lastDom: boolean;
  months: Set<number>;
  dows: Set<number>;
  domAny: boolean;
  dowAny: boolean;
  interval: boolean;
}

function expand(text: string, lo: number, hi: number): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(',')) {
    const [range, stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    let a: number;
    let b: number;
    if (range === '*') [a, b] = [lo, hi];
    else if (range!.includes('-')) [a, b] = range!.split('-').map(Number) as [number, number];
    else [a, b] = [Number(range), stepText === undefined ? Number(range) : hi];
    for (let v = a; v <= b; v += step) out.add(v);
  }
  return out;
}

/** Numeric 5-field cron only (plus "L" alone in day-of-month): enough for the reference schedules. */
export function refParse(expr: string): RefCron {
  const [mi, h, dom, mon, dow] = expr.trim().split(/\s+/) as [string, string, string, string, string];
  const hours = expand(h, 0, 23);
  return {
    minutes: expand(mi, 0, 59),
    hours,
    doms: dom === 'L' ? new Set() : expand(dom, 1, 31),
    lastDom: dom === 'L',
    months: expand(mon, 1, 12),
    dows: new Set([...expand(dow, 0, 7)].map((d) => d % 7)),
    domAny: dom === '*',
    dowAny: dow === '*',
    interval: hours.size === 24,
  };
}

/** Does the day of wall time `w` (naive ms: wall fields read through UTC getters) match? */
export function refDayMatches(c: RefCron, w: number): boolean {
  const d = new Date(w);
  if (!c.months.has(d.getUTCMonth() + 1)) return false;
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  const domHit = c.doms.has(d.getUTCDate()) || (c.lastDom && d.getUTCDate() === lastDay);
  const dowHit = c.dows.has(d.getUTCDay());
  if (c.domAny && c.dowAny) return true;
  if (c.domAny) return dowHit;
  if (c.dowAny) return domHit;
  return domHit || dowHit;
}

/** Does wall time `w` match? */
export function refMatches(c: RefCron, w: number): boolean {
  const d = new Date(w);
  return c.minutes.has(d.getUTCMinutes()) && c.hours.has(d.getUTCHours()) && refDayMatches(c, w);
}

/** Local wall reading of an instant, to the minute, from Intl's formatted date and time. */
export function wallReader(zone: string): (t: number) => number {
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
  });
  return (t) => {
    const m = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+)$/.exec(fmt.format(t));
    if (!m) throw new Error(`unexpected Intl output ${fmt.format(t)}`);
    return Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), Number(m[4]), Number(m[5]));
  };
}

/** A stretch of UTC time with one constant offset. */
interface Stretch {
  from: number;
  to: number;
  offset: number;
}

/** A UTC span around a transition, read minute by minute. */
interface Window {
  from: number;
  to: number;
  instants: number[];
  walls: number[];
  /** Wall minute → the instants (ascending) that read it. */
  occurrences: Map<number, number[]>;
}

export interface ZoneSurvey {
  zone: string;
  stretches: Stretch[];
  windows: Window[];
}

/**
 * Splits [from, to) into constant-offset stretches and minute-by-minute windows of ±1 day around every place
 * where 6-hourly samples of the wall clock do not advance by 6 hours.
 */
export function surveyZone(zone: string, from: number, to: number): ZoneSurvey {
  const wall = wallReader(zone);
  const spans: [number, number][] = [];
  let prev = from;
  let prevWall = wall(from);
  for (let t = from + SAMPLE; t <= to; t += SAMPLE) {
    const w = wall(t);
    if (w - prevWall !== SAMPLE) {
      const a = Math.max(from, prev - DAY);
      const b = Math.min(to, t + DAY);
      const last = spans.at(-1);
      if (last && a <= last[1]) last[1] = b;
      else spans.push([a, b]);
    }
    prev = t;
    prevWall = w;
  }
  const windows: Window[] = spans.map(([a, b]) => {
    const instants: number[] = [];
    const walls: number[] = [];
    const occurrences = new Map<number, number[]>();
    for (let t = a; t < b; t += MIN) {
      const w = wall(t);
      instants.push(t);
      walls.push(w);
      const list = occurrences.get(w);
      if (list) list.push(t);
      else occurrences.set(w, [t]);
    }
    return { from: a, to: b, instants, walls, occurrences };
  });
  const stretches: Stretch[] = [];
  let cursor = from;
  for (const w of [...windows, { from: to, to }]) {
    if (w.from > cursor) stretches.push({ from: cursor, to: w.from, offset: wall(cursor) - cursor });
    cursor = w.to;
  }
  return { zone, stretches, windows };
}

/** Every firing instant of `expr` in the surveyed span, sorted and distinct. */
export function referenceFirings(survey: ZoneSurvey, expr: string): number[] {
  const c = refParse(expr);
  const out: number[] = [];
  for (const s of survey.stretches) {
    const wFrom = s.from + s.offset;
    const wTo = s.to + s.offset;
    for (let day = Math.floor(wFrom / DAY) * DAY; day < wTo; day += DAY) {
      if (!refDayMatches(c, day)) continue;
      for (const h of c.hours) {
        for (const m of c.minutes) {
          const w = day + h * HOUR + m * MIN;
          if (w >= wFrom && w < wTo) out.push(w - s.offset);
        }
      }
    }
  }
  for (const win of survey.windows) {
    const wFrom = win.walls[0]!;
    const wTo = win.walls.at(-1)! + MIN;
    for (let w = wFrom; w < wTo; w += MIN) {
      if (!refMatches(c, w)) continue;
      const occ = win.occurrences.get(w) ?? [];
      if (c.interval) {
        for (const t of occ) out.push(t);
      } else if (occ.length > 0) {
        out.push(Math.min(...occ));
      } else {
        const i = win.walls.findIndex((x) => x > w);
        out.push(win.instants[i]!);
      }
    }
  }
  const sorted = Float64Array.from(out).sort();
  return [...sorted.filter((t, i) => i === 0 || t !== sorted[i - 1])];
}
