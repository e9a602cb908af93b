// What a CronOperation or WatchOperation says when the API server (usually the admission webhook)
// refuses an Operation it tries to create: never a silent stall. The run or trigger counts as handled
// (the schedule moves on; a CronOperation records the slot in status.missedSlots), Ready turns
// False/OperationRefused with the refusal, and a Warning Event carries it. Ready stays so until an
// Operation is created again. A refusal is a 4xx that retrying the same request cannot change; anything
// else (5xx, a webhook lookup that failed, the network) is retried with backoff instead: the runtime's
// refusalOf is the one classification.

import { type Condition, formatTime, setCondition } from '@vworkspace/runtime';
import {
  ANNOTATION_CREATED_BY,
  ANNOTATION_RUN_NOW,
  ANNOTATION_SCHEDULED_TIME,
  CONDITION_READY,
  type Operation,
} from '../api/index.ts';
import { type CronPlan, MAX_MISSED_SLOTS, type PlannedEvent } from './run-plan.ts';

export const OPERATION_REFUSED = 'OperationRefused';

export interface Refusal {
  /** The Operation that was not created. */
  operation: string;
  /** What the run was for: `the run scheduled for <time>`, `<trigger> on ApplicationInstance <name>`. */
  what: string;
  /** The API server's message (the webhook's denial names the field and what to do). */
  message: string;
}

/**
 * Why a run's name is not ours: an Operation of that name exists whose controller is not this scheduler
 * (someone pre-created it). It is never adopted: its outcome is not the run's.
 */
export function nameTakenError(kind: string, existing: Operation): Error {
  const by = existing.metadata.annotations?.[ANNOTATION_CREATED_BY];
  return new Error(
    `Operation ${existing.metadata.name} already exists and was not created by this ${kind} (its controller ownerReference is not this ${kind}${by ? `; created by ${by}` : ''}), so it is not taken as this run and nothing runs for it. Find out who created it and delete it; the next run uses its own name`,
  );
}

/** Why creating `operation` failed, from the API server's error (its message never holds Secret data). */
export function refusalFor(operation: string, what: string, err: unknown): Refusal {
  return { operation, what, message: err instanceof Error ? err.message : String(err) };
}

interface StatusWithReady {
  conditions?: Condition[];
  active?: { name: string }[];
}

/**
 * The status and events of a plan some of whose creates were refused: Ready=False/OperationRefused, the
 * refused Operations out of status.active, their OperationCreated events replaced by one Warning each.
 */
export function withRefusals<S extends StatusWithReady>(
  status: S,
  events: readonly PlannedEvent[],
  refusals: readonly Refusal[],
  generation: number | undefined,
  now: Date,
): { status: S; events: PlannedEvent[] } {
  if (refusals.length === 0) return { status, events: [...events] };
  const names = new Set(refusals.map((r) => r.operation));
  const notes = refusals.map(
    (r) => `creating Operation ${r.operation} for ${r.what} was refused: ${r.message}`,
  );
  const message = `${notes.join('; ')}. Nothing runs until this is fixed; the next run or trigger tries again. If the requester's access is what is missing, whoever may run this type on the target must edit (re-apply) this object.`;
  const active = status.active?.filter((a) => !names.has(a.name));
  const next: S = {
    ...status,
    conditions: setCondition(
      status.conditions,
      {
        type: CONDITION_READY,
        status: 'False',
        reason: OPERATION_REFUSED,
        message,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
      },
      now,
    ),
  };
  if (active?.length) next.active = active;
  else delete next.active;
  return {
    status: next,
    events: [
      ...events.filter(
        (e) => !(e.reason === 'OperationCreated' && [...names].some((n) => e.note.includes(n))),
      ),
      ...notes.map((note) => ({ type: 'Warning' as const, reason: OPERATION_REFUSED, note })),
    ],
  };
}

/**
 * Keeps Ready=False/OperationRefused through reconciles that create nothing: only an Operation created
 * again (or a state that says more, e.g. Suspended) replaces it. `computed` is the plan's conditions.
 */
export function keepRefusal(
  prev: readonly Condition[] | undefined,
  computed: Condition[] | undefined,
  createdSomething: boolean,
): Condition[] | undefined {
  const before = prev?.find((c) => c.type === CONDITION_READY);
  const after = computed?.find((c) => c.type === CONDITION_READY);
  if (createdSomething || !before || before.reason !== OPERATION_REFUSED || after?.status !== 'True')
    return computed;
  return (computed ?? []).map((c) => (c.type === CONDITION_READY ? before : c));
}

/**
 * A CronOperation's plan after some of its creates were refused: each refused run stays handled
 * (status.lastScheduleTime moves on, so nothing is retried in a loop); a slot none of whose Operations
 * was created is recorded in status.missedSlots as OperationRefused. A run-now request counts as acted on.
 */
export function refuseCronRuns(
  plan: CronPlan,
  refused: readonly { op: Operation; err: unknown }[],
  generation: number | undefined,
  now: Date,
): CronPlan {
  if (refused.length === 0) return plan;
  const fleet = new Set(plan.create.map((o) => o.spec.targetRef.name)).size > 1;
  const slotOf = (o: Operation) => o.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME];
  const refusals = refused.map(({ op, err }) => {
    const slot = slotOf(op);
    const run = slot ? `the run scheduled for ${slot}` : `the run requested by ${ANNOTATION_RUN_NOW}`;
    return refusalFor(op.metadata.name ?? '', fleet ? `${run} on ${op.spec.targetRef.name}` : run, err);
  });
  const { status, events } = withRefusals(plan.status, plan.events, refusals, generation, now);
  const names = new Set(refusals.map((r) => r.operation));
  const slots = new Set(refused.map(({ op }) => slotOf(op)).filter((s): s is string => s !== undefined));
  const missedNow = [...slots].filter((at) =>
    plan.create.filter((o) => slotOf(o) === at).every((o) => names.has(o.metadata.name ?? '')),
  );
  if (missedNow.length > 0) {
    const missed = (status.missedSlots ?? []).filter((m) => !missedNow.includes(m.scheduledTime));
    status.missedSlots = [
      ...missed,
      ...missedNow.map((at) => ({
        scheduledTime: at,
        detectedAt: formatTime(now),
        reason: 'OperationRefused' as const,
      })),
    ].slice(-MAX_MISSED_SLOTS);
  }
  return { ...plan, create: plan.create.filter((o) => !names.has(o.metadata.name ?? '')), status, events };
}
