// The Operation reconciler: the thin I/O shell around decide.ts.
//
// Per reconcile: read the Operation and its target from the caches; while it has not started, gather
// the precondition facts (facts.ts); read the current attempt's children and the engine's environment
// (children.ts, environment.ts); decide; then perform the decision in a crash-safe order — create
// children (deterministic names: an existing child of that name is adopted only with proof, so a crash
// between "create" and "write status" never makes a second child), cancel children, write the status
// (only when it changed), record Events, delete the Operation when its TTL passed. What triggers it:
// controller.ts.
//
// API errors (5xx, conflicts, timeouts, failed reviews) are thrown: the queue retries with backoff and
// the Operation is never failed for them.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type Client,
  type Clock,
  type EventRecorder,
  type Informer,
  KeyedMutex,
  type KubeClient,
  keyOf,
  type ObjectWriter,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from '@vworkspace/runtime';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { OPERATION } from '../api/constants.ts';
import type { Engine } from '../api/enums.ts';
import type { Operation, OperationStatus } from '../api/operation.ts';
import { isPaused } from '../api/paused.ts';
import { CONDITION_ACCEPTED, Reason } from '../api/reasons.ts';
import type { Template } from '../catalog/template.ts';
import type { EngineAdapter, EngineEnvironment } from '../engines/types.ts';
import { childConflictStatus } from './adoption.ts';
import { isInvalid, type OperationChildren } from './children.ts';
import {
  ANNOTATION_RECONCILE_HANDLED,
  CLEANUP_RECHECK_MS,
  type Decision,
  decide,
  isTerminalPhase,
  needsPreconditions,
  withOwnership,
} from './decide.ts';
import type { EnvironmentReader } from './environment.ts';
import type { PreconditionReader } from './facts.ts';
import type { OperationMetrics } from './metrics.ts';
import { readPodOutcomes } from './pod-outcomes.ts';
import type { PreconditionFacts } from './preconditions.ts';
import { recordedInstance } from './restore-source.ts';
import type { NameWatcher } from './watchers.ts';

/** What one reconcile observed before deciding. */
interface Observed {
  target: ApplicationInstance | undefined;
  adapter: EngineAdapter | undefined;
  facts: PreconditionFacts | undefined;
  children: KubernetesObject[];
  /** A recorded child that is no longer the object recorded (adoption.ts). */
  replaced: string | undefined;
  pods: Awaited<ReturnType<typeof readPodOutcomes>>;
  env: EngineEnvironment;
}

export interface OperationReconcilerOptions {
  operations: Informer<Operation>;
  instances: Informer<ApplicationInstance>;
  /** Status writes, seen by every cache read of this process at once (read-your-own-writes). */
  client: Client;
  /** Direct reads the cache does not hold (the children's Pods). */
  kube: KubeClient;
  /** Merge patches of the Operation's metadata. */
  writer: ObjectWriter;
  events: EventRecorder;
  clock: Clock;
  adapterFor: (engine: Engine) => EngineAdapter | undefined;
  templates: () => readonly Template[];
  facts: PreconditionReader;
  environment: EnvironmentReader;
  children: OperationChildren;
  names: NameWatcher;
  metrics: OperationMetrics;
  /** How long TargetNotFound / RbacProfileMissing / EngineNotInstalled wait before failing. */
  graceMs?: number | undefined;
  /** How often an Operation waiting for its engine's CRDs re-reads discovery. */
  engineRecheckMs?: number | undefined;
}

export class OperationReconciler implements Reconciler {
  readonly #o: OperationReconcilerOptions;
  // Operations on one target are decided one at a time: the conflict queue reads the others' state.
  readonly #targetLock = new KeyedMutex();
  /** When this replica first saw an attempt fail: `<uid>/<attempt>` → ms. */
  readonly #failureSeen = new Map<string, number>();

  constructor(opts: OperationReconcilerOptions) {
    this.#o = opts;
  }

  reconcile(_req: Request, ctx: ReconcileContext): Promise<Result> {
    const op = this.#o.operations.getByKey(ctx.key);
    if (!op) return this.#reconcileLocked(ctx);
    return this.#targetLock.run(keyOf(op.metadata.namespace, op.spec.targetRef.name), () =>
      this.#reconcileLocked(ctx),
    );
  }

  async #reconcileLocked(ctx: ReconcileContext): Promise<Result> {
    // Read again under the lock: another reconcile on the target may have changed it.
    const op = this.#o.operations.getByKey(ctx.key);
    if (!op || op.metadata.deletionTimestamp) {
      this.#o.names.release(ctx.key);
      return op ? this.#finalize(op, ctx) : {};
    }
    const seen = await this.#observe(op, ctx);
    const made = await this.#materialize(op, seen, this.#decide(op, seen), ctx);
    const { status, decision } = await this.#adopt(op, seen, made, ctx);
    if (decision.cancel?.length) await this.#o.children.perform(decision.cancel, ctx.signal);
    if (decision.actions?.length) await this.#o.children.perform(decision.actions, ctx.signal);
    if (decision.deleteOperation) {
      ctx.log.info('ttlSecondsAfterFinished passed: deleting the Operation');
      await this.#o.children.deleteOperation(op, ctx.signal);
      return {};
    }
    await this.#o.client.status().applyIfChanged({ ...identity(op), status: op.status }, status, {
      signal: ctx.signal,
    });
    for (const e of decision.events) await this.#o.events.event(op, e.type, e.reason, e.note);
    this.#phaseChanged(op, status, ctx);
    if (decision.reconcileHandled !== undefined) {
      await this.#o.writer.mergePatch(identity(op), {
        metadata: { annotations: { [ANNOTATION_RECONCILE_HANDLED]: decision.reconcileHandled } },
      });
    }
    return decision.requeueAfterMs !== undefined ? { requeueAfter: decision.requeueAfterMs } : {};
  }

  /**
   * A deleted Operation that holds the engine's finalizer (a Verify's scratch namespace): delete what the
   * engine's clean-up names, and take the finalizer off once it is gone.
   */
  async #finalize(op: Operation, ctx: ReconcileContext): Promise<Result> {
    const adapter = this.#o.adapterFor(op.spec.engine);
    if (!adapter?.cleanup || !op.metadata.finalizers?.length) return {};
    const { children } = await this.#o.children.read(op, adapter, ctx.signal);
    const { actions, pending } = adapter.cleanup(children, op);
    await this.#o.children.perform(actions, ctx.signal);
    return pending ? { requeueAfter: CLEANUP_RECHECK_MS } : {};
  }

  /** The target, the precondition facts, the children, their pods and the engine's environment. */
  async #observe(op: Operation, ctx: ReconcileContext): Promise<Observed> {
    const o = this.#o;
    const ended = isTerminalPhase(op.status?.phase);
    const adapter = o.adapterFor(op.spec.engine);
    const target = o.instances.get(op.spec.targetRef.name, op.metadata.namespace);
    // Paused target: decide only records it, so nothing is looked up (and no child is read).
    const paused = isPaused(target) && !ended;
    const waits = needsPreconditions(op) && !paused;
    // A velero Restore's Backup; for one from spec.source whose instance is gone, the instance it recorded.
    const backup =
      op.spec.engine === 'velero' &&
      (op.spec.type === 'Restore' || op.spec.type === 'Verify') &&
      !ended &&
      !paused
        ? await o.environment.restoreBackup(op, ctx.signal)
        : undefined;
    const absent = !target && op.spec.source && waits ? recordedInstance(op, backup) : undefined;
    const facts = waits ? await o.facts.read(ctx, op, target, adapter, absent) : undefined;
    if (!facts) o.names.release(ctx.key);
    const { children, conflict } = paused ? { children: [] } : await o.children.read(op, adapter, ctx.signal);
    const pods =
      adapter?.podOutcomeContainer && !ended
        ? await readPodOutcomes(o.kube, children, adapter.podOutcomeContainer, ctx.signal)
        : undefined;
    const env =
      (ended && !facts) || paused
        ? o.environment.minimal()
        : await o.environment.read(op, target ?? absent?.recorded, children, ctx.signal, backup);
    return { target, adapter, facts, children, replaced: conflict, pods, env };
  }

  #decide(op: Operation, seen: Observed): Decision {
    const o = this.#o;
    const attemptKey = `${op.metadata.uid ?? ''}/${op.status?.attempts ?? 0}`;
    const failureSeenAt = this.#failureSeen.get(attemptKey);
    const d = decide({
      op,
      now: o.clock.now(),
      templates: o.templates(),
      ...(seen.facts ? { facts: seen.facts } : {}),
      ...(seen.target ? { target: seen.target } : {}),
      adapter: seen.adapter,
      env: seen.env,
      children: seen.children,
      ...(seen.pods ? { pods: seen.pods } : {}),
      ...(failureSeenAt !== undefined ? { failureSeenAt } : {}),
      ...(o.graceMs !== undefined ? { graceMs: o.graceMs } : {}),
      ...(o.engineRecheckMs !== undefined ? { engineRecheckMs: o.engineRecheckMs } : {}),
    });
    if (d.failureSeen) this.#failureSeen.set(attemptKey, o.clock.now());
    return d;
  }

  /**
   * Creates the decided children (after the engine's prepare actions) and records them in the status;
   * a replaced or foreign child becomes ChildConflict, a manifest the API server refuses InvalidParameters.
   */
  async #materialize(
    op: Operation,
    seen: Observed,
    d: Decision,
    ctx: ReconcileContext,
  ): Promise<{ status: OperationStatus; decision: Decision }> {
    const now = this.#o.clock.now();
    const conflicted = (message: string): { status: OperationStatus; decision: Decision } => {
      const status = childConflictStatus(op, d.status, message, now);
      return {
        status,
        decision: { status, events: [{ type: 'Warning', reason: Reason.ChildConflict, note: message }] },
      };
    };
    if (seen.replaced && !isTerminalPhase(op.status?.phase)) {
      // The conflict drops the recorded children: what the engine must not leave behind goes first.
      const cleanup = seen.adapter?.cleanup?.(seen.children, op);
      if (cleanup?.actions.length) await this.#o.children.perform(cleanup.actions, ctx.signal);
      return conflicted(seen.replaced);
    }
    if (!d.create || !seen.adapter) return { status: d.status, decision: d };
    if (d.prepare) await this.#o.children.perform(d.prepare, ctx.signal);
    try {
      const made = await this.#o.children.create(op, d.create, seen.adapter, ctx.signal);
      if ('conflict' in made) return conflicted(made.conflict);
      return { status: { ...d.status, childRef: made.refs[0]!, childRefs: made.refs }, decision: d };
    } catch (err) {
      if (!isInvalid(err)) throw err;
      // The API server refuses the manifest: a permanent problem of this request.
      const message = `the API server refused the engine child: ${err instanceof Error ? err.message : String(err)}`;
      return {
        status: failedStatus(op, 'InvalidParameters', message, now),
        decision: { ...d, events: [{ type: 'Warning', reason: 'InvalidParameters', note: message }] },
      };
    }
  }

  /**
   * Creates the further children the decision's actions name (`adopt`: a Safe Upgrade's restore plan) with the
   * same proof as the first ones, and records them after the attempt's other children.
   */
  async #adopt(
    op: Operation,
    seen: Observed,
    d: { status: OperationStatus; decision: Decision },
    ctx: ReconcileContext,
  ): Promise<{ status: OperationStatus; decision: Decision }> {
    const more = [...(d.decision.cancel ?? []), ...(d.decision.actions ?? [])].flatMap((a) =>
      a.kind === 'adopt' ? [withOwnership(op, a.object)] : [],
    );
    if (more.length === 0 || !seen.adapter) return d;
    const made = await this.#o.children.create(op, more, seen.adapter, ctx.signal);
    if ('conflict' in made) {
      const status = childConflictStatus(op, d.status, made.conflict, this.#o.clock.now());
      return {
        status,
        decision: {
          status,
          events: [{ type: 'Warning', reason: Reason.ChildConflict, note: made.conflict }],
        },
      };
    }
    const known = new Set((d.status.childRefs ?? []).map((r) => `${r.kind}/${r.namespace}/${r.name}`));
    const added = made.refs.filter((r) => !known.has(`${r.kind}/${r.namespace}/${r.name}`));
    return { ...d, status: { ...d.status, childRefs: [...(d.status.childRefs ?? []), ...added] } };
  }

  /** Logs a phase change; an ended Operation is counted and its attempts' failure times forgotten. */
  #phaseChanged(op: Operation, status: OperationStatus, ctx: ReconcileContext): void {
    if (status.phase === op.status?.phase) return;
    ctx.log.info({ from: op.status?.phase, to: status.phase }, 'phase changed');
    if (!isTerminalPhase(status.phase)) return;
    const start = Date.parse(String(status.startedAt ?? op.metadata.creationTimestamp ?? ''));
    const end = Date.parse(status.finishedAt ?? '');
    this.#o.metrics.finished(
      op,
      status.phase!,
      Number.isNaN(start) || Number.isNaN(end) ? undefined : (end - start) / 1000,
    );
    const uid = op.metadata.uid ?? '';
    for (const k of [...this.#failureSeen.keys()]) if (k.startsWith(`${uid}/`)) this.#failureSeen.delete(k);
  }
}

function identity(op: Operation) {
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: { name: op.metadata.name ?? '', namespace: op.metadata.namespace ?? '' },
  };
}

function failedStatus(op: Operation, reason: string, message: string, now: number): OperationStatus {
  const at = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const gen = op.metadata.generation;
  const cond = (type: string, status: 'True' | 'False') => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: at,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
  });
  return {
    ...(op.status ?? {}),
    phase: 'Failed',
    finishedAt: at,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
    conditions: [cond(CONDITION_ACCEPTED, 'False'), cond('Succeeded', 'False')],
  };
}
