// The CronOperation controller: the thin shell around decideCron (cron-decide.ts).
//
// Triggers: a CronOperation's spec, labels or annotations change (skip-next), one of its Operations
// (label ops.vworkspace.io/cron-operation) is added, changes phase or is deleted, and the requeue at
// exactly the next slot (on the injected Clock: no polling).
//
// Order of writes, chosen so a crash anywhere never runs a slot twice: skip-next removal, cancels,
// create (deterministic name; AlreadyExists ⇒ adopt), then, in a second pass queued behind the other
// runs due at the same slot, pruning and status.lastScheduleTime. A restart between create and status
// decides the same slot again and adopts. What this process handled is also kept in
// memory, so a reconcile that runs on a cache that has not yet seen our own status write never handles a
// slot again (the annotation removal and the status write arrive as separate watch events).
//
// RBAC: cronoperations get/list/watch/patch, cronoperations/status patch, operations
// get/list/watch/create/patch/delete in the namespaces of CronOperations, events create/patch.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  CRON_OPERATION,
  type CronOperation,
  type CronOperationStatus,
  LABEL_CRON_OPERATION,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import { indexed, OPERATIONS_BY_CRON } from '../indexes.ts';
import {
  anyOf,
  type Clock,
  Controller,
  type EventRecorder,
  generationChanged,
  type Informer,
  InformerFactory,
  type KubeClient,
  keyOf,
  type Logger,
  labelsOrAnnotationsChanged,
  type ObjectWriter,
  type ReconcileContext,
  type ReconcileResult,
  type RuntimeMetrics,
  realClock,
} from '../runtime/index.ts';
import { CRON_EVENT, decideCron } from './cron-decide.ts';
import { ScheduleMetrics } from './metrics.ts';
import { cancelOperation, createOrAdopt, deleteOperation } from './operations-io.ts';
import { CreatedOperations, phaseChanged } from './shell.ts';

export const CRON_CONTROLLER_NAME = 'cronoperation';

export interface CronControllerDeps {
  kc: KubeConfig;
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
}

export interface CronController {
  controller: Controller;
  informers: readonly [Informer<CronOperation>, Informer<Operation>];
}

function time(s: string | undefined): number {
  const t = s ? Date.parse(s) : Number.NaN;
  return Number.isNaN(t) ? Number.NEGATIVE_INFINITY : t;
}

export function createCronController(deps: CronControllerDeps): CronController {
  const clock = deps.clock ?? realClock;
  const resource = (r: typeof CRON_OPERATION) => ({ group: r.group, version: r.version, plural: r.plural });
  // Informers keep the real clock: their reconnect backoff is not part of the schedule.
  const factory =
    deps.informers ?? new InformerFactory({ kc: deps.kc, client: deps.client, logger: deps.logger });
  const crons = factory.informer<CronOperation>(resource(CRON_OPERATION));
  const operations = factory.informer<Operation>(resource(OPERATION));
  const operationsOf = indexed(operations, OPERATIONS_BY_CRON);
  // The status this process last decided per CronOperation (by uid): trusted over a lagging cache.
  const decided = new Map<string, { uid: string; status: CronOperationStatus }>();
  const created = new CreatedOperations();
  const scheduleMetrics = deps.metrics ? new ScheduleMetrics(deps.metrics.registry) : undefined;
  const kind = { kind: CRON_OPERATION.kind };

  function trustedStatus(key: string, cron: CronOperation): CronOperationStatus | undefined {
    const mine = decided.get(key);
    if (!mine || mine.uid !== cron.metadata.uid) return cron.status;
    const cached = cron.status;
    return time(mine.status.lastScheduleTime) > time(cached?.lastScheduleTime) ? mine.status : cached;
  }

  async function reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const cron = crons.getByKey(ctx.key);
    const ns = ctx.namespace ?? '';
    if (!cron) {
      decided.delete(ctx.key);
      created.forget(ctx.key);
      return {};
    }
    const ops = created.merge(ctx.key, operationsOf(ns, ctx.name));
    const status = trustedStatus(ctx.key, cron);
    const now = new Date(clock.now());
    const plan = decideCron({ ...cron, ...(status ? { status } : {}) }, ops, now);
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
    let adopted = false;
    if (plan.create) {
      const res = await createOrAdopt(deps.client, plan.create, ctx.signal);
      adopted = res.adopted;
      created.add(ctx.key, res.op);
      const slot = Date.parse(plan.create.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME] ?? '');
      if (!adopted && !Number.isNaN(slot))
        scheduleMetrics?.lag.observe(kind, Math.max(0, clock.now() - slot) / 1000);
      ctx.log.info(
        { operation: res.op.metadata.name, adopted },
        adopted ? 'adopted Operation' : 'created Operation',
      );
    }
    if (plan.handledSlot && cron.metadata.uid)
      decided.set(ctx.key, { uid: cron.metadata.uid, status: plan.status });
    if (plan.skippedSlots) scheduleMetrics?.missed.inc({ ...kind, reason: 'Missed' }, plan.skippedSlots);
    for (const e of plan.events) {
      if (e.reason === CRON_EVENT.MissedSchedule)
        scheduleMetrics?.missed.inc({ ...kind, reason: 'StartingDeadlineExceeded' });
      if (e.reason === CRON_EVENT.RunSkippedForbidden)
        scheduleMetrics?.missed.inc({ ...kind, reason: 'ConcurrencyForbidden' });
      if (adopted && e.reason === 'OperationCreated') continue;
      await deps.events.event(cron, e.type, e.reason, e.note);
    }
    if (plan.create && !adopted) {
      // The run exists, which is what the slot promised. Its bookkeeping (pruning, status) goes to the
      // back of the queue, behind every other run due now: N due schedules cost N creates before N
      // status writes, instead of interleaving them, which halves the lag of the last run when the
      // client's QPS budget is what bounds them. The next pass sees the run (cache or `created`), adopts
      // it and writes the status `decided` holds; a crash meanwhile re-decides the slot and adopts.
      // (Added while processing, the key runs again after this pass, at the back of the queue.)
      controller.enqueue(ctx.key);
      return {};
    }
    for (const name of plan.prune) {
      ctx.log.info({ operation: name }, 'deleting Operation beyond the history limit');
      await deleteOperation(deps.client, ns, name, ctx.signal);
    }
    await deps.writer.applyStatusIfChanged({ ...identity, status: cron.status }, plan.status, opts);
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
  // Status-only updates (our own writes) do not reconcile: the requeue and the in-memory status cover them.
  controller.watch(crons, { updatePredicate: anyOf(generationChanged, labelsOrAnnotationsChanged) });
  controller.watch(operations, {
    map: (op) => {
      const owner = op.metadata.labels?.[LABEL_CRON_OPERATION];
      return owner ? keyOf(op.metadata.namespace, owner) : undefined;
    },
    updatePredicate: phaseChanged,
  });
  return { controller, informers: [crons, operations] };
}
