// The CronOperation reconciler: decideCron (cron-decide.ts) carried out by the shared schedule shell
// (run-core.ts).
//
// Triggers: a CronOperation's spec, labels or annotations change (skip-next, run-now), one of its
// Operations (controller ownerReference, owner.ts) is added, changes phase or is deleted (a queued
// target may start), and the requeue at exactly the next slot (on the injected Clock: no polling).
// ApplicationInstances are read from the cache (fleet targets, object.* substitutions, the paused
// annotation); only resuming a paused one triggers (a queued request may run): a fleet's targets are
// chosen when a run starts.
//
// A slot's runs are created first; their bookkeeping (pruning, status.lastScheduleTime, the Events about
// skipped slots) goes to the back of the queue, behind every other run due now: N due schedules cost N
// creates before N status writes, which halves the lag of the last run when the client's QPS budget
// bounds them. The second pass reads the new Operations back from the client (its own writes), adopts
// them and writes the status; a crash meanwhile decides the slot again and adopts. A run-now request is
// recorded in status.manualRun the same way, and its Operation's name derives from the value, so a
// restart adopts it instead of running it twice.
//
// After the bookkeeping, a CronOperation with spec.retention runs its retention pass (retention-pass.ts)
// on every reconcile: after a run, when one of its Backups finishes (a phase change), on a resync.
//
// RBAC: cronoperations get/list/watch/patch, cronoperations/status patch, applicationinstances
// get/list/watch, operations get/list/watch/create/patch/delete in the namespaces of CronOperations,
// events create/patch; for spec.retention, the backup.velero or backup.snapshot profile (retention-pass.ts).

import {
  type Activity,
  anyOf,
  Client,
  type Clock,
  type Controller,
  controllerFor,
  type EventRecorder,
  generationChanged,
  type KubeClient,
  keyOf,
  labelsOrAnnotationsChanged,
  type Manager,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type RestMapper,
  type Result,
  realClock,
} from '@vworkspace/runtime';
import {
  ANNOTATION_SCHEDULED_TIME,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CRON_OPERATION,
  type CronOperation,
  DEFAULT_VELERO_NAMESPACE,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import { isPaused } from '../api/paused.ts';
import { OPERATIONS_BY_CRON } from '../indexes.ts';
import { CRON_EVENT, decideCron } from './cron-decide.ts';
import { registerCronMetrics } from './cron-metrics.ts';
import { ScheduleMetrics } from './metrics.ts';
import { refuseCronRuns } from './refused.ts';
import { RetentionPass } from './retention-pass.ts';
import { unfinished } from './rollout-run.ts';
import { ownerRequest, phaseChanged, ScheduleRuns } from './run-core.ts';
import { cronTargets } from './targets.ts';

export const CRON_CONTROLLER_NAME = 'cronoperation';
/** How soon a rolled-out run with a refused Operation is looked at again. */
const REFUSED_ROLLOUT_RECHECK_MS = 1000;

/** What both schedulers are set up with (the cache, logger and metrics are the manager's). */
export interface SchedulerDeps {
  /** The controller's own API client (its connection pool and QPS budget). */
  client: KubeClient;
  mapper: RestMapper;
  events: EventRecorder;
  /** Drives the schedule: "now" of every decision and the requeues. Tests pass a FakeClock. */
  clock?: Clock;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. */
  workers?: number;
  /** Foreground work (activity.ts): touched whenever this controller queues or reconciles a key. */
  activity?: Activity;
  /** Where velero.io Backups live (retention of velero CronOperations); default DEFAULT_VELERO_NAMESPACE. */
  veleroNamespace?: string;
}

/**
 * The Events a deferred first pass says: about the runs it started (created, their parameters, the runs
 * they replace). The second pass adopts those runs and plans none of these again; every other Event
 * (skipped, missed, queued slots) it plans again, and says with the status.
 */
const RUN_EVENTS = [
  CRON_EVENT.OperationCreated,
  CRON_EVENT.TriggerParameterMissing,
  CRON_EVENT.ReplacingOperation,
];

export class CronReconciler implements Reconciler {
  readonly #client: Client;
  readonly #runs: ScheduleRuns;
  readonly #clock: Clock;
  readonly #metrics: ScheduleMetrics;
  readonly #requeue: (key: string) => void;
  readonly #retention: RetentionPass | undefined;

  constructor(opts: {
    client: Client;
    events: EventRecorder;
    clock: Clock;
    metrics: ScheduleMetrics;
    /** Queues a key behind the keys queued now (the deferred bookkeeping pass). */
    requeue: (key: string) => void;
    /** spec.retention's pass; unset: retention is not applied (unit tests of the schedule alone). */
    retention?: RetentionPass;
  }) {
    this.#client = opts.client;
    this.#runs = new ScheduleRuns(opts.client, opts.events);
    this.#clock = opts.clock;
    this.#metrics = opts.metrics;
    this.#requeue = opts.requeue;
    this.#retention = opts.retention;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const cron = this.#client.get<CronOperation>(CRON_OPERATION, req);
    if (!cron) return {};
    const ns = req.namespace ?? '';
    const ops = this.#client.list<Operation>(OPERATION, {
      index: [OPERATIONS_BY_CRON.name, keyOf(ns, cron.metadata.uid ?? '')],
    });
    const now = new Date(this.#clock.now());
    const instances = this.#client.list<ApplicationInstance>(APPLICATION_INSTANCE, { namespace: ns });
    // catchUp Skip passes over the slots that came due before this replica's current run began.
    const decided = decideCron(cron, ops, now, instances, new Date(ctx.workersStartedAt));
    const { plan, deferred } = await this.#runs.execute(cron, decided, ops, ctx, {
      kind: 'CronOperation',
      refuse: (p, refused) => {
        const r = refuseCronRuns(p, refused, cron.metadata.generation, now);
        // A refused Operation of a rolled-out run counts as its instance's failure (rollout-run.ts): look
        // again at once, so the run says so and halts when the budget is spent.
        return refused.length > 0 && unfinished(r.status.rollout)
          ? {
              ...r,
              requeueAfterMs: Math.min(
                r.requeueAfterMs ?? REFUSED_ROLLOUT_RECHECK_MS,
                REFUSED_ROLLOUT_RECHECK_MS,
              ),
            }
          : r;
      },
      deferBookkeeping: RUN_EVENTS,
      created: (op) => this.#observeLag(op),
    });
    if (deferred) {
      // Added while processing, the key runs again after this pass, at the back of the queue.
      this.#requeue(ctx.key);
      return {};
    }
    this.#countMissed(plan.skippedSlots, plan.events);
    // On the status just written (read back from this client's own writes).
    await this.#retention?.run(
      this.#client.get<CronOperation>(CRON_OPERATION, req) ?? cron,
      now,
      ctx.log,
      ctx.signal,
    );
    return plan.requeueAfterMs !== undefined ? { requeueAfter: Math.max(1, plan.requeueAfterMs) } : {};
  }

  #observeLag(op: Operation): void {
    const slot = Date.parse(op.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME] ?? '');
    if (!Number.isNaN(slot))
      this.#metrics.lag.observe({ kind: CRON_OPERATION.kind }, Math.max(0, this.#clock.now() - slot) / 1000);
  }

  #countMissed(skipped: number | undefined, events: readonly { reason: string }[]): void {
    const kind = CRON_OPERATION.kind;
    if (skipped) this.#metrics.missed.inc({ kind, reason: 'Missed' }, skipped);
    for (const e of events) {
      if (e.reason === CRON_EVENT.MissedSchedule)
        this.#metrics.missed.inc({ kind, reason: 'StartingDeadlineExceeded' });
      if (e.reason === CRON_EVENT.RunSkippedForbidden)
        this.#metrics.missed.inc({ kind, reason: 'ConcurrencyForbidden' });
    }
  }
}

/** The CronOperation controller on `mgr`'s shared cache, registered with `mgr`. */
export function setupCronController(mgr: Manager, deps: SchedulerDeps): Controller {
  const clock = deps.clock ?? realClock;
  const client = new Client({ client: deps.client, mapper: deps.mapper, cache: mgr.cache });
  let controller: Controller | undefined;
  const reconciler = new CronReconciler({
    client,
    events: deps.events,
    clock,
    metrics: new ScheduleMetrics(mgr.metrics.registry),
    requeue: (key) => controller?.enqueue(key),
    retention: new RetentionPass({
      client,
      kube: deps.client,
      events: deps.events,
      veleroNamespace: deps.veleroNamespace ?? DEFAULT_VELERO_NAMESPACE,
    }),
  });
  // Status-only updates (our own writes) do not reconcile: the requeue and our own writes cover them.
  const b = controllerFor<CronOperation>(mgr, CRON_OPERATION, {
    predicates: [{ update: anyOf(generationChanged, labelsOrAnnotationsChanged) }],
  }).named(CRON_CONTROLLER_NAME);
  const crons = b.informer<CronOperation>(CRON_OPERATION);
  b.informer<Operation>(OPERATION).addIndexer(OPERATIONS_BY_CRON.name, OPERATIONS_BY_CRON.fn);
  registerCronMetrics(mgr.metrics.registry, () => crons.list());
  // A paused instance that is resumed may release a queued run-now request (or queued fleet targets).
  b.watches<ApplicationInstance>(
    APPLICATION_INSTANCE,
    (inst) =>
      crons
        .list(inst.metadata.namespace)
        .filter((c) => cronTargets(c, inst))
        .map((c) => ({ namespace: c.metadata.namespace ?? '', name: c.metadata.name ?? '' })),
    { predicates: [{ update: (a, b) => isPaused(a) !== isPaused(b) }] },
  );
  b.watches<Operation>(OPERATION, (op) => ownerRequest(op, 'CronOperation'), {
    predicates: [{ update: phaseChanged }],
  });
  controller = b
    .withOptions({
      clock,
      ...(deps.workers ? { workers: deps.workers } : {}),
      ...(deps.activity ? { activity: deps.activity } : {}),
    })
    .complete(reconciler);
  return controller;
}
