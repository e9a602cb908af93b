// The CronOperation controller: the thin shell around decideCron (cron-decide.ts).
//
// Triggers: a CronOperation's spec, labels or annotations change (skip-next, run-now), one of its
// Operations (controller ownerReference, owner.ts) is added, changes phase or is deleted (a queued
// target may start), and the requeue at exactly the next slot (on the injected Clock: no polling).
// ApplicationInstances are read from a cache (fleet targets, object.* substitutions, the paused
// annotation); only resuming a paused one triggers (a queued request may run): a fleet's targets are
// chosen when a run starts.
//
// Order of writes, chosen so a crash anywhere never runs a slot twice: skip-next removal, cancels,
// create (deterministic name; AlreadyExists ⇒ adopt when its controller is this CronOperation, else the
// run is refused: a pre-created Operation never stands in for a run), then, in a second pass queued behind the other
// runs due at the same slot, pruning and status.lastScheduleTime. A restart between create and status
// decides the same slot again and adopts. What this process handled is also kept in
// memory, so a reconcile that runs on a cache that has not yet seen our own status write never handles a
// slot again (the annotation removal and the status write arrive as separate watch events). A run-now
// request is recorded in status.manualRun the same way, and its Operation's name derives from the value,
// so a restart adopts it instead of running it twice.
//
// RBAC: cronoperations get/list/watch/patch, cronoperations/status patch, applicationinstances
// get/list/watch, operations get/list/watch/create/patch/delete in the namespaces of CronOperations,
// events create/patch.

import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CRON_OPERATION,
  type CronOperation,
  type CronOperationStatus,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import { indexed, OPERATIONS_BY_CRON } from '../indexes.ts';
import { cronTargets } from '../instance/operations-summary.ts';
import { isPaused } from '../instance/paused.ts';
import {
  anyOf,
  type Clock,
  Controller,
  type EventRecorder,
  generationChanged,
  type Informer,
  InformerFactory,
  jsonEqual,
  type KubeClient,
  keyOf,
  type Logger,
  labelsOrAnnotationsChanged,
  type ObjectWriter,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  type RuntimeMetrics,
  realClock,
  scopedTo,
} from '../runtime/index.ts';
import type { KubeConfigLike } from '../runtime/kubeconfig.ts';
import { CRON_EVENT, decideCron } from './cron-decide.ts';
import { registerCronMetrics } from './cron-metrics.ts';
import { ScheduleMetrics } from './metrics.ts';
import { cancelOperation, createOrAdopt, deleteOperation } from './operations-io.ts';
import { schedulerOwner } from './owner.ts';
import { isRefusal, nameTakenError, refuseCronRuns } from './refused.ts';
import { CreatedOperations, olderThan, phaseChanged } from './shell.ts';

export const CRON_CONTROLLER_NAME = 'cronoperation';

export interface CronControllerDeps {
  kc: KubeConfigLike;
  client: KubeClient;
  writer: ObjectWriter;
  events: EventRecorder;
  logger: Logger;
  metrics?: RuntimeMetrics;
  /** Drives the schedule: "now" of every decision and the requeue at the next slot. Tests pass a FakeClock. */
  clock?: Clock;
  /** Shared informers (main passes the process's one factory); default: a factory of its own. */
  informers?: InformerFactory;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. */
  workers?: number;
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
}

export interface CronController {
  controller: Controller;
  informers: readonly [Informer<CronOperation>, Informer<Operation>, Informer<ApplicationInstance>];
}

export function createCronController(deps: CronControllerDeps): CronController {
  const clock = deps.clock ?? realClock;
  const resource = (r: typeof CRON_OPERATION) => ({ group: r.group, version: r.version, plural: r.plural });
  // Informers keep the real clock: their reconnect backoff is not part of the schedule.
  const factory =
    deps.informers ?? new InformerFactory({ kc: deps.kc, client: deps.client, logger: deps.logger });
  const scope = scopedTo(deps.namespaces);
  const instances = factory.informer<ApplicationInstance>(resource(APPLICATION_INSTANCE), scope);
  const crons = factory.informer<CronOperation>(resource(CRON_OPERATION), scope);
  const operations = factory.informer<Operation>(resource(OPERATION), scope);
  const operationsOf = indexed(operations, OPERATIONS_BY_CRON);
  // The status this process last decided per CronOperation (by uid), and the resourceVersion its write
  // returned: trusted until the cache has caught up with that write.
  const decided = new Map<string, { uid: string; status: CronOperationStatus; rv?: string }>();
  const created = new CreatedOperations();
  const scheduleMetrics = deps.metrics ? new ScheduleMetrics(deps.metrics.registry) : undefined;
  const kind = { kind: CRON_OPERATION.kind };

  function trustedStatus(key: string, cron: CronOperation): CronOperationStatus | undefined {
    const mine = decided.get(key);
    if (!mine || mine.uid !== cron.metadata.uid) return cron.status;
    if (!olderThan(cron.metadata.resourceVersion, mine.rv)) {
      decided.delete(key);
      return cron.status;
    }
    return mine.status;
  }

  async function reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const cron = crons.getByKey(ctx.key);
    const ns = ctx.namespace ?? '';
    if (!cron) {
      decided.delete(ctx.key);
      created.forget(ctx.key);
      return {};
    }
    const ops = created.merge(ctx.key, operationsOf(ns, cron.metadata.uid ?? ''));
    const status = trustedStatus(ctx.key, cron);
    const now = new Date(clock.now());
    let plan = decideCron({ ...cron, ...(status ? { status } : {}) }, ops, now, instances.list(ns));
    const identity = {
      apiVersion: CRON_OPERATION.apiVersion,
      kind: CRON_OPERATION.kind,
      metadata: { name: ctx.name, namespace: ns },
    };
    const opts = { signal: ctx.signal };

    if (plan.removeSkipNext) {
      await deps.writer.mergePatch(
        identity,
        { metadata: { annotations: { [ANNOTATION_SKIP_NEXT]: null } } },
        opts,
      );
    }
    for (const name of plan.cancel) {
      ctx.log.info({ operation: name }, 'cancelling (concurrencyPolicy Replace)');
      await cancelOperation(deps.client, ns, name, ctx.signal);
    }
    const adopted = new Set<string>();
    const refused: { op: Operation; err: unknown }[] = [];
    let createdNew = false;
    for (const op of plan.create) {
      let res: Awaited<ReturnType<typeof createOrAdopt>>;
      try {
        res = await createOrAdopt(
          deps.client,
          op,
          { kind: 'CronOperation', uid: cron.metadata.uid },
          ctx.signal,
        );
      } catch (err) {
        // A refusal is said in status and an Event (refused.ts); anything else is retried with backoff.
        if (!isRefusal(err)) throw err;
        ctx.log.warn({ operation: op.metadata.name, err: String(err) }, 'Operation refused');
        refused.push({ op, err });
        continue;
      }
      if (res.taken) {
        ctx.log.warn(
          { operation: op.metadata.name },
          'Operation name taken by one this CronOperation did not create',
        );
        refused.push({ op, err: nameTakenError(CRON_OPERATION.kind, res.op) });
        continue;
      }
      if (res.adopted) adopted.add(res.op.metadata.name ?? '');
      else createdNew = true;
      created.add(ctx.key, res.op);
      const slot = Date.parse(op.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME] ?? '');
      if (!res.adopted && !Number.isNaN(slot))
        scheduleMetrics?.lag.observe(kind, Math.max(0, clock.now() - slot) / 1000);
      ctx.log.info(
        { operation: res.op.metadata.name, target: op.spec.targetRef.name, adopted: res.adopted },
        res.adopted ? 'adopted Operation' : 'created Operation',
      );
    }
    plan = refuseCronRuns(plan, refused, cron.metadata.generation, now);
    const uid = cron.metadata.uid ?? '';
    // Remembered before the status write, so a failed write cannot make a lagging cache re-decide.
    if (!jsonEqual(status ?? {}, plan.status)) decided.set(ctx.key, { uid, status: plan.status });
    if (plan.skippedSlots) scheduleMetrics?.missed.inc({ ...kind, reason: 'Missed' }, plan.skippedSlots);
    for (const e of plan.events) {
      if (e.reason === CRON_EVENT.MissedSchedule)
        scheduleMetrics?.missed.inc({ ...kind, reason: 'StartingDeadlineExceeded' });
      if (e.reason === CRON_EVENT.RunSkippedForbidden)
        scheduleMetrics?.missed.inc({ ...kind, reason: 'ConcurrencyForbidden' });
    }
    const announce = async () => {
      for (const e of plan.events) {
        if (e.reason === 'OperationCreated' && [...adopted].some((n) => e.note.includes(`Operation ${n} `)))
          continue;
        await deps.events.event(cron, e.type, e.reason, e.note);
      }
    };
    if (createdNew && refused.length === 0) {
      // The runs exist, which is what the slot promised. Their bookkeeping (pruning, status) goes to the
      // back of the queue, behind every other run due now: N due schedules cost N creates before N
      // status writes, instead of interleaving them, which halves the lag of the last run when the
      // client's QPS budget is what bounds them. The next pass sees the runs (cache or `created`), adopts
      // them and writes the status `decided` holds; a crash meanwhile re-decides the slot and adopts.
      // (Added while processing, the key runs again after this pass, at the back of the queue.)
      await announce();
      controller.enqueue(ctx.key);
      return {};
    }
    for (const name of plan.prune) {
      ctx.log.info({ operation: name }, 'deleting Operation beyond the history limit');
      const uid = ops.find((o) => o.metadata.name === name)?.metadata.uid;
      await deleteOperation(deps.client, ns, name, uid, ctx.signal);
    }
    if (!jsonEqual(cron.status ?? {}, plan.status)) {
      const written = await deps.writer.applyStatus<CronOperation>(identity, plan.status, opts);
      const rv = written.metadata?.resourceVersion;
      decided.set(ctx.key, { uid, status: plan.status, ...(rv ? { rv } : {}) });
    }
    await announce();
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: Math.max(1, plan.requeueAfterMs) } : {};
  }

  const controller = new Controller({
    name: CRON_CONTROLLER_NAME,
    reconcile,
    clock,
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.workers ? { workers: deps.workers } : {}),
  });
  if (deps.metrics) registerCronMetrics(deps.metrics.registry, () => crons.list());
  // Status-only updates (our own writes) do not reconcile: the requeue and the in-memory status cover them.
  controller.watch(crons, { updatePredicate: anyOf(generationChanged, labelsOrAnnotationsChanged) });
  // A paused instance that is resumed may release a queued run-now request (or queued fleet targets).
  controller.watch(instances, {
    map: (inst) =>
      crons
        .list(inst.metadata.namespace)
        .filter((c) => cronTargets(c, inst))
        .map((c) => objectKey(c)),
    updatePredicate: (a, b) => isPaused(a) !== isPaused(b),
  });
  controller.watch(operations, {
    map: (op) => {
      const owner = schedulerOwner(op, 'CronOperation')?.name;
      return owner ? keyOf(op.metadata.namespace, owner) : undefined;
    },
    updatePredicate: phaseChanged,
  });
  return { controller, informers: [crons, operations, instances] };
}
