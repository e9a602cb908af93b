// Which slots missed while the operator was not running run, per spec.catchUp (docs/adr/0047). Pure.
//
// Policies: Skip runs none of the slots that came due before this operator started (runningSince), only
// the most recent one after it; Latest runs the most recent slot (decideRun, today's behaviour); All runs
// the most recent maxRuns slots, oldest first. startingDeadlineSeconds applies under every policy. Each
// slot runs under the Operation name derived from its instant, so running one again only adopts it. The
// work is bounded by maxRuns + MAX_MISSED_SLOTS lookups, not by the outage: the slots are found newest
// first with latestFiring, and older ones are only counted (capped, as in slots.ts).

import type { CatchUpPolicy } from '../api/catch-up.ts';
import type { MissedSlot } from '../api/cronoperation.ts';
import type { Schedule } from '../time/cron.ts';
import { MAX_MISSED_SLOTS } from './run-plan.ts';
import { latestFiring, mostRecentMissed } from './slots.ts';

export interface CatchUpInput {
  schedule: Schedule;
  policy: CatchUpPolicy;
  /** Policy All: how many of the most recent slots run. */
  maxRuns?: number;
  /** status.lastScheduleTime, or the creation time before the first run: slots after it are due. */
  since: Date;
  now: Date;
  startingDeadlineSeconds?: number;
  /** When this operator began scheduling: Skip passes over the slots before it (they came due while down). */
  runningSince: Date;
}

export interface NotRun {
  slot: Date;
  reason: Extract<MissedSlot['reason'], 'StartingDeadlineExceeded' | 'CatchUpSkipped'>;
}

export interface CatchUpDecision {
  /** Create (or adopt) these slots' Operations, oldest first. */
  run: Date[];
  /** The most recent slots that do not run (at most MAX_MISSED_SLOTS), oldest first. */
  notRun: NotRun[];
  /** Due slots that neither run nor are listed in notRun (counted up to MISSED_COUNT_CAP). */
  uncounted: number;
  /** The most recent due slot: the new status.lastScheduleTime. */
  handled?: Date;
}

/** The decision for the slots in (since, now]. */
export function decideCatchUp(input: CatchUpInput): CatchUpDecision {
  const { schedule, since, now } = input;
  const runs = input.policy === 'All' ? (input.maxRuns ?? 1) : 1;
  // Newest first: enough slots to pick the runs and fill status.missedSlots.
  const due: Date[] = [];
  for (let t = now; due.length < runs + MAX_MISSED_SLOTS; ) {
    const slot = latestFiring(schedule, since, t);
    if (!slot) break;
    due.push(slot);
    t = new Date(slot.getTime() - 1);
  }
  const total = mostRecentMissed(schedule, undefined, since, now).missedCount;
  const late = (slot: Date) =>
    input.startingDeadlineSeconds !== undefined &&
    now.getTime() - slot.getTime() > input.startingDeadlineSeconds * 1000;
  const run: Date[] = [];
  const notRun: NotRun[] = [];
  for (const slot of due) {
    const picked =
      run.length < runs &&
      !late(slot) &&
      (input.policy !== 'Skip' || slot.getTime() >= input.runningSince.getTime()) &&
      (input.policy === 'All' || slot === due[0]);
    if (picked) run.push(slot);
    else if (notRun.length < MAX_MISSED_SLOTS)
      notRun.push({ slot, reason: late(slot) ? 'StartingDeadlineExceeded' : 'CatchUpSkipped' });
  }
  return {
    run: run.reverse(),
    notRun: notRun.reverse(),
    uncounted: Math.max(0, total - run.length - notRun.length),
    ...(due[0] ? { handled: due[0] } : {}),
  };
}
