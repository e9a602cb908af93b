// A CronOperation's fleet run under spec.rollout, between reconciles: the snapshot and the states of its
// instances are kept in status.rollout, so a deleted or pruned Operation never makes an instance start
// again; each reconcile maps the run's Operations onto those states, reads a person's resume or abandon
// (annotations on the CronOperation, so only who may patch it can do either, and the webhook asks them for
// the type verb as for run-now) and asks decideRollout (rollout.ts) what to start. Pure: cron-decide.ts
// calls it and starts what it names through its planner (maxConcurrent, paused instances, concurrencyPolicy).

import { formatTime } from '@vworkspace/runtime';
import {
  ANNOTATION_ABANDON,
  ANNOTATION_RESUME,
  CONDITION_HALTED,
  MAX_ROLLOUT_LISTED,
  type Operation,
  type Rollout,
  type RolloutInstanceStatus,
  type RolloutStatus,
} from '../api/index.ts';
import {
  decideRollout,
  type InstanceRunState,
  type NameList,
  ROLLOUT_REASON,
  type RolloutDecision,
} from './rollout.ts';
import type { PlannedEvent } from './run-plan.ts';

/** Event reasons of a rollout besides the decision's own (which are the Halted condition's reasons). */
export const ROLLOUT_EVENT = {
  RolloutResumed: 'RolloutResumed',
  NothingToResume: 'NothingToResume',
  RunSkippedRollout: 'RunSkippedRollout',
} as const;

const WARNING_REASONS: ReadonlySet<string> = new Set([
  ROLLOUT_REASON.FailureBudgetExceeded,
  ROLLOUT_REASON.CompletedWithFailures,
  ROLLOUT_REASON.InvalidRollout,
]);

/** A run still rolling out or halted: another run of the CronOperation does not begin meanwhile. */
export function unfinished(r: RolloutStatus | undefined): r is RolloutStatus {
  return r !== undefined && r.phase !== 'Completed' && r.phase !== 'Abandoned';
}

const EMPTY: NameList = { count: 0, names: [] };

/**
 * The status of a run that begins now on `targets`. The resume and abandon values already set belong to
 * the runs before: they are recorded as acted on, so they never resume or end this one.
 */
export function beginRollout(
  run: RolloutStatus['run'],
  targets: readonly string[],
  annotations: Record<string, string> | undefined,
  now: Date,
): RolloutStatus {
  const resume = annotations?.[ANNOTATION_RESUME];
  const abandon = annotations?.[ANNOTATION_ABANDON];
  // Code-unit order, as decideRollout takes them.
  const ordered = [...targets].sort();
  return {
    run,
    phase: 'Progressing',
    reason: ROLLOUT_REASON.WaveRunning,
    message: `the run begins on ${targets.length} instances`,
    startedAt: formatTime(now),
    failures: { counted: 0, budget: 0 },
    running: EMPTY,
    succeeded: EMPTY,
    failed: EMPTY,
    cancelled: EMPTY,
    removed: EMPTY,
    notStarted: { count: ordered.length, names: ordered.slice(0, MAX_ROLLOUT_LISTED) },
    instances: ordered.map((name) => ({ name, state: 'NotStarted' as const })),
    ...(resume ? { resumeRequest: resume } : {}),
    ...(abandon ? { abandonRequest: abandon } : {}),
  };
}

/** How the step starts an instance's Operation; cron-decide's planner. */
export interface RolloutStarter {
  /** The instance cannot start now (paused, or concurrencyPolicy Forbid and an older run's Operation runs). */
  waits(target: string): boolean;
  /** Free places under spec.maxConcurrent, the run's own running Operations not counted back. */
  room(): number;
  start(target: string): void;
}

export interface RolloutStepInput {
  /** spec.rollout now; undefined when it was removed (the run is then abandoned). */
  strategy: Rollout | undefined;
  rollout: RolloutStatus;
  /** The run's Operations by target instance (the names the run gives them). */
  operations: ReadonlyMap<string, Operation>;
  /** The instances that match spec.targetSelector now. */
  matching: ReadonlySet<string>;
  annotations: Record<string, string> | undefined;
  now: Date;
  starter: RolloutStarter;
}

export interface RolloutStep {
  rollout: RolloutStatus;
  events: PlannedEvent[];
  /** Look again then (a pause between waves ends). */
  requeueAt?: Date;
}

function stateOf(
  entry: RolloutInstanceStatus,
  op: Operation | undefined,
  matching: boolean,
  now: Date,
): RolloutInstanceStatus {
  if (op) {
    const phase = op.status?.phase;
    const state: InstanceRunState =
      phase === 'Succeeded' || phase === 'Failed' || phase === 'Cancelled' ? phase : 'Running';
    const finishedAt = state === 'Running' ? undefined : (op.status?.finishedAt ?? entry.finishedAt);
    return { name: entry.name, state, ...(finishedAt ? { finishedAt } : {}) };
  }
  if (entry.state === 'NotStarted') return matching ? entry : { name: entry.name, state: 'Removed' as const };
  // Started, and no Operation: its create was refused (webhook, quota), or it was deleted while it ran.
  // Its outcome is unknown, so it counts as a failure (the safe side: a refusal of every Operation halts
  // the run instead of passing the whole fleet over), and it is never started again.
  if (entry.state === 'Running') return { name: entry.name, state: 'Failed', finishedAt: formatTime(now) };
  return entry; // finished, its Operation pruned or deleted since: the recorded outcome stands
}

/** One reconcile of an unfinished run: its states, a resume or abandon, and what to start. */
export function stepRollout(input: RolloutStepInput): RolloutStep {
  const prev = input.rollout;
  const events: PlannedEvent[] = [];
  let { resumeRequest, resumedAt, abandonRequest, abandonedAt } = prev;
  const resume = input.annotations?.[ANNOTATION_RESUME];
  if (resume && resume !== resumeRequest) {
    resumeRequest = resume;
    if (prev.phase === 'Halted') {
      resumedAt = formatTime(input.now);
      events.push({
        type: 'Normal',
        reason: ROLLOUT_EVENT.RolloutResumed,
        note: `resumed by ${ANNOTATION_RESUME}=${resume}: failures before now no longer count; the run goes on with its remaining waves`,
      });
    } else
      events.push({
        type: 'Normal',
        reason: ROLLOUT_EVENT.NothingToResume,
        note: `${ANNOTATION_RESUME}=${resume} was not acted on: the run is ${prev.phase}, not Halted`,
      });
  }
  const abandon = input.annotations?.[ANNOTATION_ABANDON];
  if (abandon && abandon !== abandonRequest) {
    abandonRequest = abandon;
    abandonedAt ??= formatTime(input.now);
  }
  if (!input.strategy) abandonedAt ??= formatTime(input.now);

  let instances: RolloutInstanceStatus[] = prev.instances.map((e) =>
    stateOf(e, input.operations.get(e.name), input.matching.has(e.name), input.now),
  );
  const ownRunning = instances.filter((i) => i.state === 'Running').length;
  const decision = decideRollout({
    strategy: input.strategy ?? { waves: ['100%'] },
    instances: instances.map((i) => ({
      name: i.name,
      state: i.state,
      ...(i.finishedAt ? { finishedAt: new Date(i.finishedAt) } : {}),
    })),
    maxConcurrent: ownRunning + Math.max(0, input.starter.room()),
    ...(resumedAt ? { resumedAt: new Date(resumedAt) } : {}),
    ...(abandonedAt ? { abandonedAt: new Date(abandonedAt) } : {}),
    now: input.now,
  });
  const started = new Set<string>();
  for (const name of decision.start) {
    if (input.starter.waits(name) || input.starter.room() <= 0) continue;
    input.starter.start(name);
    started.add(name);
  }
  if (started.size > 0)
    instances = instances.map((i) => (started.has(i.name) ? { name: i.name, state: 'Running' } : i));
  const lists = started.size > 0 ? relist(decision, instances) : decision;
  const message = !input.strategy ? `spec.rollout was removed: ${decision.message}` : decision.message;
  if (decision.reason !== prev.reason || decision.wave?.index !== prev.wave?.index)
    events.push({
      type: WARNING_REASONS.has(decision.reason) ? 'Warning' : 'Normal',
      reason: decision.reason,
      note: message,
    });
  const rollout: RolloutStatus = {
    run: prev.run,
    phase: decision.phase,
    reason: decision.reason,
    message: message.slice(0, 4096),
    startedAt: prev.startedAt,
    ...(decision.wave ? { wave: decision.wave } : {}),
    failures: decision.failures,
    running: lists.running,
    succeeded: lists.succeeded,
    failed: lists.failed,
    cancelled: lists.cancelled,
    removed: lists.removed,
    notStarted: lists.remaining,
    instances,
    ...(resumeRequest ? { resumeRequest } : {}),
    ...(resumedAt ? { resumedAt } : {}),
    ...(abandonRequest ? { abandonRequest } : {}),
    ...(abandonedAt ? { abandonedAt } : {}),
  };
  return { rollout, events, ...(decision.requeueAt ? { requeueAt: decision.requeueAt } : {}) };
}

/** The name lists after this step's starts (the decision's are from before them). */
function relist(decision: RolloutDecision, instances: readonly RolloutInstanceStatus[]) {
  const of = (state: InstanceRunState): NameList => {
    const names = instances.filter((i) => i.state === state).map((i) => i.name);
    return { count: names.length, names: names.slice(0, MAX_ROLLOUT_LISTED) };
  };
  return { ...decision, running: of('Running'), remaining: of('NotStarted') };
}

/** The Halted condition of a run's status. */
export function haltedCondition(r: RolloutStatus) {
  return {
    type: CONDITION_HALTED,
    status: r.phase === 'Halted' ? ('True' as const) : ('False' as const),
    reason: r.reason,
    message: r.message,
  };
}
