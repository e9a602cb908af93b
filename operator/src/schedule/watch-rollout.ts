// Which of a WatchOperation's triggers form one rolled-out run, and when it begins (ADR 0056). Pure: the
// waves, the budget, the halt, resume and abandon are the CronOperation's (rollout-run.ts, rollout.ts);
// this file only decides the run's membership and hands each reconcile to stepRollout.
//
// - A run is one *change*: the instances whose watched values changed to the same new values (the same
//   fieldsHash), or that got the same trigger label value. A GitOps sync bumping a chart version on 30
//   instances is one change, and it is what a person resumes or abandons.
// - It begins CHANGE_GATHER_MS after the first instance of that change was seen, so the waves (whose
//   percentages are of the run's fleet) are cut from the fleet a sync brings in, not from its first
//   instance; an instance of the same change seen later joins the run while it is unfinished.
// - A different change waits (status.targets[].pendingTrigger) until the run is Completed or Abandoned:
//   it never overtakes a Progressing or Halted run, the harm the budget exists to stop. An instance
//   changed again before it started leaves the run (Removed) and waits with its newer change.
// - Abandon ends the change: its instances that had not started, and later ones with the same change,
//   are dropped (the baseline moves on), never rolled out behind the person's back.

import { formatTime } from '@vworkspace/runtime';
import { MAX_ROLLOUT_INSTANCES, type Operation, type Rollout, type RolloutStatus } from '../api/index.ts';
import { beginRollout, type RolloutStarter, stepRollout, unfinished } from './rollout-run.ts';
import type { PlannedEvent } from './run-plan.ts';

/** How long after a change's first instance was seen its run begins. */
export const CHANGE_GATHER_MS = 10_000;

export type WatchRun = RolloutStatus['run'];

/** An instance whose trigger waits for a run: the change it carries and since when it waits. */
export interface WaitingChange {
  change: string;
  since: string;
}

/** The change a trigger carries: the trigger label's value, or the hash of all watched values. */
export function changeKey(
  trigger: string,
  labels: Readonly<Record<string, string>>,
  fieldsHash: string | undefined,
): string {
  if (trigger.startsWith('label:')) {
    const key = trigger.slice('label:'.length);
    return `label:${key}=${labels[key] ?? ''}`;
  }
  return `fields=${fieldsHash ?? ''}`;
}

/** How the step starts an instance of `run` (decideWatch's planner). */
export interface WatchRolloutStarter extends Omit<RolloutStarter, 'start'> {
  start(target: string, run: WatchRun): void;
}

export interface WatchRolloutInput {
  /** spec.rollout now; undefined when it was removed (an unfinished run is then abandoned). */
  strategy: Rollout | undefined;
  rollout: RolloutStatus | undefined;
  /** The matching instances whose trigger waits, by name. */
  waiting: ReadonlyMap<string, WaitingChange>;
  /** The Operation of `target` in `run`, if it exists. */
  operationOf(run: WatchRun, target: string): Operation | undefined;
  annotations: Record<string, string> | undefined;
  now: Date;
  starter: WatchRolloutStarter;
}

export interface WatchRolloutStep {
  rollout: RolloutStatus | undefined;
  events: PlannedEvent[];
  /** Instances whose waiting change is dropped: it is the change of an abandoned run. */
  drop: string[];
  /** Look again then (a gather window or a pause between waves ends). */
  requeueAt?: Date;
}

const earlier = (a: Date | undefined, b: Date | undefined) =>
  a === undefined ? b : b === undefined || a < b ? a : b;

/** One reconcile of a WatchOperation's rollout: join, step, abandon's drop, and the next run's beginning. */
export function stepWatchRollout(input: WatchRolloutInput): WatchRolloutStep {
  const events: PlannedEvent[] = [];
  const drop = new Set<string>();
  let requeueAt: Date | undefined;
  let rollout = input.rollout;

  const step = (r: RolloutStatus): RolloutStatus => {
    const change = r.run.change;
    const members = new Set(r.instances.map((i) => i.name));
    const joining = [...input.waiting]
      .filter(([name, w]) => w.change === change && !members.has(name))
      .map(([name]) => name)
      .sort()
      .slice(0, Math.max(0, MAX_ROLLOUT_INSTANCES - members.size));
    const joined: RolloutStatus =
      joining.length === 0
        ? r
        : {
            ...r,
            instances: [...r.instances, ...joining.map((name) => ({ name, state: 'NotStarted' as const }))],
          };
    const operations = new Map(
      joined.instances.flatMap((i) => {
        const op = input.operationOf(r.run, i.name);
        return op ? [[i.name, op] as const] : [];
      }),
    );
    // An instance not started yet stays in the run only while it still waits with the run's change.
    const matching = new Set([...input.waiting].filter(([, w]) => w.change === change).map(([n]) => n));
    const s = stepRollout({
      strategy: input.strategy,
      rollout: joined,
      operations,
      matching,
      annotations: input.annotations,
      now: input.now,
      starter: { ...input.starter, start: (target) => input.starter.start(target, r.run) },
    });
    events.push(...s.events);
    requeueAt = earlier(requeueAt, s.requeueAt);
    if (s.rollout.phase === 'Abandoned')
      for (const [name, w] of input.waiting) if (w.change === change) drop.add(name);
    return s.rollout;
  };

  if (unfinished(rollout)) rollout = step(rollout);
  else if (input.rollout?.phase === 'Abandoned') {
    const abandoned = input.rollout.run.change;
    for (const [name, w] of input.waiting) if (w.change === abandoned) drop.add(name);
  }

  if (!unfinished(rollout) && input.strategy) {
    // The change waiting longest goes next; its run begins once its gather window has passed.
    let next: { change: string; since: string } | undefined;
    for (const [name, w] of input.waiting) {
      if (drop.has(name)) continue;
      if (!next || w.since < next.since || (w.since === next.since && w.change < next.change)) next = w;
    }
    if (next) {
      const parsed = Date.parse(next.since);
      const first = Number.isNaN(parsed) ? input.now : new Date(parsed);
      const due = new Date(first.getTime() + CHANGE_GATHER_MS);
      if (input.now < due) requeueAt = earlier(requeueAt, due);
      else {
        const change = next.change;
        const names = [...input.waiting]
          .filter(([name, w]) => w.change === change && !drop.has(name))
          .map(([name]) => name)
          .sort()
          .slice(0, MAX_ROLLOUT_INSTANCES);
        const run: WatchRun = { reason: 'change', scheduledTime: formatTime(first), change };
        rollout = step(beginRollout(run, names, input.annotations, input.now));
      }
    }
  }
  return { rollout, events, drop: [...drop], ...(requeueAt ? { requeueAt } : {}) };
}
