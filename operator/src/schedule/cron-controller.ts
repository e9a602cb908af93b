// The CronOperation controller: the thin shell around decideCron (cron-decide.ts).
//
// Triggers: a CronOperation's spec, labels or annotations change (skip-next), one of its Operations
// (label ops.vworkspace.io/cron-operation) is added, changes phase or is deleted, and the requeue at
// exactly the next slot (on the injected Clock: no polling).
//
// Order of writes, chosen so a crash anywhere never runs a slot twice: skip-next removal, cancels,
// create (deterministic name; AlreadyExists ⇒ adopt), then status.lastScheduleTime. A restart between
// create and status decides the same slot again and adopts. What this process handled is also kept in
// memory, so a reconcile that runs on a cache that has not yet seen our own status write never handles a
// slot again (the annotation removal and the status write arrive as separate watch events).
//
// RBAC: cronoperations get/list/watch/patch, cronoperations/status patch, operations
// get/list/watch/create/patch/delete in the namespaces of CronOperations, events create/patch.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  ANNOTATION_SKIP_NEXT,
  CRON_OPERATION,
  type CronOperation,
  type CronOperationStatus,
  LABEL_CRON_OPERATION,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import {
  anyOf,
  type Clock,
  Controller,
  createInformer,
  type EventRecorder,
  generationChanged,
  type Informer,
  type KubeClient,
  keyOf,
  type Logger,
  labelsOrAnnotationsChanged,
  type ObjectWriter,
  type ReconcileContext,
  type ReconcileResult,
  type RuntimeMetrics,
  realClock,
  scopedTo,
} from '../runtime/index.ts';
import { decideCron } from './cron-decide.ts';
import { cancelOperation, createOrAdopt, deleteOperation } from './operations-io.ts';
import { isRefusal, refuseCronRun } from './refused.ts';
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
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
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
  const crons = createInformer<CronOperation>(deps.kc, resource(CRON_OPERATION), {
    client: deps.client,
    ...scopedTo(deps.namespaces),
    logger: deps.logger,
  });
  const operations = createInformer<Operation>(deps.kc, resource(OPERATION), {
    name: 'operations.cron',
    client: deps.client,
    ...scopedTo(deps.namespaces),
    logger: deps.logger,
    labelSelector: LABEL_CRON_OPERATION,
  });
  // The status this process last decided per CronOperation (by uid): trusted over a lagging cache.
  const decided = new Map<string, { uid: string; status: CronOperationStatus }>();
  const created = new CreatedOperations();

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
    const mine = operations.list(ns).filter((o) => o.metadata.labels?.[LABEL_CRON_OPERATION] === ctx.name);
    const ops = created.merge(ctx.key, mine);
    const status = trustedStatus(ctx.key, cron);
    const now = new Date(clock.now());
    let plan = decideCron({ ...cron, ...(status ? { status } : {}) }, ops, now);
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
      try {
        const res = await createOrAdopt(deps.client, plan.create, ctx.signal);
        adopted = res.adopted;
        created.add(ctx.key, res.op);
        ctx.log.info(
          { operation: res.op.metadata.name, adopted },
          adopted ? 'adopted Operation' : 'created Operation',
        );
      } catch (err) {
        // A refusal is said in status and an Event (refused.ts); anything else is retried with backoff.
        if (!isRefusal(err)) throw err;
        ctx.log.warn({ operation: plan.create.metadata.name, err: String(err) }, 'Operation refused');
        plan = refuseCronRun(plan, err, cron.metadata.generation, now);
      }
    }
    if (plan.handledSlot && cron.metadata.uid)
      decided.set(ctx.key, { uid: cron.metadata.uid, status: plan.status });
    for (const name of plan.prune) {
      ctx.log.info({ operation: name }, 'deleting Operation beyond the history limit');
      await deleteOperation(deps.client, ns, name, ctx.signal);
    }
    await deps.writer.applyStatusIfChanged({ ...identity, status: cron.status }, plan.status, opts);
    for (const e of plan.events) {
      if (adopted && e.reason === 'OperationCreated') continue;
      await deps.events.event(cron, e.type, e.reason, e.note);
    }
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: Math.max(1, plan.requeueAfterMs) } : {};
  }

  const controller = new Controller({
    name: CRON_CONTROLLER_NAME,
    reconcile,
    clock,
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
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
