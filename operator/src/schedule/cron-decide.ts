// What one CronOperation reconcile does, as a pure function of the CronOperation (with the status the
// controller trusts), the Operations it created and now. The controller (cron-controller.ts) carries the
// plan out: remove skip-next, cancel, create (AlreadyExists ⇒ adopt), prune, write status, record Events.
//
// Slot arithmetic is decideRun (slots.ts); this adds suspend, skip-next, concurrencyPolicy, history and
// the status fields on top.

import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  CONDITION_READY,
  type CronOperation,
  type CronOperationStatus,
  LABEL_CRON_OPERATION,
  type MissedSlot,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import { type Condition, setCondition } from '../runtime/conditions.ts';
import type { EventType } from '../runtime/events.ts';
import { formatTime } from '../runtime/normalize.ts';
import { createdOperationMetadata } from './created-metadata.ts';
import { parseSchedule, validateSchedule } from './cron.ts';
import { activeOperations, activeRefs, lastSuccessfulTime, operationsToPrune } from './history.ts';
import { decideRun, latestFiring, nextRuns, operationNameForSlot } from './slots.ts';

/** status.missedSlots keeps this many (the schema's maxItems). */
export const MAX_MISSED_SLOTS = 10;

/** Event reasons of the CronOperation controller. */
export const CRON_EVENT = {
  OperationCreated: 'OperationCreated',
  MissedSchedule: 'MissedSchedule',
  TooManyMissedSchedules: 'TooManyMissedSchedules',
  RunSkipped: 'RunSkipped',
  RunSkippedForbidden: 'RunSkippedForbidden',
  ReplacingOperation: 'ReplacingOperation',
  InvalidSchedule: 'InvalidSchedule',
  InvalidTimeZone: 'InvalidTimeZone',
} as const;

export interface PlannedEvent {
  type: EventType;
  reason: string;
  note: string;
}

export interface CronPlan {
  /** Create this Operation (or adopt it if it already exists). */
  create?: Operation;
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

function parseTime(s: string | undefined): Date | undefined {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** The Operation a CronOperation creates for `slot`: the template, named and labelled for the slot. */
export function operationForSlot(cron: CronOperation, slot: Date): Operation {
  const name = cron.metadata.name ?? '';
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: createdOperationMetadata(
      cron,
      operationNameForSlot(name, slot),
      [LABEL_CRON_OPERATION, name],
      [ANNOTATION_SCHEDULED_TIME, formatTime(slot)],
    ),
    spec: structuredClone(cron.spec.operationTemplate.spec),
  };
}

function ready(
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

function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/**
 * Decides one reconcile. `cron.status` must be the status the controller trusts (the cache, or what it
 * wrote itself if the cache lags); `ops` are the Operations labelled as created by this CronOperation.
 */
export function decideCron(cron: CronOperation, ops: readonly Operation[], now: Date): CronPlan {
  const spec = cron.spec;
  const prev = cron.status ?? {};
  const generation = cron.metadata.generation;
  const zone = spec.timeZone ?? 'UTC';
  const events: PlannedEvent[] = [];
  const plan: CronPlan = { cancel: [], prune: [], removeSkipNext: false, events, status: {} };
  const lastSchedule = parseTime(prev.lastScheduleTime);

  const base = (): CronOperationStatus =>
    withoutUndefined({
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastScheduleTime: prev.lastScheduleTime,
      lastSuccessfulTime: lastSuccessfulTime(ops, prev.lastSuccessfulTime),
      missedSlots: prev.missedSlots?.length ? prev.missedSlots : undefined,
    });
  plan.prune = operationsToPrune(ops, spec);
  const remaining = ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));

  // Invalid schedule or zone (the webhook refuses them, but objects may predate it): say so, run nothing.
  const valid = validateSchedule(spec.schedule, zone);
  if (!valid.ok) {
    const reason = valid.field === 'timeZone' ? CRON_EVENT.InvalidTimeZone : CRON_EVENT.InvalidSchedule;
    const message = `spec.${valid.field}: ${valid.message}; no Operations are created until it is fixed`;
    const before = prev.conditions?.find((c) => c.type === CONDITION_READY);
    if (before?.reason !== reason || before.message !== message)
      events.push({ type: 'Warning', reason, note: message });
    const active = activeRefs(remaining);
    plan.status = withoutUndefined({
      ...base(),
      conditions: ready(prev.conditions, 'False', reason, message, generation, now),
      active: active.length ? active : undefined,
    });
    return plan;
  }

  const decision = decideRun({
    schedule: spec.schedule,
    timeZone: zone,
    ...(lastSchedule ? { lastScheduleTime: lastSchedule } : {}),
    creationTime: parseTime(String(cron.metadata.creationTimestamp ?? '')) ?? now,
    now,
    ...(spec.startingDeadlineSeconds !== undefined
      ? { startingDeadlineSeconds: spec.startingDeadlineSeconds }
      : {}),
  });
  plan.requeueAfterMs = decision.requeueAfterMs;
  let handled: Date | undefined;
  let missed: MissedSlot[] = [...(prev.missedSlots ?? [])];
  let created: Operation | undefined;

  if (spec.suspend) {
    // Slots that come due while suspended are passed over, so resuming never runs an old slot.
    const schedule = parseSchedule(spec.schedule, zone);
    const since = lastSchedule ?? parseTime(String(cron.metadata.creationTimestamp ?? '')) ?? now;
    handled = latestFiring(schedule, since, now);
  } else {
    if (decision.skippedCount > 0) plan.skippedSlots = decision.skippedCount;
    if (decision.tooManyMissed) {
      events.push({
        type: 'Warning',
        reason: CRON_EVENT.TooManyMissedSchedules,
        note: `more than ${decision.skippedCount} slots were missed (operator down or clock moved); only the most recent one is considered`,
      });
    }
    if (decision.missedPastDeadline) {
      const slot = decision.missedPastDeadline;
      handled = slot;
      const at = formatTime(slot);
      if (!missed.some((m) => m.scheduledTime === at)) {
        missed = [
          ...missed,
          { scheduledTime: at, detectedAt: formatTime(now), reason: 'StartingDeadlineExceeded' as const },
        ].slice(-MAX_MISSED_SLOTS);
        events.push({
          type: 'Warning',
          reason: CRON_EVENT.MissedSchedule,
          note: `the run scheduled for ${at} was not started: it is more than startingDeadlineSeconds (${spec.startingDeadlineSeconds}s) late; the schedule moves on to the next slot`,
        });
      }
    }
    if (decision.runSlot) {
      const slot = decision.runSlot;
      const at = formatTime(slot);
      const op = operationForSlot(cron, slot);
      const name = op.metadata.name ?? '';
      const others = activeOperations(remaining).filter((o) => o.metadata.name !== name);
      if (ops.some((o) => o.metadata.name === name)) {
        handled = slot; // created before (restart, or a stale cache): adopt it, never run the slot twice
      } else if (cron.metadata.annotations?.[ANNOTATION_SKIP_NEXT] === 'true') {
        handled = slot;
        plan.removeSkipNext = true;
        events.push({
          type: 'Normal',
          reason: CRON_EVENT.RunSkipped,
          note: `the run scheduled for ${at} was skipped (${ANNOTATION_SKIP_NEXT}); the annotation is removed`,
        });
      } else if (others.length > 0 && spec.concurrencyPolicy === 'Forbid') {
        // Skipped, like CronJob's Forbid: the slot counts as handled (the schedule moves on), is
        // recorded in status.missedSlots, and gets an Event saying which Operation held it up.
        handled = slot;
        if (!missed.some((m) => m.scheduledTime === at)) {
          missed = [
            ...missed,
            { scheduledTime: at, detectedAt: formatTime(now), reason: 'ConcurrencyForbidden' as const },
          ].slice(-MAX_MISSED_SLOTS);
        }
        events.push({
          type: 'Warning',
          reason: CRON_EVENT.RunSkippedForbidden,
          note: `the run scheduled for ${at} was skipped: concurrencyPolicy is Forbid and ${others
            .map((o) => o.metadata.name)
            .join(', ')} is still running`,
        });
      } else {
        if (others.length > 0 && spec.concurrencyPolicy === 'Replace') {
          plan.cancel = others.filter((o) => o.spec?.cancel !== true).map((o) => o.metadata.name ?? '');
          if (plan.cancel.length > 0)
            events.push({
              type: 'Normal',
              reason: CRON_EVENT.ReplacingOperation,
              note: `concurrencyPolicy is Replace: cancelling ${plan.cancel.join(', ')} for the run scheduled for ${at}`,
            });
        }
        handled = slot;
        created = op;
        plan.create = op;
        events.push({
          type: 'Normal',
          reason: CRON_EVENT.OperationCreated,
          note: `created Operation ${name} for the run scheduled for ${at}`,
        });
      }
    }
  }

  if (handled && (!lastSchedule || handled.getTime() > lastSchedule.getTime())) plan.handledSlot = handled;
  const lastScheduleTime = plan.handledSlot ? formatTime(plan.handledSlot) : prev.lastScheduleTime;
  const active = activeRefs(created ? [...remaining, created] : remaining);
  const after = new Date(Math.max(now.getTime(), (plan.handledSlot ?? lastSchedule ?? now).getTime()));
  const upcoming = spec.suspend ? undefined : nextRuns(spec.schedule, zone, after);
  plan.status = withoutUndefined({
    ...base(),
    lastScheduleTime,
    missedSlots: missed.length ? missed : undefined,
    conditions: spec.suspend
      ? ready(
          prev.conditions,
          'False',
          'Suspended',
          'spec.suspend is true: no Operations are created; slots that come due meanwhile are passed over',
          generation,
          now,
        )
      : ready(
          prev.conditions,
          'True',
          'ScheduleActive',
          `runs "${spec.schedule}" in ${zone}`,
          generation,
          now,
        ),
    active: active.length ? active : undefined,
    nextScheduleTime: upcoming ? formatTime(decision.next) : undefined,
    nextRuns: upcoming,
  });
  return plan;
}
