// Time-zone arithmetic on top of Intl: UTC offsets, transitions, and wall-clock → instant resolution.
//
// Intl.DateTimeFormat costs several microseconds per call, far too slow to ask it about every candidate
// minute, so each zone's transitions are found once per UTC year (sampled every 12 h, then bisected to the
// second) and every later question is a table lookup. Two transitions that cancel out within one 12-hour
// sample would go unseen; no zone in the tz database has had that since offsets were standardised.

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** A change of UTC offset (offsets are local − UTC in ms). */
export interface ZoneTransition {
  at: number;
  before: number;
  after: number;
}

/**
 * The instants whose local wall-clock reading is a given wall time. `instants` is sorted: one entry normally,
 * two in a fall-back overlap, none in a spring-forward gap; then `gapEnd` is the first instant after the gap
 * (the transition itself).
 */
export interface WallResolution {
  instants: number[];
  gapEnd?: number;
}

interface YearTable {
  start: number;
  end: number;
  startOffset: number;
  transitions: ZoneTransition[];
}

const SAMPLE_STEP = 12 * HOUR;
// Offsets stay within −12 h … +14 h, so the instants reading a wall time w lie in [w − 14 h, w + 12 h].
const RESOLVE_BEFORE = 15 * HOUR;
const RESOLVE_AFTER = 13 * HOUR;

const OFFSET_RE = /GMT(?:([+-])(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?)?$/;

export class ZoneRules {
  readonly zone: string;
  readonly #fmt: Intl.DateTimeFormat;
  readonly #years = new Map<number, YearTable>();
  // Queries cluster in time: the last table used answers most of them without building a Date.
  #last: YearTable | undefined;

  constructor(zone: string) {
    this.zone = zone;
    this.#fmt = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
  }

  /** UTC offset (local − UTC, ms) in effect at instant t. */
  offsetAt(t: number): number {
    const table = this.#tableFor(t);
    let offset = table.startOffset;
    for (const tr of table.transitions) {
      if (tr.at > t) break;
      offset = tr.after;
    }
    return offset;
  }

  /** Local wall-clock reading of instant t, as "naive" ms (the wall fields read through Date's UTC getters). */
  wallAt(t: number): number {
    return t + this.offsetAt(t);
  }

  /** Transitions with a < at ≤ b, in order. */
  transitionsBetween(a: number, b: number): ZoneTransition[] {
    const out: ZoneTransition[] = [];
    for (let table = this.#tableFor(a); ; table = this.#tableFor(table.end)) {
      for (const tr of table.transitions) {
        if (tr.at > a && tr.at <= b) out.push(tr);
      }
      if (table.end > b) return out;
    }
  }

  /** Every instant whose wall-clock reading is exactly `wall` (naive ms), or the end of the gap it falls in. */
  resolve(wall: number): WallResolution {
    const lo = wall - RESOLVE_BEFORE;
    const hi = wall + RESOLVE_AFTER;
    if (!this.#anyTransition(lo, hi)) return { instants: [wall - this.offsetAt(wall)] };
    const trs = this.transitionsBetween(lo, hi);
    const instants: number[] = [];
    let segStart = lo;
    let offset = this.offsetAt(lo);
    for (const tr of trs) {
      const t = wall - offset;
      if (t >= segStart && t < tr.at) instants.push(t);
      segStart = tr.at;
      offset = tr.after;
    }
    const last = wall - offset;
    if (last >= segStart && last <= hi) instants.push(last);
    if (instants.length > 0) return { instants };
    // A gap: the clock jumped from before `wall` to after it at some transition.
    for (const tr of trs) {
      if (tr.at + tr.before <= wall && wall < tr.at + tr.after) return { instants, gapEnd: tr.at };
    }
    // Unreachable for real tz data (every wall time either occurs or lies in a jump); fail loudly rather than guess.
    throw new Error(`cannot resolve wall time ${new Date(wall).toISOString().slice(0, 16)} in ${this.zone}`);
  }

  #anyTransition(a: number, b: number): boolean {
    const ta = this.#tableFor(a);
    if (b < ta.end) return ta.transitions.some((tr) => tr.at > a && tr.at <= b);
    return this.transitionsBetween(a, b).length > 0;
  }

  #rawOffset(t: number): number {
    const m = OFFSET_RE.exec(this.#fmt.format(t));
    if (!m) throw new Error(`unexpected offset format from Intl for ${this.zone}: ${this.#fmt.format(t)}`);
    if (!m[1]) return 0;
    const sign = m[1] === '-' ? -1 : 1;
    return sign * ((Number(m[2]) * 60 + Number(m[3] ?? 0)) * MINUTE + Number(m[4] ?? 0) * 1000);
  }

  #tableFor(t: number): YearTable {
    const last = this.#last;
    if (last !== undefined && t >= last.start && t < last.end) return last;
    const table = this.#year(new Date(t).getUTCFullYear());
    this.#last = table;
    return table;
  }

  #year(y: number): YearTable {
    const cached = this.#years.get(y);
    if (cached) return cached;
    const start = Date.UTC(y, 0, 1);
    const end = Date.UTC(y + 1, 0, 1);
    const startOffset = this.#rawOffset(start);
    const transitions: ZoneTransition[] = [];
    let prevT = start;
    let prevOffset = startOffset;
    for (let t = start + SAMPLE_STEP; t <= end; t += SAMPLE_STEP) {
      const offset = this.#rawOffset(t);
      let lo = prevT;
      let loOffset = prevOffset;
      // Several changes inside one sample: find each in turn.
      while (loOffset !== offset) {
        const at = this.#firstChange(lo, t, loOffset);
        const after = this.#rawOffset(at);
        // A change exactly at `end` is kept here: the next year's table starts already past it.
        transitions.push({ at, before: loOffset, after });
        lo = at;
        loOffset = after;
      }
      prevT = t;
      prevOffset = offset;
    }
    const table = { start, end, startOffset, transitions };
    this.#years.set(y, table);
    return table;
  }

  /** Smallest whole second in (lo, hi] whose offset differs from loOffset (one exists: offset(hi) differs). */
  #firstChange(lo: number, hi: number, loOffset: number): number {
    let a = lo;
    let b = hi;
    while (b - a > 1000) {
      const mid = a + Math.floor((b - a) / 2000) * 1000;
      if (this.#rawOffset(mid) === loOffset) a = mid;
      else b = mid;
    }
    return b;
  }
}

const rulesCache = new Map<string, ZoneRules>();

/** Shared, lazily filled rules for a zone the caller has already validated (see validateTimeZone). */
export function zoneRules(zone: string): ZoneRules {
  let rules = rulesCache.get(zone);
  if (!rules) {
    rules = new ZoneRules(zone);
    rulesCache.set(zone, rules);
  }
  return rules;
}

let supported: Set<string> | undefined;
let supportedLower: Map<string, string> | undefined;

const IANA_SHAPE = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;
// Every IANA name (canonical or link) starts each path segment with a capital letter: "America/Port-au-Prince",
// "Etc/GMT+5", "EST5EDT", "UTC". Intl matches names case-insensitively; Go's time.LoadLocation (and so a
// Kubernetes CronJob) does not, so a miscased name is rejected here too.
const SEGMENTS_CAPITALISED = /^[A-Z][^/]*(?:\/[A-Z][^/]*)*$/;

/**
 * Why `zone` is not an IANA time-zone name, or undefined when it is. Accepts Intl's canonical names and the
 * links (aliases) Intl also knows (UTC, Etc/*, Asia/Kolkata, US/Eastern, …); rejects UTC-offset strings,
 * "Local", and miscased names.
 */
export function timeZoneProblem(zone: string): string | undefined {
  if (zone === '') return 'time zone must not be empty (omit it for UTC)';
  if (zone.trim() !== zone) return `time zone "${zone}" has surrounding whitespace`;
  if (zone === 'Local' || zone.toLowerCase() === 'local') {
    return '"Local" is not allowed: the operator host\'s zone is not part of the spec; use an IANA name such as "Europe/Berlin"';
  }
  if (/^[+-]\d/.test(zone)) {
    return `"${zone}" is a UTC offset, not an IANA time zone name; use a region name such as "Asia/Kolkata", or "UTC"`;
  }
  supported ??= new Set(Intl.supportedValuesOf('timeZone'));
  if (supported.has(zone)) return undefined;
  supportedLower ??= new Map([...supported].map((z) => [z.toLowerCase(), z]));
  const sameButCase = supportedLower.get(zone.toLowerCase());
  if (sameButCase)
    return `unknown time zone "${zone}" (names are case-sensitive): did you mean "${sameButCase}"?`;
  const unknown = `unknown time zone "${zone}": use an IANA name such as "America/New_York", "Europe/Berlin" or "UTC"`;
  if (!IANA_SHAPE.test(zone)) return unknown;
  let canonical: string;
  try {
    canonical = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return unknown;
  }
  if (!SEGMENTS_CAPITALISED.test(zone)) {
    return `unknown time zone "${zone}" (names are case-sensitive): did you mean "${canonical}"?`;
  }
  return undefined;
}
