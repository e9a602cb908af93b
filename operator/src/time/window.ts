// Maintenance windows: a window opens at every firing of a cron schedule (same syntax, zones and DST policy as
// CronOperation) and stays open for a Go-style duration. Overlapping or touching windows merge into one.

import { parseSchedule, type Schedule, ScheduleError } from './cron.ts';
import { parsePositiveDuration } from './duration.ts';

export interface MaintenanceWindow {
  schedule: string;
  /** Go duration, e.g. "2h30m". */
  duration: string;
  timeZone?: string;
}

export interface WindowState {
  open: boolean;
  /**
   * Open: the earliest opening within the last `duration` (the one holding the window open now).
   * Closed: the next opening — wake a Blocked Operation exactly then.
   */
  opensAt?: Date;
  /** When that opening ends; absent if openings keep merging past MERGE_LIMIT (effectively always open). */
  closesAt?: Date;
}

export type WindowValidation =
  | { ok: true }
  | { ok: false; field: 'schedule' | 'timeZone' | 'duration'; message: string };

/** Follow at most this many merged openings when looking for a window's end. */
export const MERGE_LIMIT = 1000;

export function validateWindow(w: MaintenanceWindow): WindowValidation {
  try {
    parseSchedule(w.schedule, w.timeZone);
  } catch (err) {
    if (err instanceof ScheduleError) return { ok: false, field: err.field, message: err.message };
    throw err;
  }
  const d = parsePositiveDuration(w.duration);
  return d.ok ? { ok: true } : { ok: false, field: 'duration', message: d.message };
}

/** Is the window open at `now`, and when does it next open or close. Throws on an invalid window. */
export function windowState(w: MaintenanceWindow, now: Date): WindowState {
  const schedule = parseSchedule(w.schedule, w.timeZone);
  const d = parsePositiveDuration(w.duration);
  if (!d.ok) throw new RangeError(d.message);
  const n = now.getTime();
  // The window is open iff some opening lies in (now − duration, now].
  const recent = schedule.next(new Date(n - d.ms)).at;
  if (recent.getTime() <= n) {
    return { open: true, opensAt: recent, ...closing(schedule, recent, d.ms) };
  }
  const opensAt = schedule.next(now).at;
  return { open: false, opensAt, ...closing(schedule, opensAt, d.ms) };
}

function closing(schedule: Schedule, opening: Date, ms: number): { closesAt?: Date } {
  let at = opening;
  let closesAt = opening.getTime() + ms;
  for (let i = 0; i < MERGE_LIMIT; i++) {
    const next = schedule.next(at).at;
    if (next.getTime() > closesAt) return { closesAt: new Date(closesAt) };
    closesAt = Math.max(closesAt, next.getTime() + ms);
    at = next;
  }
  return {};
}

/** How many windows ahead startWindow looks for one long enough for the expected duration. */
export const START_SEARCH_LIMIT = 64;

export interface StartWindow {
  /** An Operation expected to take that long may start now. */
  ok: boolean;
  /**
   * Not ok: the first opening of a window with at least the expected duration in it (wake exactly then);
   * absent when none of the next START_SEARCH_LIMIT windows is long enough.
   */
  wakeAt?: Date;
  /** Not ok although the window is open: it closes then, too soon for the expected duration. */
  closesAt?: Date;
}

/**
 * May an Operation expected to run `expectedMs` start at `now`? Only inside the window, and only while at least
 * `expectedMs` of it is left (a window that never closes always has room). Throws on an invalid window.
 */
export function startWindow(w: MaintenanceWindow, now: Date, expectedMs = 0): StartWindow {
  const s = windowState(w, now);
  const room = (st: WindowState, from: Date) =>
    st.closesAt === undefined || st.closesAt.getTime() - from.getTime() >= expectedMs;
  if (s.open && room(s, now)) return { ok: true };
  // The next opening after this window: closed at its close, so windowState there names the next one.
  let opening = s.open && s.closesAt ? windowState(w, s.closesAt).opensAt : s.opensAt;
  for (let i = 0; opening && i < START_SEARCH_LIMIT; i++) {
    const st = windowState(w, opening);
    if (room(st, opening)) return { ok: false, wakeAt: opening, ...(s.open ? { closesAt: s.closesAt } : {}) };
    opening = st.closesAt ? windowState(w, st.closesAt).opensAt : undefined;
  }
  return { ok: false, ...(s.open ? { closesAt: s.closesAt } : {}) };
}
