// The shell both schedulers (CronReconciler, WatchReconciler) carry their plans out with. Every write goes
// through the runtime Client, so the next reconcile reads it back at once (the created Operations under
// the owner's index, the status just written, the marks on instances) however far the watch lags: no
// memory of its own is kept here.
//
// Order of writes, chosen so a crash anywhere never runs something twice: skip-next removal, cancels
// (spec.cancel; never a delete of a running Operation), creates (deterministic names; AlreadyExists ⇒
// adopt when its controller is this scheduler, else the run is refused: a pre-created Operation never
// stands in for a run), then instance marks, pruning, status and Events. A restart between the creates
// and the status decides the same runs again and adopts them.

import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import {
  type Client,
  type EventRecorder,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type ObjectIdentity,
  type ReconcileContext,
  type Request,
  refusalOf,
} from '@vworkspace/runtime';
import {
  ANNOTATION_SKIP_NEXT,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import { isControlledBy, type SchedulerKind, schedulerOwner } from '../api/scheduler-owner.ts';
import { nameTakenError } from './refused.ts';
import type { PlannedEvent, RunPlan } from './run-plan.ts';

/** Operation watch filter: only a phase change (or a cancel request) changes what a scheduler sees. */
export function phaseChanged(oldOp: Operation, newOp: Operation): boolean {
  return oldOp.status?.phase !== newOp.status?.phase || oldOp.spec?.cancel !== newOp.spec?.cancel;
}

/** The scheduler of `kind` an Operation's controller ownerReference names. */
export function ownerRequest(op: Operation, kind: SchedulerKind): Request | undefined {
  const owner = schedulerOwner(op, kind)?.name;
  return owner ? { namespace: op.metadata.namespace ?? '', name: owner } : undefined;
}

/** The CronOperation or WatchOperation whose plan is carried out. */
export type ScheduleOwner = KubernetesObject & { metadata: V1ObjectMeta; status?: unknown };

/** A create the API server refused (refusalOf), or whose name another Operation holds. */
export interface RefusedRun {
  op: Operation;
  err: unknown;
}

/** A plan as run-core carries it out: a RunPlan and the scheduler-specific writes. */
export interface ExecutablePlan<S> extends RunPlan<S> {
  /** Remove the skip-next annotation from the owner first (CronOperation). */
  removeSkipNext?: boolean;
  /** Merge patches of ApplicationInstances of the owner's namespace (WatchOperation marks). */
  instancePatches?: readonly { name: string; patch: unknown }[];
}

export interface RunHooks<P> {
  kind: SchedulerKind;
  /** The plan with refused creates folded in (status Ready=False/OperationRefused, Warning Events). */
  refuse(plan: P, refused: readonly RefusedRun[]): P;
  /**
   * When set and something new was created with nothing refused: stop after the creates and announce only
   * the Events of these reasons; the caller requeues, and the next pass (which reads the new Operations)
   * does the bookkeeping. N due schedules then cost N creates before N status writes.
   */
  deferBookkeeping?: readonly string[];
  /** Called for each Operation created anew (not adopted). */
  created?(op: Operation): void;
}

export interface RunOutcome<P> {
  /** The plan as carried out (refusals folded in). */
  plan: P;
  /** The bookkeeping was left to the next pass (RunHooks.deferBookkeeping). */
  deferred: boolean;
}

function identity(o: {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string };
}): ObjectIdentity {
  return {
    apiVersion: o.apiVersion ?? '',
    kind: o.kind ?? '',
    metadata: { name: o.metadata.name ?? '', namespace: o.metadata.namespace ?? '' },
  };
}

type CreateOutcome = { op: Operation; adopted: boolean; taken?: false } | { op: Operation; taken: true };

/**
 * Creates `op`. If the name exists, the existing Operation is adopted when its controller ownerReference
 * is `owner` (the deterministic name is what makes a run happen once), and reported `taken` otherwise.
 */
export async function createOrAdopt(
  client: Pick<Client, 'create' | 'apiGet'>,
  op: Operation,
  owner: { kind: SchedulerKind; uid: string | undefined },
  signal?: AbortSignal,
): Promise<CreateOutcome> {
  const opts = signal ? { signal } : {};
  try {
    const id = identity(op);
    const created = await client.create<Operation>(
      { ...op, ...id, metadata: { ...op.metadata, ...id.metadata } },
      opts,
    );
    return { op: created, adopted: false };
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await client.apiGet<Operation>(identity(op), signal);
    return isControlledBy(existing, owner.kind, owner.uid)
      ? { op: existing, adopted: true }
      : { op: existing, taken: true };
  }
}

export class ScheduleRuns {
  readonly #client: Client;
  readonly #events: EventRecorder;

  constructor(client: Client, events: EventRecorder) {
    this.#client = client;
    this.#events = events;
  }

  /** Carries `plan` out for `owner`; `ops` are the Operations it was decided on (prune preconditions). */
  async execute<S, P extends ExecutablePlan<S>>(
    owner: ScheduleOwner,
    plan: P,
    ops: readonly Operation[],
    ctx: ReconcileContext,
    hooks: RunHooks<P>,
  ): Promise<RunOutcome<P>> {
    const opts = { signal: ctx.signal };
    const ns = owner.metadata.namespace ?? '';
    const self = identity(owner);
    if (plan.removeSkipNext)
      await this.#client.patch(self, { metadata: { annotations: { [ANNOTATION_SKIP_NEXT]: null } } }, opts);
    for (const name of plan.cancel) {
      ctx.log.info({ operation: name }, 'cancelling (concurrencyPolicy Replace)');
      await this.#ignoring(isNotFound, () =>
        this.#client.patch(identity(opOf(ns, name)), { spec: { cancel: true } }, opts),
      );
    }
    const { adopted, refused, createdNew } = await this.#createAll(owner, plan.create, ctx, hooks);
    const done = hooks.refuse(plan, refused);
    if (hooks.deferBookkeeping && createdNew && refused.length === 0) {
      await this.#announce(
        owner,
        done.events.filter((e) => hooks.deferBookkeeping?.includes(e.reason)),
        adopted,
      );
      return { plan: done, deferred: true };
    }
    for (const p of done.instancePatches ?? []) {
      const ref = { apiVersion: APPLICATION_INSTANCE.apiVersion, kind: APPLICATION_INSTANCE.kind };
      await this.#client.patch<ApplicationInstance>(
        identity({ ...ref, metadata: { name: p.name, namespace: ns } }),
        p.patch,
        opts,
      );
    }
    for (const name of done.prune) {
      ctx.log.info({ operation: name }, 'deleting Operation beyond the history limit');
      const uid = ops.find((o) => o.metadata.name === name)?.metadata.uid;
      // Gone, or replaced by another object of that name (the uid precondition): not ours to delete.
      await this.#ignoring(
        (err) => isNotFound(err) || isConflict(err),
        () => this.#client.delete(identity(opOf(ns, name)), { ...opts, ...(uid ? { uid } : {}) }),
      );
    }
    await this.#client.status().applyIfChanged({ ...self, status: owner.status }, done.status, opts);
    await this.#announce(owner, done.events, adopted);
    return { plan: done, deferred: false };
  }

  async #createAll<P>(
    owner: ScheduleOwner,
    create: readonly Operation[],
    ctx: ReconcileContext,
    hooks: RunHooks<P>,
  ): Promise<{ adopted: Set<string>; refused: RefusedRun[]; createdNew: boolean }> {
    const adopted = new Set<string>();
    const refused: RefusedRun[] = [];
    let createdNew = false;
    for (const op of create) {
      let res: CreateOutcome;
      try {
        res = await createOrAdopt(
          this.#client,
          op,
          { kind: hooks.kind, uid: owner.metadata.uid },
          ctx.signal,
        );
      } catch (err) {
        // A refusal is said in status and an Event (refused.ts); anything else is retried with backoff.
        if (!refusalOf(err)) throw err;
        ctx.log.warn({ operation: op.metadata.name, err: String(err) }, 'Operation refused');
        refused.push({ op, err });
        continue;
      }
      if (res.taken) {
        ctx.log.warn(
          { operation: op.metadata.name },
          `Operation name taken by one this ${hooks.kind} did not create`,
        );
        refused.push({ op, err: nameTakenError(hooks.kind, res.op) });
        continue;
      }
      if (res.adopted) adopted.add(res.op.metadata.name ?? '');
      else {
        createdNew = true;
        hooks.created?.(op);
      }
      ctx.log.info(
        { operation: res.op.metadata.name, target: op.spec.targetRef.name, adopted: res.adopted },
        res.adopted ? 'adopted Operation' : 'created Operation',
      );
    }
    return { adopted, refused, createdNew };
  }

  /** Records `events` about `owner`; an adopted run's OperationCreated was said when it was created. */
  async #announce(owner: ScheduleOwner, events: readonly PlannedEvent[], adopted: ReadonlySet<string>) {
    for (const e of events) {
      if (e.reason === 'OperationCreated' && [...adopted].some((n) => e.note.includes(`Operation ${n} `)))
        continue;
      await this.#events.event(owner, e.type, e.reason, e.note);
    }
  }

  async #ignoring(ignore: (err: unknown) => boolean, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (!ignore(err)) throw err;
    }
  }
}

/** An Operation of `name` in `ns`, as a write identifies it. */
function opOf(ns: string, name: string) {
  return { apiVersion: OPERATION.apiVersion, kind: OPERATION.kind, metadata: { name, namespace: ns } };
}
