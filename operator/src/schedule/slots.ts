// CronOperation scheduling decisions, as pure functions of (spec, status, now). Modelled on the Kubernetes
// CronJob controller, minus its known problems:
//  - catch-up after downtime runs only the MOST RECENT missed slot (never a burst, never the earliest one, so a
//    missed deadline cannot stall the schedule the way Crossplane's CronOperation does);
//  - counting missed slots is capped, so a long outage of a per-minute schedule costs bounded work;
//  - a slot missed past startingDeadlineSeconds is reported, and the schedule moves on regardless.

import { createHash } from 'node:crypto';
import { type DstEffect, parseSchedule, type Schedule } from '../time/cron.ts';
import { zoneRules } from '../time/tz.ts';

/** Counting missed slots stops here; beyond it only the most recent one is looked up. */
export const MISSED_COUNT_CAP = 100;

export interface MissedSlots {
  /** The most recent firing in (since, now], if any. */
  slot?: Date;
  /** Firings in (since, now]; MISSED_COUNT_CAP when tooMany. */
  missedCount: number;
  /** More than MISSED_COUNT_CAP firings were missed (CronJob warns at the same point). */
  tooMany: boolean;
}

function toSchedule(expr: string | Schedule, timeZone: string | undefined): Schedule {
  return typeof expr === 'string' ? parseSchedule(expr, timeZone) : expr;
}

/**
 * The latest firing in (since, now], or undefined. Looks back over windows growing ×4 from one minute, so the
 * work is bounded by the firings in a window a few times the distance to that firing, not by the outage length.
 */
export function latestFiring(schedule: Schedule, since: Date, now: Date): Date | undefined {
  const s = since.getTime();
  const n = now.getTime();
  if (n <= s) return undefined;
  for (let span = 60_000; ; span *= 4) {
    const start = Math.max(s, n - span);
    let t = schedule.next(new Date(start)).at;
    if (t.getTime() <= n) {
      for (;;) {
        const u = schedule.next(t).at;
        if (u.getTime() > n) return t;
        t = u;
      }
    }
    if (start === s) return undefined;
  }
}

/** Missed firings of a schedule between the last scheduled (or creation) time and now. */
export function mostRecentMissed(
  expr: string | Schedule,
  timeZone: string | undefined,
  since: Date,
  now: Date,
): MissedSlots {
  const schedule = toSchedule(expr, timeZone);
  const n = now.getTime();
  let count = 0;
  let last: Date | undefined;
  let t = since;
  for (;;) {
    const next = schedule.next(t).at;
    if (next.getTime() > n)
      return last ? { slot: last, missedCount: count, tooMany: false } : { missedCount: 0, tooMany: false };
    if (count === MISSED_COUNT_CAP) {
      return {
        slot: latestFiring(schedule, next, now) ?? next,
        missedCount: MISSED_COUNT_CAP,
        tooMany: true,
      };
    }
    count++;
    last = next;
    t = next;
  }
}

export interface RunInput {
  schedule: string;
  timeZone?: string;
  /**
   * status.lastScheduleTime: the last slot handled — run, skipped (skip-next) or reported missed. Setting it to
   * missedPastDeadline is what stops that slot being reported again.
   */
  lastScheduleTime?: Date;
  /** metadata.creationTimestamp: where counting starts before the first run. */
  creationTime: Date;
  now: Date;
  startingDeadlineSeconds?: number;
}

export interface RunDecision {
  /** Create (or adopt) the Operation for this slot now. */
  runSlot?: Date;
  /**
   * The most recent slot, missed by more than startingDeadlineSeconds: do not run it; report it (Event +
   * status.missedSlots) and set lastScheduleTime to it.
   */
  missedPastDeadline?: Date;
  /** Firings skipped without running besides runSlot/missedPastDeadline (capped; see MissedSlots). */
  skippedCount: number;
  /**
   * More than MISSED_COUNT_CAP slots were missed. With startingDeadlineSeconds only the slots inside the
   * deadline window (now − deadline, now] count, as in the CronJob controller: slots older than that
   * could never have run anyway, so a short deadline after a long outage is no reason to warn.
   */
  tooManyMissed: boolean;
  /** The next firing strictly after now (and after lastScheduleTime): status.nextScheduleTime. */
  next: Date;
  /** Requeue after this long to act on `next`. */
  requeueAfterMs: number;
}

/** What a CronOperation reconcile should do now. Pure: same input, same answer (restarts are idempotent). */
export function decideRun(input: RunInput): RunDecision {
  const schedule = parseSchedule(input.schedule, input.timeZone);
  const since = input.lastScheduleTime ?? input.creationTime;
  const nowMs = input.now.getTime();
  const deadline = input.startingDeadlineSeconds;
  // Count only inside the deadline window; its boundary is inclusive, and counting excludes `from`.
  const from =
    deadline === undefined ? since : new Date(Math.max(since.getTime(), nowMs - deadline * 1000 - 1));
  const missed = mostRecentMissed(schedule, undefined, from, input.now);
  // Never schedule at or before a slot already run, even if this replica's clock is behind.
  const next = schedule.next(new Date(Math.max(nowMs, since.getTime()))).at;
  const decision: RunDecision = {
    skippedCount: Math.max(0, missed.missedCount - 1),
    tooManyMissed: missed.tooMany,
    next,
    requeueAfterMs: Math.max(0, next.getTime() - nowMs),
  };
  // Nothing inside the window: the most recent slot, if any, is older than the deadline.
  const slot = missed.slot ?? (from === since ? undefined : latestFiring(schedule, since, from));
  if (!slot) return decision;
  if (deadline !== undefined && nowMs - slot.getTime() > deadline * 1000) {
    decision.missedPastDeadline = slot;
    return decision;
  }
  decision.runSlot = slot;
  return decision;
}

// Kubernetes names and label values stop at 63 characters; the Operation name doubles as a label value.
const MAX_NAME = 63;

/**
 * `<cronName>-<unix minutes of slot>`, like CronJob's `<name>-<unix/60>`: one name per slot, so a restarted or
 * second leader gets AlreadyExists and adopts instead of running the slot twice. Long names are cut and
 * given a hash of the full name, so two CronOperations sharing a long prefix never collide.
 */
export function operationNameForSlot(cronName: string, slot: Date): string {
  return boundedName(cronName, String(Math.floor(slot.getTime() / 60_000)), MAX_NAME);
}

/** `<base>-<suffix>` in at most `max` characters: a base that does not fit is cut and given 8 hex of its hash. */
export function boundedName(base: string, suffix: string, max: number): string {
  const tail = `-${suffix}`;
  if (base.length + tail.length <= max) return `${base}${tail}`;
  const hash = createHash('sha256').update(base).digest('hex').slice(0, 8);
  const room = max - tail.length - hash.length - 1;
  // Cutting may leave a trailing "-" or "."; drop them so the name stays a valid DNS label.
  const head = base.slice(0, room).replace(/[-.]+$/, '');
  return `${head}-${hash}${tail}`;
}

export interface NextRun {
  /** The firing instant, RFC 3339 UTC ("2025-03-09T07:00:00.000Z"). */
  utc: string;
  /** The same instant on the zone's clock with its offset ("2025-03-09T03:00:00-04:00"). */
  local: string;
  /** DST moved or doubled this run: its wall time fell in a gap, or occurs twice that day. */
  dstShifted: boolean;
}

/** status.nextRuns: the next `n` firings strictly after `after`. */
export function nextRuns(expr: string, timeZone: string | undefined, after: Date, n = 5): NextRun[] {
  const schedule = parseSchedule(expr, timeZone);
  const zone = zoneRules(schedule.timeZone);
  const out: NextRun[] = [];
  let t = after;
  for (let i = 0; i < n; i++) {
    const f = schedule.next(t);
    const dst: DstEffect = f.dst;
    out.push({
      utc: f.at.toISOString(),
      local: localIso(f.at.getTime(), zone.offsetAt(f.at.getTime())),
      dstShifted: dst !== 'none',
    });
    t = f.at;
  }
  return out;
}

/** "YYYY-MM-DDTHH:MM:SS±HH:MM" for instant t seen at `offset` ms. */
export function localIso(t: number, offset: number): string {
  const wall = new Date(t + offset).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(Math.floor(abs % 60)).padStart(2, '0');
  return `${wall}${sign}${hh}:${mm}`;
}
