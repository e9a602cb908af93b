// What a CronOperation reconcile decided (decideCron in cron-decide.ts) for its controller to carry out.
// Its own file so that refused.ts, which rewrites a plan after a refused create, and watch-decide.ts
// use the plan's shape without importing the decision that makes it.
import type { CronOperationStatus, Operation } from '../api/index.ts';
import type { EventType } from '../runtime/events.ts';

/** status.missedSlots keeps this many (the schema's maxItems). */
export const MAX_MISSED_SLOTS = 10;

export interface PlannedEvent {
  type: EventType;
  reason: string;
  note: string;
}

export interface CronPlan {
  /** Create these Operations (or adopt those that already exist), in order. */
  create: Operation[];
  /** Running Operations to cancel gracefully (spec.cancel: true) — Replace. Never deleted. */
  cancel: string[];
  /** Finished Operations beyond the history limits, oldest first. */
  prune: string[];
  /** Remove the skip-next annotation (it was consumed by `handledSlot`). */
  removeSkipNext: boolean;
  /**
   * The slot this reconcile handled (created, adopted, skipped, missed or passed while suspended): the
   * new status.lastScheduleTime. The controller remembers it so a stale cache never handles it twice.
   */
  handledSlot?: Date;
  /** Slots passed over because later ones came due before this reconcile (only the latest runs). */
  skippedSlots?: number;
  events: PlannedEvent[];
  status: CronOperationStatus;
  /** Reconcile again at the next slot; absent when no slot is planned (invalid schedule). */
  requeueAfterMs?: number;
}
