// The WatchOperation controller: the thin shell around decideWatch (watch-decide.ts).
//
// Triggers: a WatchOperation's spec/labels/annotations change; an ApplicationInstance of its namespace
// changes spec (generation), labels or annotations — status-only updates are filtered out here and ignored
// by the decision anyway; one of its Operations (label ops.vworkspace.io/watch-operation) is added,
// changes phase or is deleted.
//
// Order of writes: cancels, creates (deterministic names; AlreadyExists ⇒ adopt), processed marks and
// label removals on instances, pruning, then status. A crash before the status write decides the same
// triggers again and adopts the same Operations. What this process decided and wrote is also kept in
// memory until the informer caches have caught up (by resourceVersion), so a reconcile on a lagging cache
// never sees an already handled trigger as new.
//
// RBAC: watchoperations get/list/watch, watchoperations/status patch, applicationinstances
// get/list/watch/patch, operations get/list/watch/create/patch/delete, events create/patch.

import {
  ANNOTATION_TRIGGER,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  OPERATION,
  type Operation,
  WATCH_OPERATION,
  type WatchOperation,
  type WatchOperationStatus,
  watchProcessedAnnotation,
} from '../api/index.ts';
import { indexed, OPERATIONS_BY_WATCH } from '../indexes.ts';
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
import { cancelOperation, createOrAdopt, deleteOperation } from './operations-io.ts';
import { schedulerOwner } from './owner.ts';
import { isRefusal, nameTakenError, type Refusal, refusalOf, withRefusals } from './refused.ts';
import { CreatedOperations, olderThan, phaseChanged } from './shell.ts';

export { olderThan };

import { decideWatch } from './watch-decide.ts';

export const WATCH_CONTROLLER_NAME = 'watchoperation';

export interface WatchControllerDeps {
  kc: KubeConfigLike;
  client: KubeClient;
  writer: ObjectWriter;
  events: EventRecorder;
  logger: Logger;
  metrics?: RuntimeMetrics;
  /** "now" of every decision (lastTriggerTime, pendingSince). Tests pass a FakeClock. */
  clock?: Clock;
  /** Shared informers (main passes the process's one factory); default: a factory of its own. */
  informers?: InformerFactory;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. */
  workers?: number;
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
}

export interface WatchController {
  controller: Controller;
  informers: readonly [Informer<WatchOperation>, Informer<ApplicationInstance>, Informer<Operation>];
}

interface InstanceMemo {
  uid: string;
  processed: string | null;
  removed: string[];
  rv?: string;
}

export function createWatchController(deps: WatchControllerDeps): WatchController {
  const clock = deps.clock ?? realClock;
  const res = (r: typeof WATCH_OPERATION) => ({ group: r.group, version: r.version, plural: r.plural });
  const factory =
    deps.informers ?? new InformerFactory({ kc: deps.kc, client: deps.client, logger: deps.logger });
  const scope = scopedTo(deps.namespaces);
  const watches = factory.informer<WatchOperation>(res(WATCH_OPERATION), scope);
  const instances = factory.informer<ApplicationInstance>(res(APPLICATION_INSTANCE), scope);
  const operations = factory.informer<Operation>(res(OPERATION), scope);
  const operationsOf = indexed(operations, OPERATIONS_BY_WATCH);
  const decided = new Map<string, { uid: string; status: WatchOperationStatus; rv?: string }>();
  const marks = new Map<string, InstanceMemo>();
  const created = new CreatedOperations();

  function trustedStatus(key: string, w: WatchOperation): WatchOperationStatus | undefined {
    const mine = decided.get(key);
    if (!mine || mine.uid !== w.metadata.uid) return w.status;
    if (!olderThan(w.metadata.resourceVersion, mine.rv)) {
      decided.delete(key);
      return w.status;
    }
    return mine.status;
  }

  /** The instance as this process last wrote its processed mark and labels, if the cache lags behind. */
  function trustedInstance(watchName: string, inst: ApplicationInstance): ApplicationInstance {
    const k = `${objectKey(inst)}\u0000${watchName}`;
    const m = marks.get(k);
    if (!m || m.uid !== inst.metadata.uid || !olderThan(inst.metadata.resourceVersion, m.rv)) {
      marks.delete(k);
      return inst;
    }
    const annotations = { ...(inst.metadata.annotations ?? {}) };
    const key = watchProcessedAnnotation(watchName);
    if (m.processed === null) delete annotations[key];
    else annotations[key] = m.processed;
    const labels = { ...(inst.metadata.labels ?? {}) };
    for (const l of m.removed) delete labels[l];
    return { ...inst, metadata: { ...inst.metadata, annotations, labels } };
  }

  async function reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const watch = watches.getByKey(ctx.key);
    const ns = ctx.namespace ?? '';
    if (!watch) {
      decided.delete(ctx.key);
      created.forget(ctx.key);
      return {};
    }
    const status = trustedStatus(ctx.key, watch);
    const view = instances.list(ns).map((i) => trustedInstance(ctx.name, i));
    const ops = created.merge(ctx.key, operationsOf(ns, watch.metadata.uid ?? ''));
    const now = new Date(clock.now());
    let plan = decideWatch({ ...watch, ...(status ? { status } : {}) }, view, ops, now);
    const uid = watch.metadata.uid ?? '';

    for (const name of plan.cancel) {
      ctx.log.info({ operation: name }, 'cancelling (concurrencyPolicy Replace)');
      await cancelOperation(deps.client, ns, name, ctx.signal);
    }
    const adopted = new Set<string>();
    const refusals: Refusal[] = [];
    for (const op of plan.create) {
      let r: Awaited<ReturnType<typeof createOrAdopt>>;
      const trigger = op.metadata.annotations?.[ANNOTATION_TRIGGER] ?? 'a trigger';
      const what = `${trigger} on ApplicationInstance ${op.spec.targetRef.name}`;
      try {
        r = await createOrAdopt(
          deps.client,
          op,
          { kind: 'WatchOperation', uid: watch.metadata.uid },
          ctx.signal,
        );
      } catch (err) {
        // A refusal is said in status and an Event (refused.ts); anything else is retried with backoff.
        if (!isRefusal(err)) throw err;
        ctx.log.warn({ operation: op.metadata.name, err: String(err) }, 'Operation refused');
        refusals.push(refusalOf(op.metadata.name ?? '', what, err));
        continue;
      }
      if (r.taken) {
        ctx.log.warn(
          { operation: op.metadata.name },
          'Operation name taken by one this WatchOperation did not create',
        );
        refusals.push(refusalOf(op.metadata.name ?? '', what, nameTakenError(WATCH_OPERATION.kind, r.op)));
        continue;
      }
      created.add(ctx.key, r.op);
      if (r.adopted) adopted.add(r.op.metadata.name ?? '');
      ctx.log.info(
        { operation: r.op.metadata.name, target: op.spec.targetRef.name, adopted: r.adopted },
        r.adopted ? 'adopted Operation' : 'created Operation',
      );
    }
    if (refusals.length > 0) {
      plan = { ...plan, ...withRefusals(plan.status, plan.events, refusals, watch.metadata.generation, now) };
    }
    if (plan.decided || plan.create.length > 0) decided.set(ctx.key, { uid, status: plan.status });

    const processedKey = watchProcessedAnnotation(ctx.name);
    for (const p of plan.instances) {
      const inst = view.find((i) => i.metadata.name === p.instance);
      const labels = Object.fromEntries(p.removeLabels.map((l) => [l, null]));
      const patched = await deps.writer.mergePatch<ApplicationInstance>(
        {
          apiVersion: APPLICATION_INSTANCE.apiVersion,
          kind: APPLICATION_INSTANCE.kind,
          metadata: { name: p.instance, namespace: ns },
        },
        {
          metadata: {
            annotations: { [processedKey]: p.processed },
            ...(p.removeLabels.length ? { labels } : {}),
          },
        },
        { signal: ctx.signal },
      );
      marks.set(`${keyOf(ns, p.instance)}\u0000${ctx.name}`, {
        uid: inst?.metadata.uid ?? patched.metadata?.uid ?? '',
        processed: p.processed,
        removed: p.removeLabels,
        ...(patched.metadata?.resourceVersion ? { rv: patched.metadata.resourceVersion } : {}),
      });
    }
    for (const name of plan.prune) {
      ctx.log.info({ operation: name }, 'deleting Operation beyond the history limit');
      const opUid = ops.find((o) => o.metadata.name === name)?.metadata.uid;
      await deleteOperation(deps.client, ns, name, opUid, ctx.signal);
    }
    const identity = {
      apiVersion: WATCH_OPERATION.apiVersion,
      kind: WATCH_OPERATION.kind,
      metadata: { name: ctx.name, namespace: ns },
    };
    if (!jsonEqual(watch.status ?? {}, plan.status)) {
      const written = await deps.writer.applyStatus<WatchOperation>(identity, plan.status, {
        signal: ctx.signal,
      });
      const rv = written.metadata?.resourceVersion;
      decided.set(ctx.key, { uid, status: plan.status, ...(rv ? { rv } : {}) });
    }
    for (const e of plan.events) {
      if (e.reason === 'OperationCreated' && [...adopted].some((n) => e.note.includes(n))) continue;
      await deps.events.event(watch, e.type, e.reason, e.note);
    }
    return {};
  }

  const controller = new Controller({
    name: WATCH_CONTROLLER_NAME,
    reconcile,
    clock,
    logger: deps.logger,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.workers ? { workers: deps.workers } : {}),
  });
  const specOrMeta = anyOf(generationChanged, labelsOrAnnotationsChanged);
  controller.watch(watches, { updatePredicate: specOrMeta });
  // Every WatchOperation of the namespace looks at the instance; the selector is applied in the decision
  // (an instance that stops matching must still reach the WatchOperation, to drop its target).
  controller.watch(instances, {
    map: (inst) => watches.list(inst.metadata.namespace).map((w) => objectKey(w)),
    updatePredicate: specOrMeta,
  });
  controller.watch(operations, {
    map: (op) => {
      const owner = schedulerOwner(op, 'WatchOperation')?.name;
      return owner ? keyOf(op.metadata.namespace, owner) : undefined;
    },
    updatePredicate: phaseChanged,
  });
  return { controller, informers: [watches, instances, operations] };
}
