// The WatchOperation reconciler: decideWatch (watch-decide.ts) carried out by the shared schedule shell
// (run-core.ts).
//
// Triggers: a WatchOperation's spec/labels/annotations change; an ApplicationInstance of its namespace
// changes spec (generation), labels or annotations — status-only updates are filtered out here and ignored
// by the decision anyway; one of its Operations (controller ownerReference) is added, changes phase or is
// deleted.
//
// Order of writes: cancels, creates (deterministic names; AlreadyExists ⇒ adopt), processed marks and
// label removals on instances, pruning, then status. A crash before the status write decides the same
// triggers again and adopts the same Operations. Every write goes through the runtime Client, so a
// reconcile on a lagging cache reads its own marks and status back and never sees a handled trigger as new.
//
// RBAC: watchoperations get/list/watch, watchoperations/status patch, applicationinstances
// get/list/watch/patch, operations get/list/watch/create/patch/delete, events create/patch.

import {
  anyOf,
  Client,
  type Clock,
  type Controller,
  controllerFor,
  type EventRecorder,
  generationChanged,
  keyOf,
  labelsOrAnnotationsChanged,
  type Manager,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  realClock,
} from '@vworkspace/runtime';
import {
  ANNOTATION_TRIGGER,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  OPERATION,
  type Operation,
  WATCH_OPERATION,
  type WatchOperation,
  watchProcessedAnnotation,
} from '../api/index.ts';
import { OPERATIONS_BY_WATCH } from '../indexes.ts';
import type { SchedulerDeps } from './cron-controller.ts';
import { refusalFor, withRefusals } from './refused.ts';
import { unfinished } from './rollout-run.ts';
import { ownerRequest, phaseChanged, ScheduleRuns } from './run-core.ts';
import { decideWatch, type WatchPlan } from './watch-decide.ts';

export const WATCH_CONTROLLER_NAME = 'watchoperation';
const REFUSED_ROLLOUT_RECHECK_MS = 1000;

export class WatchReconciler implements Reconciler {
  readonly #client: Client;
  readonly #runs: ScheduleRuns;
  readonly #clock: Clock;

  constructor(opts: { client: Client; events: EventRecorder; clock: Clock }) {
    this.#client = opts.client;
    this.#runs = new ScheduleRuns(opts.client, opts.events);
    this.#clock = opts.clock;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const watch = this.#client.get<WatchOperation>(WATCH_OPERATION, req);
    if (!watch) return {};
    const ns = req.namespace ?? '';
    const instances = this.#client.list<ApplicationInstance>(APPLICATION_INSTANCE, { namespace: ns });
    const ops = this.#client.list<Operation>(OPERATION, {
      index: [OPERATIONS_BY_WATCH.name, keyOf(ns, watch.metadata.uid ?? '')],
    });
    const now = new Date(this.#clock.now());
    const plan = decideWatch(watch, instances, ops, now);
    let refusedAny = false;
    await this.#runs.execute(watch, { ...plan, instancePatches: marks(req.name, plan) }, ops, ctx, {
      kind: 'WatchOperation',
      refuse: (p, refused) => {
        if (refused.length === 0) return p;
        refusedAny = true;
        const refusals = refused.map(({ op, err }) => {
          const trigger = op.metadata.annotations?.[ANNOTATION_TRIGGER] ?? 'a trigger';
          const what = `${trigger} on ApplicationInstance ${op.spec.targetRef.name}`;
          return refusalFor(op.metadata.name ?? '', what, err);
        });
        return { ...p, ...withRefusals(p.status, p.events, refusals, watch.metadata.generation, now) };
      },
    });
    // A refused Operation of a rolled-out run counts as its instance's failure (rollout-run.ts): look
    // again soon, since no Operation event will wake the run.
    const after =
      refusedAny && unfinished(plan.status.rollout)
        ? Math.min(plan.requeueAfterMs ?? REFUSED_ROLLOUT_RECHECK_MS, REFUSED_ROLLOUT_RECHECK_MS)
        : plan.requeueAfterMs;
    return after !== undefined ? { requeueAfter: Math.max(1, after) } : {};
  }
}

/** The processed marks and trigger label removals of `plan` as merge patches of the instances. */
function marks(watchName: string, plan: WatchPlan): { name: string; patch: unknown }[] {
  const processedKey = watchProcessedAnnotation(watchName);
  return plan.instances.map((p) => ({
    name: p.instance,
    patch: {
      metadata: {
        annotations: { [processedKey]: p.processed },
        ...(p.removeLabels.length
          ? { labels: Object.fromEntries(p.removeLabels.map((l) => [l, null])) }
          : {}),
      },
    },
  }));
}

/** The WatchOperation controller on `mgr`'s shared cache, registered with `mgr`. */
export function setupWatchController(mgr: Manager, deps: SchedulerDeps): Controller {
  const clock = deps.clock ?? realClock;
  const client = new Client({ client: deps.client, mapper: deps.mapper, cache: mgr.cache });
  const specOrMeta = anyOf(generationChanged, labelsOrAnnotationsChanged);
  const b = controllerFor<WatchOperation>(mgr, WATCH_OPERATION, {
    predicates: [{ update: specOrMeta }],
  }).named(WATCH_CONTROLLER_NAME);
  const watches = b.informer<WatchOperation>(WATCH_OPERATION);
  b.informer<Operation>(OPERATION).addIndexer(OPERATIONS_BY_WATCH.name, OPERATIONS_BY_WATCH.fn);
  // Every WatchOperation of the namespace looks at the instance; the selector is applied in the decision
  // (an instance that stops matching must still reach the WatchOperation, to drop its target).
  b.watches<ApplicationInstance>(
    APPLICATION_INSTANCE,
    (inst) =>
      watches
        .list(inst.metadata.namespace)
        .map((w) => ({ namespace: w.metadata.namespace ?? '', name: w.metadata.name ?? '' })),
    { predicates: [{ update: specOrMeta }] },
  );
  b.watches<Operation>(OPERATION, (op) => ownerRequest(op, 'WatchOperation'), {
    predicates: [{ update: phaseChanged }],
  });
  return b
    .withOptions({
      clock,
      ...(deps.workers ? { workers: deps.workers } : {}),
      ...(deps.activity ? { activity: deps.activity } : {}),
    })
    .complete(new WatchReconciler({ client, events: deps.events, clock }));
}
