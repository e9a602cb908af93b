// What a CronOperation or WatchOperation reconcile decided (decideCron, decideWatch) for the shared shell
// (run-core.ts) to carry out, and the pieces of status both decisions build. Its own file so that
// refused.ts, which rewrites a plan after a refused create, and both decisions use the plan's shape
// without importing each other.

import type { EventType } from '@vworkspace/runtime';
import { type Condition, setCondition } from '@vworkspace/runtime';
import { CONDITION_READY, type CronOperationStatus, type Operation } from '../api/index.ts';

/** status.missedSlots keeps this many (the schema's maxItems). */
export const MAX_MISSED_SLOTS = 10;

export interface PlannedEvent {
  type: EventType;
  reason: string;
  note: string;
}

/** What both decisions plan: the runs to start and stop, the history to prune, status and Events. */
export interface RunPlan<S> {
  /** Create these Operations (or adopt those that already exist), in order. */
  create: Operation[];
  /** Running Operations to cancel gracefully (spec.cancel: true) — Replace. Never deleted. */
  cancel: string[];
  /** Finished Operations beyond the history limits, oldest first. */
  prune: string[];
  events: PlannedEvent[];
  status: S;
}

export interface CronPlan extends RunPlan<CronOperationStatus> {
  /** Remove the skip-next annotation (it was consumed by `handledSlot`). */
  removeSkipNext: boolean;
  /**
   * The slot this reconcile handled (created, adopted, skipped, missed or passed while suspended): the
   * new status.lastScheduleTime. The controller remembers it so a stale cache never handles it twice.
   */
  handledSlot?: Date;
  /** Slots passed over because later ones came due before this reconcile (only the latest runs). */
  skippedSlots?: number;
  /** Reconcile again at the next slot; absent when no slot is planned (invalid schedule). */
  requeueAfterMs?: number;
}

/** The Ready condition of a CronOperation's or WatchOperation's status, set on `prev`. */
export function readyCondition(
  prev: readonly Condition[] | undefined,
  status: 'True' | 'False',
  reason: string,
  message: string,
  generation: number | undefined,
  now: Date,
): Condition[] {
  return setCondition(
    prev,
    {
      type: CONDITION_READY,
      status,
      reason,
      message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    },
    now,
  );
}

/** `o` without its undefined-valued fields (a status as the API server would store it). */
export function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
