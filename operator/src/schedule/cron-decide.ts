// What one CronOperation reconcile does, as a pure function of the CronOperation (with the status the
// controller trusts), the Operations it created and now. The controller (cron-controller.ts) carries the
// plan out: remove skip-next, cancel, create (AlreadyExists ⇒ adopt), prune, write status, record Events.
//
// Slot arithmetic is decideRun (slots.ts); this adds suspend, skip-next, run-now, fleets (targetSelector),
// concurrencyPolicy, maxConcurrent, history and the status fields on top.
//
// A run is a slot (reason schedule) or a run-now request (reason manual). It targets the one instance of
// operationTemplate.spec.targetRef, or every instance matching spec.targetSelector. concurrencyPolicy is
// applied per target instance (a slot under Forbid skips an instance whose Operation still runs; a run-now
// request waits for it, because a request must not be lost). maxConcurrent caps this CronOperation's running
// Operations: the targets beyond it wait in status.queue and start, oldest run first, as others finish. A
// slot's waiting targets are replaced by the next slot's (a later backup is the better backup); a run-now
// request's are kept until its Operations exist (a request is never lost).

import { createHash } from 'node:crypto';
import { formatTime, setCondition } from '@vworkspace/runtime';
import {
  ANNOTATION_PAUSED,
  ANNOTATION_RUN_NOW,
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  CONDITION_READY,
  type CronOperation,
  type CronOperationStatus,
  LABEL_CRON_OPERATION,
  MAX_OPERATION_NAME_LENGTH,
  MAX_QUEUED_RUNS,
  MAX_ROLLOUT_INSTANCES,
  MAX_RUN_NOW_LENGTH,
  type ManualRun,
  type MissedSlot,
  OPERATION,
  type Operation,
  type RolloutStatus,
  type RunQueue,
} from '../api/index.ts';
import { isPaused } from '../api/paused.ts';
import { matchesLabelSelector } from '../catalog/selectors.ts';
import { parseSchedule, validateSchedule } from '../time/cron.ts';
import { decideCatchUp } from './catch-up.ts';
import { createdOperationMetadata } from './created-metadata.ts';
import { activeOperations, activeRefs, lastSuccessfulTime, operationsToPrune } from './history.ts';
import { keepRefusal } from './refused.ts';
import { ROLLOUT_REASON } from './rollout.ts';
import {
  beginRollout,
  haltedCondition,
  ROLLOUT_EVENT,
  type RolloutStarter,
  stepRollout,
  unfinished,
} from './rollout-run.ts';
import {
  type CronPlan,
  MAX_MISSED_SLOTS,
  type PlannedEvent,
  readyCondition,
  withoutUndefined,
} from './run-plan.ts';
import {
  boundedName,
  decideRun,
  latestFiring,
  MISSED_COUNT_CAP,
  nextRuns,
  operationNameForSlot,
} from './slots.ts';
import { INVALID_OPERATION_TEMPLATE, templateBoundsProblem } from './template-bounds.ts';
import { applyTriggerParameters } from './trigger-parameters.ts';

/** Event reasons of the CronOperation controller. */
export const CRON_EVENT = {
  OperationCreated: 'OperationCreated',
  MissedSchedule: 'MissedSchedule',
  TooManyMissedSchedules: 'TooManyMissedSchedules',
  RunSkipped: 'RunSkipped',
  RunSkippedForbidden: 'RunSkippedForbidden',
  RunSkippedPaused: 'RunSkippedPaused',
  ReplacingOperation: 'ReplacingOperation',
  RunNowPending: 'RunNowPending',
  RunNowRefused: 'RunNowRefused',
  RunQueued: 'RunQueued',
  QueuedRunDropped: 'QueuedRunDropped',
  TriggerParameterMissing: 'TriggerParameterMissing',
  CatchUpSkipped: 'CatchUpSkipped',
  InvalidSchedule: 'InvalidSchedule',
  InvalidTimeZone: 'InvalidTimeZone',
  InvalidOperationTemplate: INVALID_OPERATION_TEMPLATE,
} as const;

/** A scheduled slot or a run-now request. */
export interface CronRun {
  reason: 'schedule' | 'manual';
  /** The slot, or when the run-now request was acted on. */
  time: Date;
  /** The run-now value (reason manual). */
  request?: string;
}

function parseTime(s: string | undefined): Date | undefined {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : new Date(t);
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** How status.manualRun records a run-now value: itself, or `sha256:<hex>` when it is too long to hold. */
export function recordedRequest(value: string): string {
  return value.length <= MAX_RUN_NOW_LENGTH ? value : `sha256:${sha256(value)}`;
}

/** The run's part of an Operation name: the slot's unix minutes, or `m` and 7 hex of the run-now value. */
export function runId(run: CronRun): string {
  return run.reason === 'schedule'
    ? String(Math.floor(run.time.getTime() / 60_000))
    : `m${sha256(run.request ?? '').slice(0, 7)}`;
}

/**
 * The name of the Operation `run` creates for `target`: `<cron>-<run>` for a one-target CronOperation,
 * `<cron>-<run>-<6 hex of the instance name>` for a fleet. Deterministic, so a restart adopts it.
 */
export function runOperationName(cron: CronOperation, run: CronRun, target: string): string {
  const name = cron.metadata.name ?? '';
  if (!cron.spec.targetSelector) {
    return run.reason === 'schedule'
      ? operationNameForSlot(name, run.time)
      : boundedName(name, runId(run), MAX_OPERATION_NAME_LENGTH);
  }
  return boundedName(name, `${runId(run)}-${sha256(target).slice(0, 6)}`, MAX_OPERATION_NAME_LENGTH);
}

/**
 * The Operation `run` creates for `target` (`instance`, when known, is what object.* substitutions read),
 * and the parametersFromTrigger whose value the trigger does not carry.
 */
export function operationForRun(
  cron: CronOperation,
  run: CronRun,
  target: string,
  instance?: ApplicationInstance,
): { op: Operation; missing: string[] } {
  const tmpl = cron.spec.operationTemplate.spec;
  const at = formatTime(run.time);
  const { parameters, missing } = applyTriggerParameters(tmpl.parameters, cron.spec.parametersFromTrigger, {
    variables: {
      'trigger.scheduledTime': at,
      'trigger.reason': run.reason,
      'trigger.request': run.request,
    },
    ...(instance ? { object: instance } : {}),
  });
  const { parameters: _template, ...rest } = structuredClone(tmpl);
  const op: Operation = {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: createdOperationMetadata(
      cron,
      runOperationName(cron, run, target),
      [LABEL_CRON_OPERATION, cron.metadata.name ?? ''],
      run.reason === 'schedule' ? { [ANNOTATION_SCHEDULED_TIME]: at } : { [ANNOTATION_TRIGGER]: 'manual' },
    ),
    spec: { ...rest, ...(parameters ? { parameters } : {}), targetRef: { name: target } },
  };
  return { op, missing };
}

/** The Operation a one-target CronOperation creates for `slot`. */
export function operationForSlot(cron: CronOperation, slot: Date): Operation {
  const target = cron.spec.operationTemplate.spec.targetRef?.name ?? '';
  return operationForRun(cron, { reason: 'schedule', time: slot }, target).op;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Carries runs out against the Operations that exist: creates, cancels (Replace), skips (Forbid) and queues
 * (maxConcurrent; Forbid for run-now requests). One per decideCron call.
 */
class RunPlanner {
  readonly #cron: CronOperation;
  readonly #byName: Map<string, Operation>;
  readonly #instances: Map<string, ApplicationInstance>;
  readonly #plan: CronPlan;
  #running: Operation[];
  #capacity: number;

  constructor(
    cron: CronOperation,
    remaining: Operation[],
    instances: readonly ApplicationInstance[],
    plan: CronPlan,
  ) {
    this.#cron = cron;
    this.#plan = plan;
    this.#byName = new Map(remaining.map((o) => [o.metadata.name ?? '', o]));
    this.#instances = new Map(instances.map((i) => [i.metadata.name ?? '', i]));
    this.#running = activeOperations(remaining);
    const max = cron.spec.maxConcurrent;
    this.#capacity = max === undefined ? Number.POSITIVE_INFINITY : max - this.#running.length;
  }

  /** The run's targets: the fixed one, or the matching instances by name. */
  targets(): string[] {
    const spec = this.#cron.spec;
    if (!spec.targetSelector) return [spec.operationTemplate.spec.targetRef?.name ?? ''];
    return [...this.#instances.values()]
      .filter((i) => matchesLabelSelector(spec.targetSelector, i.metadata.labels ?? {}))
      .map((i) => i.metadata.name ?? '')
      .sort();
  }

  exists(run: CronRun, target: string): boolean {
    return this.#byName.has(runOperationName(this.#cron, run, target));
  }

  /** The target instance carries ops.vworkspace.io/paused: "true" (maintenance): nothing starts on it. */
  paused(target: string): boolean {
    return isPaused(this.#instances.get(target));
  }

  /** This CronOperation's Operations that run for `target`, other than `except`. */
  runningFor(target: string, except?: string): Operation[] {
    return this.#running.filter((o) => o.spec?.targetRef?.name === target && o.metadata.name !== except);
  }

  full(): boolean {
    return this.#capacity <= 0;
  }

  /** Free places under spec.maxConcurrent. */
  room(): number {
    return this.#capacity;
  }

  /** Cancels what runs for `target` (Replace); the Operations still count until they end. */
  replace(target: string, except: string): string[] {
    const cancel = this.runningFor(target, except)
      .filter((o) => o.spec?.cancel !== true && !this.#plan.cancel.includes(o.metadata.name ?? ''))
      .map((o) => o.metadata.name ?? '');
    this.#plan.cancel.push(...cancel);
    return cancel;
  }

  create(run: CronRun, target: string): Operation {
    const { op, missing } = operationForRun(this.#cron, run, target, this.#instances.get(target));
    this.#plan.create.push(op);
    this.#running.push(op);
    this.#byName.set(op.metadata.name ?? '', op);
    this.#capacity--;
    const why =
      run.reason === 'schedule'
        ? `the run scheduled for ${formatTime(run.time)}`
        : `the run requested by ${ANNOTATION_RUN_NOW}=${run.request}`;
    this.#plan.events.push({
      type: 'Normal',
      reason: CRON_EVENT.OperationCreated,
      note: `created Operation ${op.metadata.name} for ${why}${this.#cron.spec.targetSelector ? ` on ApplicationInstance ${target}` : ''}`,
    });
    if (missing.length > 0)
      this.#plan.events.push({
        type: 'Warning',
        reason: CRON_EVENT.TriggerParameterMissing,
        note: `Operation ${op.metadata.name}: ${missing.join(', ')} has no value for ApplicationInstance ${target}, so its parameter keeps the template's value (or none); set it on the instance or change spec.parametersFromTrigger`,
      });
    return op;
  }
}

/**
 * Decides one reconcile. `cron.status` must be the status the controller trusts (the cache, or what it
 * wrote itself if the cache lags); `ops` are the Operations labelled as created by this CronOperation;
 * `instances` the ApplicationInstances of its namespace (fleet targets, object.* substitutions);
 * `runningSince` when this operator began scheduling (catchUp Skip passes over the slots before it; by
 * default none).
 */
export function decideCron(
  cron: CronOperation,
  ops: readonly Operation[],
  now: Date,
  instances: readonly ApplicationInstance[] = [],
  runningSince: Date = new Date(0),
): CronPlan {
  const spec = cron.spec;
  const prev = cron.status ?? {};
  const generation = cron.metadata.generation;
  const zone = spec.timeZone ?? 'UTC';
  const events: PlannedEvent[] = [];
  const plan: CronPlan = { create: [], cancel: [], prune: [], removeSkipNext: false, events, status: {} };
  const lastSchedule = parseTime(prev.lastScheduleTime);

  const base = (): CronOperationStatus =>
    withoutUndefined({
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastScheduleTime: prev.lastScheduleTime,
      lastSuccessfulTime: lastSuccessfulTime(ops, prev.lastSuccessfulTime),
      missedSlots: prev.missedSlots?.length ? prev.missedSlots : undefined,
      manualRun: prev.manualRun,
      queue: prev.queue?.length ? prev.queue : undefined,
      rollout: prev.rollout,
      // The retention pass's (retention-pass.ts), written after this status: carried over unchanged.
      retention: prev.retention,
    });
  // An unfinished rollout decides on its Operations: none of them is pruned until it ends.
  const rolling = unfinished(prev.rollout) ? rolloutOperationNames(cron, prev.rollout) : new Set<string>();
  plan.prune = operationsToPrune(ops, spec).filter((n) => !rolling.has(n));
  const remaining = ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));

  // Invalid schedule or zone, or a template past the parameters' bounds (the webhook refuses them, but
  // objects may predate it or be stored where it does not run): say so, run nothing.
  const valid = validateSchedule(spec.schedule, zone);
  const bounds = templateBoundsProblem(spec.operationTemplate.spec);
  if (!valid.ok || bounds !== undefined) {
    const reason = !valid.ok
      ? valid.field === 'timeZone'
        ? CRON_EVENT.InvalidTimeZone
        : CRON_EVENT.InvalidSchedule
      : CRON_EVENT.InvalidOperationTemplate;
    const message = !valid.ok
      ? `spec.${valid.field}: ${valid.message}; no Operations are created until it is fixed`
      : (bounds ?? '');
    const before = prev.conditions?.find((c) => c.type === CONDITION_READY);
    if (before?.reason !== reason || before.message !== message)
      events.push({ type: 'Warning', reason, note: message });
    const active = activeRefs(remaining);
    plan.status = withoutUndefined({
      ...base(),
      conditions: readyCondition(prev.conditions, 'False', reason, message, generation, now),
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
  const planner = new RunPlanner(cron, remaining, instances, plan);
  let handled: Date | undefined;
  let missed: MissedSlot[] = [...(prev.missedSlots ?? [])];
  let manualRun: ManualRun | undefined = prev.manualRun;
  let queue: RunQueue[] = [...(prev.queue ?? [])];
  let rollout: RolloutStatus | undefined = prev.rollout;
  let rolloutRequeue: Date | undefined;
  const recordMissed = (at: string, reason: MissedSlot['reason']) => {
    if (!missed.some((m) => m.scheduledTime === at))
      missed = [
        ...missed,
        { scheduledTime: at, detectedAt: formatTime(now), ...(reason ? { reason } : {}) },
      ].slice(-MAX_MISSED_SLOTS);
  };

  /** Moves the unfinished rollout on (once per reconcile and run: it records what it starts). */
  const stepRun = (): void => {
    if (!rollout || !unfinished(rollout)) return;
    const run = runOf(rollout);
    const opsByName = new Map(ops.map((o) => [o.metadata.name ?? '', o]));
    const byTarget = new Map(
      rollout.instances.flatMap((i) => {
        const op = opsByName.get(runOperationName(cron, run, i.name));
        return op ? [[i.name, op] as const] : [];
      }),
    );
    const starter: RolloutStarter = {
      waits: (target) =>
        spec.suspend === true ||
        planner.paused(target) ||
        (spec.concurrencyPolicy === 'Forbid' &&
          planner.runningFor(target, runOperationName(cron, run, target)).length > 0),
      room: () => planner.room(),
      start: (target) => {
        const cancel =
          spec.concurrencyPolicy === 'Replace'
            ? planner.replace(target, runOperationName(cron, run, target))
            : [];
        if (cancel.length > 0)
          events.push({
            type: 'Normal',
            reason: CRON_EVENT.ReplacingOperation,
            note: `concurrencyPolicy is Replace: cancelling ${cancel.join(', ')} for the rollout's Operation on ${target}`,
          });
        planner.create(run, target);
      },
    };
    const step = stepRollout({
      strategy: spec.rollout,
      rollout,
      operations: byTarget,
      matching: new Set(planner.targets()),
      annotations: cron.metadata.annotations,
      now,
      starter,
    });
    rollout = step.rollout;
    events.push(...step.events);
    rolloutRequeue = step.requeueAt;
  };

  /** Begins `run` as a rollout (spec.rollout), unless the previous one is unfinished. */
  const beginRun = (run: CronRun): void => {
    const at = formatTime(run.time);
    if (unfinished(rollout)) {
      const why = `the fleet run of ${rollout?.run.scheduledTime} is ${rollout?.phase} (spec.rollout); ${rollout?.phase === 'Halted' ? 'resume it (kubectl vws resume) or abandon it (kubectl vws abandon) first' : 'wait for it to end, or abandon it (kubectl vws abandon)'}`;
      if (run.reason === 'schedule') {
        recordMissed(at, 'RolloutInProgress');
        events.push({
          type: 'Warning',
          reason: ROLLOUT_EVENT.RunSkippedRollout,
          note: `the run scheduled for ${at} was skipped: ${why}`,
        });
      } else {
        const message = `${ANNOTATION_RUN_NOW}=${run.request} was not run: ${why}, then set a new value`;
        manualRun = { request: run.request ?? '', phase: 'Refused', time: at, message };
        events.push({ type: 'Warning', reason: CRON_EVENT.RunNowRefused, note: message });
      }
      return;
    }
    const targets = planner.targets();
    if (targets.length > MAX_ROLLOUT_INSTANCES) {
      const message = `the ${run.reason === 'schedule' ? `run scheduled for ${at}` : `run requested by ${ANNOTATION_RUN_NOW}=${run.request}`} was not started: ${targets.length} instances match spec.targetSelector, more than the ${MAX_ROLLOUT_INSTANCES} one rolled-out run can hold; narrow spec.targetSelector into several CronOperations`;
      events.push({ type: 'Warning', reason: ROLLOUT_REASON.InvalidRollout, note: message });
      if (run.reason === 'manual')
        manualRun = {
          request: run.request ?? '',
          phase: 'Refused',
          time: at,
          message: message.slice(0, 1024),
        };
      return;
    }
    const which = withoutUndefined({ reason: run.reason, scheduledTime: at, request: run.request });
    rollout = beginRollout(which, targets, cron.metadata.annotations, now);
    if (run.reason === 'manual') manualRun = { request: run.request ?? '', phase: 'Created', time: at };
    stepRun();
  };

  /** Starts `run`: each target is created, skipped (Forbid, paused) or queued. */
  const start = (run: CronRun): void => {
    if (spec.rollout && spec.targetSelector) {
      beginRun(run);
      return;
    }
    const targets = planner.targets();
    const at = formatTime(run.time);
    const waiting: string[] = [];
    const waitReason = (ts: string[]) =>
      ts.some((t) => planner.paused(t))
        ? `${ANNOTATION_PAUSED} is "true" on ${ts.filter((t) => planner.paused(t)).join(', ')}; it runs once the annotation is removed`
        : planner.full()
          ? `maxConcurrent (${spec.maxConcurrent}) Operations are running; they start as running ones finish`
          : 'concurrencyPolicy is Forbid and an Operation for the instance is still running; it starts when that one finished';
    const skipped: { target: string; by: string[] }[] = [];
    const paused: string[] = [];
    for (const target of targets) {
      if (planner.exists(run, target)) continue; // created before (restart, stale cache): adopt
      if (planner.paused(target)) {
        // Maintenance: a slot passes the instance over; a request waits until the annotation goes.
        if (run.reason === 'schedule') paused.push(target);
        else waiting.push(target);
        continue;
      }
      const name = runOperationName(cron, run, target);
      const running = planner.runningFor(target, name);
      if (running.length > 0 && spec.concurrencyPolicy === 'Forbid') {
        if (run.reason === 'schedule')
          skipped.push({ target, by: running.map((o) => o.metadata.name ?? '') });
        else waiting.push(target); // a request is kept until the instance is free
        continue;
      }
      if (running.length > 0 && spec.concurrencyPolicy === 'Replace') {
        const cancel = planner.replace(target, name);
        if (cancel.length > 0)
          events.push({
            type: 'Normal',
            reason: CRON_EVENT.ReplacingOperation,
            note: `concurrencyPolicy is Replace: cancelling ${cancel.join(', ')} for ${run.reason === 'schedule' ? `the run scheduled for ${at}` : `the run requested by ${ANNOTATION_RUN_NOW}=${run.request}`}`,
          });
      }
      if (planner.full()) waiting.push(target);
      else planner.create(run, target);
    }
    if (paused.length > 0) {
      if (paused.length === targets.length) recordMissed(at, 'TargetPaused');
      events.push({
        type: 'Normal',
        reason: CRON_EVENT.RunSkippedPaused,
        note: `the run scheduled for ${at} was skipped on ${paused.join(', ')}: ${ANNOTATION_PAUSED} is "true" (maintenance); the next slot runs once it is removed`,
      });
    }
    if (skipped.length > 0) {
      // Like CronJob's Forbid, a skipped slot counts as handled and the schedule moves on; it is recorded
      // in status.missedSlots when no target of the slot ran.
      if (skipped.length === targets.length) recordMissed(at, 'ConcurrencyForbidden');
      const held = [...new Set(skipped.flatMap((s) => s.by))];
      events.push({
        type: 'Warning',
        reason: CRON_EVENT.RunSkippedForbidden,
        note: spec.targetSelector
          ? `the run scheduled for ${at} was skipped on ${skipped.map((s) => s.target).join(', ')}: concurrencyPolicy is Forbid and ${held.join(', ')} ${held.length === 1 ? 'is' : 'are'} still running`
          : `the run scheduled for ${at} was skipped: concurrencyPolicy is Forbid and ${held.join(', ')} is still running`,
      });
    }
    // A slot's waiting targets replace the previous slot's; a request's are added. The oldest entries go
    // beyond MAX_QUEUED_RUNS (the schema's limit), said in an Event.
    if (run.reason === 'schedule') queue = queue.filter((q) => q.reason !== 'schedule');
    if (waiting.length > 0)
      queue.push(
        withoutUndefined({ reason: run.reason, scheduledTime: at, request: run.request, targets: waiting }),
      );
    for (const q of queue.splice(0, Math.max(0, queue.length - MAX_QUEUED_RUNS)))
      events.push({
        type: 'Warning',
        reason: CRON_EVENT.QueuedRunDropped,
        note: `${q.targets.join(', ')} of the ${q.reason === 'manual' ? `run requested by ${ANNOTATION_RUN_NOW}=${q.request}` : `run scheduled for ${q.scheduledTime}`} left the queue without an Operation: more than ${MAX_QUEUED_RUNS} runs were waiting`,
      });
    if (waiting.length > 0)
      events.push({
        type: 'Normal',
        reason: run.reason === 'manual' ? CRON_EVENT.RunNowPending : CRON_EVENT.RunQueued,
        note: `${plural(waiting.length, 'target')} of ${run.reason === 'manual' ? `the run requested by ${ANNOTATION_RUN_NOW}=${run.request}` : `the run scheduled for ${at}`} wait${waiting.length === 1 ? 's' : ''} (${waiting.join(', ')}): ${waitReason(waiting)}`,
      });
    if (run.reason === 'manual') {
      const single = spec.targetSelector ? undefined : runOperationName(cron, run, targets[0] ?? '');
      manualRun = withoutUndefined({
        request: run.request ?? '',
        phase: waiting.length > 0 ? ('Pending' as const) : ('Created' as const),
        time: at,
        operation: single,
      });
    }
  };

  /** Creates queued targets, oldest run first, as far as concurrency allows; the others stay, in order. */
  const drain = (): void => {
    const current = planner.targets();
    const kept: RunQueue[] = [];
    for (const q of queue) {
      if (spec.suspend && q.reason === 'schedule') {
        // Suspending passes over slots, and so over what a slot left waiting: resuming never runs an old slot.
        events.push({
          type: 'Normal',
          reason: CRON_EVENT.QueuedRunDropped,
          note: `${q.targets.join(', ')} left the queue without an Operation: spec.suspend is true`,
        });
        continue;
      }
      const run: CronRun = withoutUndefined({
        reason: q.reason,
        time: parseTime(q.scheduledTime) ?? now,
        request: q.request,
      });
      const gone = q.targets.filter((t) => !current.includes(t));
      if (gone.length > 0)
        events.push({
          type: 'Warning',
          reason: CRON_EVENT.QueuedRunDropped,
          note: `${gone.join(', ')} left the queue without an Operation: no longer ${spec.targetSelector ? 'an ApplicationInstance matching spec.targetSelector' : 'the target'}`,
        });
      const left: string[] = [];
      for (const target of q.targets) {
        if (planner.exists(run, target) || gone.includes(target)) continue;
        const name = runOperationName(cron, run, target);
        const blocked =
          planner.paused(target) ||
          (spec.concurrencyPolicy === 'Forbid' && planner.runningFor(target, name).length > 0);
        if (blocked || planner.full()) left.push(target);
        else planner.create(run, target);
      }
      const mr = manualRun;
      if (
        q.reason === 'manual' &&
        left.length === 0 &&
        mr &&
        mr.request === q.request &&
        mr.phase === 'Pending'
      )
        manualRun = { ...mr, phase: 'Created', time: formatTime(now) };
      if (left.length > 0) kept.push({ ...q, targets: left });
    }
    queue = kept;
  };

  /** Runs a due slot: adopts it if it exists, consumes skip-next, or starts it. */
  function runDue(slot: Date): void {
    const run: CronRun = { reason: 'schedule', time: slot };
    const targets = planner.targets();
    if (targets.length > 0 && targets.every((t) => planner.exists(run, t))) {
      // created before (restart, or a stale cache): adopt, never run the slot twice
    } else if (cron.metadata.annotations?.[ANNOTATION_SKIP_NEXT] === 'true' && !plan.removeSkipNext) {
      plan.removeSkipNext = true;
      events.push({
        type: 'Normal',
        reason: CRON_EVENT.RunSkipped,
        note: `the run scheduled for ${formatTime(slot)} was skipped (${ANNOTATION_SKIP_NEXT}); the annotation is removed`,
      });
    } else {
      start(run);
    }
  }

  drain();
  stepRun();

  if (spec.suspend) {
    // Slots that come due while suspended are passed over, so resuming never runs an old slot.
    const schedule = parseSchedule(spec.schedule, zone);
    const since = lastSchedule ?? parseTime(String(cron.metadata.creationTimestamp ?? '')) ?? now;
    handled = latestFiring(schedule, since, now);
  } else if (spec.catchUp && spec.catchUp.policy !== 'Latest') {
    // Skip and All (catch-up.ts); Latest is decideRun's most recent slot, below.
    const c = decideCatchUp({
      schedule: parseSchedule(spec.schedule, zone),
      policy: spec.catchUp.policy,
      ...(spec.catchUp.maxRuns !== undefined ? { maxRuns: spec.catchUp.maxRuns } : {}),
      since: lastSchedule ?? parseTime(String(cron.metadata.creationTimestamp ?? '')) ?? now,
      now,
      ...(spec.startingDeadlineSeconds !== undefined
        ? { startingDeadlineSeconds: spec.startingDeadlineSeconds }
        : {}),
      runningSince,
    });
    handled = c.handled;
    for (const n of c.notRun) recordMissed(formatTime(n.slot), n.reason);
    const late = c.notRun
      .filter((n) => n.reason === 'StartingDeadlineExceeded')
      .map((n) => formatTime(n.slot));
    const passed = c.notRun.filter((n) => n.reason === 'CatchUpSkipped').map((n) => formatTime(n.slot));
    if (late.length > 0)
      events.push({
        type: 'Warning',
        reason: CRON_EVENT.MissedSchedule,
        note: `the runs scheduled for ${late.join(', ')} were not started: more than startingDeadlineSeconds (${spec.startingDeadlineSeconds}s) late; the schedule moves on`,
      });
    // Counted as Missed in the metrics, as the slots Latest passes over are.
    if (passed.length + c.uncounted > 0) plan.skippedSlots = passed.length + c.uncounted;
    if (passed.length > 0 || c.uncounted > 0)
      events.push({
        type: 'Normal',
        reason: CRON_EVENT.CatchUpSkipped,
        note: `${plural(passed.length + c.uncounted, 'slot')} missed while the operator was not running did not run (spec.catchUp.policy ${spec.catchUp.policy}${spec.catchUp.maxRuns !== undefined ? `, maxRuns ${spec.catchUp.maxRuns}` : ''})${passed.length > 0 ? `; the latest: ${passed.slice(-3).join(', ')}` : ''}; kubectl vws backfill runs past slots`,
      });
    for (const slot of c.run) runDue(slot);
  } else {
    if (decision.skippedCount > 0) plan.skippedSlots = decision.skippedCount;
    if (decision.tooManyMissed) {
      events.push({
        type: 'Warning',
        reason: CRON_EVENT.TooManyMissedSchedules,
        note: `more than ${MISSED_COUNT_CAP} slots were missed${
          spec.startingDeadlineSeconds !== undefined
            ? ` within startingDeadlineSeconds (${spec.startingDeadlineSeconds}s)`
            : ''
        } (operator down or clock moved); only the most recent one is considered. Set or lower spec.startingDeadlineSeconds, or check the clock`,
      });
    }
    if (decision.missedPastDeadline) {
      const slot = decision.missedPastDeadline;
      handled = slot;
      const at = formatTime(slot);
      if (!missed.some((m) => m.scheduledTime === at)) {
        recordMissed(at, 'StartingDeadlineExceeded');
        events.push({
          type: 'Warning',
          reason: CRON_EVENT.MissedSchedule,
          note: `the run scheduled for ${at} was not started: it is more than startingDeadlineSeconds (${spec.startingDeadlineSeconds}s) late; the schedule moves on to the next slot`,
        });
      }
    }
    if (decision.runSlot) {
      handled = decision.runSlot;
      runDue(decision.runSlot);
    }
  }

  // A run-now request: each new value runs once (suspend does not stop it, as with
  // `kubectl create job --from=cronjob/<name>`). One longer than status.manualRun can hold (the webhook
  // refuses it; it reached us without the webhook) is recorded as Refused by its digest, once.
  const request = cron.metadata.annotations?.[ANNOTATION_RUN_NOW];
  if (request && recordedRequest(request) !== prev.manualRun?.request) {
    if (request.length <= MAX_RUN_NOW_LENGTH) start({ reason: 'manual', time: now, request });
    else {
      const message = `${ANNOTATION_RUN_NOW} is ${request.length} characters long, more than ${MAX_RUN_NOW_LENGTH}: nothing runs; set a shorter value, such as a timestamp`;
      manualRun = { request: recordedRequest(request), phase: 'Refused', time: formatTime(now), message };
      events.push({ type: 'Warning', reason: CRON_EVENT.RunNowRefused, note: message });
    }
  }

  if (handled && (!lastSchedule || handled.getTime() > lastSchedule.getTime())) plan.handledSlot = handled;
  const lastScheduleTime = plan.handledSlot ? formatTime(plan.handledSlot) : prev.lastScheduleTime;
  const active = activeRefs([...remaining, ...plan.create]);
  const after = new Date(Math.max(now.getTime(), (plan.handledSlot ?? lastSchedule ?? now).getTime()));
  const upcoming = spec.suspend ? undefined : nextRuns(spec.schedule, zone, after);
  plan.status = withoutUndefined({
    ...base(),
    lastScheduleTime,
    missedSlots: missed.length ? missed : undefined,
    manualRun,
    queue: queue.length ? queue : undefined,
    conditions: spec.suspend
      ? readyCondition(
          prev.conditions,
          'False',
          'Suspended',
          'spec.suspend is true: no Operations are created; slots that come due meanwhile are passed over',
          generation,
          now,
        )
      : readyCondition(
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
    rollout,
  });
  if (rollout)
    plan.status.conditions = setCondition(
      plan.status.conditions,
      withGeneration(haltedCondition(rollout), generation),
      now,
    );
  if (rolloutRequeue) {
    const ms = Math.max(1, rolloutRequeue.getTime() - now.getTime());
    plan.requeueAfterMs = Math.min(plan.requeueAfterMs ?? ms, ms);
  }
  // A refused create (refused.ts) stays the Ready condition until an Operation is created again.
  plan.status.conditions = keepRefusal(prev.conditions, plan.status.conditions, plan.create.length > 0);
  return plan;
}

/** The run a rollout rolls out, as the Operation names know it. */
function runOf(r: RolloutStatus): CronRun {
  return withoutUndefined({
    // A CronOperation's run is never a watched change (WatchOperation, ADR 0056).
    reason: r.run.reason === 'manual' ? 'manual' : 'schedule',
    time: parseTime(r.run.scheduledTime) ?? new Date(0),
    request: r.run.request,
  });
}

/** The names of the Operations of a rollout's run. */
function rolloutOperationNames(cron: CronOperation, r: RolloutStatus): Set<string> {
  const run = runOf(r);
  return new Set(r.instances.map((i) => runOperationName(cron, run, i.name)));
}

function withGeneration<C extends object>(c: C, generation: number | undefined) {
  return generation !== undefined ? { ...c, observedGeneration: generation } : c;
}
