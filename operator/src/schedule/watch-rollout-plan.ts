// decideWatch's side of a rolled-out WatchOperation (ADR 0056): the waiting triggers become changes for
// stepWatchRollout (watch-rollout.ts), and what it starts becomes Operations of the plan, under the same
// rules as a trigger run without a rollout (a paused instance waits, maxConcurrent, concurrencyPolicy).
// Its own file so watch-decide.ts only gains the two branches that hand a trigger over.

import { createHash } from 'node:crypto';
import { formatTime } from '@vworkspace/runtime';
import type {
  ApplicationInstance,
  Operation,
  RolloutStatus,
  WatchOperation,
  WatchTarget,
} from '../api/index.ts';
import { isPaused } from '../api/paused.ts';
import { activeOperations } from './history.ts';
import { unfinished } from './rollout-run.ts';
import type { PlannedEvent } from './run-plan.ts';
import { changeKey, stepWatchRollout, type WaitingChange, type WatchRun } from './watch-rollout.ts';

/** Triggers wait for a rollout: spec.rollout is set, or a run it began is unfinished (then abandoned). */
export function rolloutMode(watch: WatchOperation): boolean {
  return watch.spec.rollout !== undefined || unfinished(watch.status?.rollout);
}

/** The Operation of `target` in `run`: one per instance and change, whatever the instance's uid. */
export function rolloutOperationName(watchName: string, run: WatchRun, target: string): string {
  const suffix = createHash('sha256')
    .update(['rollout', target, run.change ?? '', run.scheduledTime].join('\u0000'))
    .digest('hex')
    .slice(0, 8);
  return `${watchName}-${suffix}`;
}

export interface WatchRolloutPlanInput {
  watch: WatchOperation;
  /** The instances that match spec.selector. */
  matching: readonly ApplicationInstance[];
  /** status.targets as decided so far; the instances started or dropped here are updated in place. */
  targets: WatchTarget[];
  /** The Operations of this WatchOperation, and those of them not pruned by this reconcile. */
  ops: readonly Operation[];
  remaining: readonly Operation[];
  /** Operations created by this reconcile so far; those started here are added. */
  createdNow: Operation[];
  plan: {
    create: Operation[];
    cancel: string[];
    events: PlannedEvent[];
    decided: boolean;
    requeueAfterMs?: number;
  };
  /** The Operation decideWatch creates for `trigger` on `instance` (named here). */
  operationFor(instance: ApplicationInstance, trigger: string): Operation;
  now: Date;
}

/** Moves the rollout on; returns status.rollout. */
export function planWatchRollout(input: WatchRolloutPlanInput): RolloutStatus | undefined {
  const { watch, plan, now } = input;
  const spec = watch.spec;
  const watchName = watch.metadata.name ?? '';
  const byName = new Map(input.matching.map((i) => [i.metadata.name ?? '', i]));
  const targetOf = new Map(input.targets.map((t) => [t.name, t]));
  const waiting = new Map<string, WaitingChange>();
  for (const t of input.targets) {
    const inst = byName.get(t.name);
    if (t.pendingTrigger && inst)
      waiting.set(t.name, {
        change: changeKey(t.pendingTrigger, inst.metadata.labels ?? {}, t.fieldsHash),
        since: t.pendingSince ?? formatTime(now),
      });
  }
  const active = activeOperations(input.remaining);
  const runningFor = (target: string, own: string) =>
    active.filter((o) => o.spec?.targetRef?.name === target && o.metadata.name !== own);

  const step = stepWatchRollout({
    strategy: spec.rollout,
    rollout: watch.status?.rollout,
    waiting,
    operationOf: (run, target) =>
      input.ops.find((o) => o.metadata.name === rolloutOperationName(watchName, run, target)),
    annotations: watch.metadata.annotations,
    now,
    starter: {
      waits: (target) => {
        const inst = byName.get(target);
        return (
          spec.suspend === true ||
          inst === undefined ||
          isPaused(inst) ||
          (spec.concurrencyPolicy === 'Forbid' && runningFor(target, '').length > 0)
        );
      },
      room: () =>
        spec.maxConcurrent === undefined
          ? Number.POSITIVE_INFINITY
          : spec.maxConcurrent - active.length - input.createdNow.length,
      start: (target, run) => {
        const inst = byName.get(target);
        const entry = targetOf.get(target);
        if (!inst || !entry) return;
        const trigger = entry.pendingTrigger ?? 'change';
        const name = rolloutOperationName(watchName, run, target);
        if (spec.concurrencyPolicy === 'Replace') {
          const cancel = runningFor(target, name)
            .filter((o) => o.spec?.cancel !== true)
            .map((o) => o.metadata.name ?? '');
          if (cancel.length > 0) {
            plan.cancel.push(...cancel);
            plan.events.push({
              type: 'Normal',
              reason: 'ReplacingOperation',
              note: `concurrencyPolicy is Replace: cancelling ${cancel.join(', ')} for the rollout's Operation on ${target}`,
            });
          }
        }
        if (!input.ops.some((o) => o.metadata.name === name)) {
          const made = input.operationFor(inst, trigger);
          const op = { ...made, metadata: { ...made.metadata, name } };
          plan.create.push(op);
          input.createdNow.push(op);
          plan.events.push({
            type: 'Normal',
            reason: 'OperationCreated',
            note: `created Operation ${name} for ${trigger} on ApplicationInstance ${target} (rollout of ${run.change})`,
          });
        }
        entry.lastTrigger = trigger;
        entry.lastTriggerTime = formatTime(now);
        delete entry.pendingTrigger;
        delete entry.pendingSince;
        plan.decided = true;
      },
    },
  });
  for (const name of step.drop) {
    const entry = targetOf.get(name);
    if (!entry) continue;
    delete entry.pendingTrigger;
    delete entry.pendingSince;
  }
  if (step.drop.length > 0) {
    plan.decided = true;
    plan.events.push({
      type: 'Normal',
      reason: 'ChangeDropped',
      note: `dropped the change ${step.rollout?.run.change} on ${step.drop.sort().join(', ')}: its run was abandoned; change the watched values again to roll out a new change`,
    });
  }
  plan.events.push(...step.events);
  if (JSON.stringify(step.rollout) !== JSON.stringify(watch.status?.rollout)) plan.decided = true;
  if (step.requeueAt) {
    const ms = Math.max(1, step.requeueAt.getTime() - now.getTime());
    plan.requeueAfterMs = Math.min(plan.requeueAfterMs ?? ms, ms);
  }
  return step.rollout;
}
