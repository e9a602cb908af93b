// Builds a controller the way controller-runtime's pkg/builder does: the kind it is for, the kinds it
// owns or watches (each mapped to the keys of the objects to reconcile, filtered by predicates), other
// event sources, and a Reconciler object. Informers come from the manager's shared cache (one per kind
// and scope for the whole process) and are registered with the manager, as is the controller.
//
//   controllerFor(mgr, CRON_OPERATION, { predicates: [{ update: generationChanged }] })
//     .watches(OPERATION, (op) => ownerRequest(op))
//     .withOptions({ workers: 2, clock })
//     .complete(new CronReconciler(...));

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Activity, TrailOptions } from './activity.ts';
import type { Clock } from './clock.ts';
import type { Controller, ControllerWatchOptions, WatchSource } from './controller.ts';
import { Informer } from './informer.ts';
import { keyOf } from './keys.ts';
import type { Manager } from './manager.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { Reconciler, Request } from './reconcile.ts';

/** What a builder watches: a kind of the API (the API's ResourceId fits). */
export interface WatchedKind {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

/** Filters events; a missing function lets that event type through. Several predicates: all must pass. */
export interface Predicate<T> {
  create?(obj: T): boolean;
  update?(oldObj: T, newObj: T): boolean;
  delete?(obj: T): boolean;
}

/** The requests an event's object maps to. */
export type MapFunc<T> = (obj: T) => Iterable<Request> | Request | undefined;

export interface WatchesOptions<T> {
  predicates?: readonly Predicate<T>[];
  /** Milliseconds: the events of a burst for one key become one reconcile (ControllerWatchOptions.batchMs). */
  batch?: number;
  /** The keys report on work: after `batch`, they wait for a lull of the foreground (ControllerWatchOptions.trail). */
  trail?: TrailOptions;
}

export interface BuilderOptions {
  /** Concurrent reconciles (MaxConcurrentReconciles, default 1). */
  workers?: number;
  rateLimiter?: RateLimiter<string>;
  /** The work queue's clock (requeueAfter); the manager's by default. */
  clock?: Clock;
  /** Foreground work: touched whenever a key is queued or reconciled (ControllerOptions.activity). */
  activity?: Activity;
}

function isRequest(v: Iterable<Request> | Request): v is Request {
  return typeof (v as Request).name === 'string';
}

function keysOf<T>(map: MapFunc<T>): (obj: T) => string[] {
  return (obj) => {
    const out = map(obj);
    if (out === undefined) return [];
    return (isRequest(out) ? [out] : [...out]).map((r) => keyOf(r.namespace, r.name));
  };
}

function combined<T>(opts: WatchesOptions<T> = {}): ControllerWatchOptions<T> {
  const ps = opts.predicates ?? [];
  const all =
    <A extends unknown[]>(pick: (p: Predicate<T>) => ((...a: A) => boolean) | undefined) =>
    (...a: A) =>
      ps.every((p) => pick(p)?.(...a) ?? true);
  return {
    ...(ps.some((p) => p.create) ? { createPredicate: all((p) => p.create?.bind(p)) } : {}),
    ...(ps.some((p) => p.update) ? { updatePredicate: all((p) => p.update?.bind(p)) } : {}),
    ...(ps.some((p) => p.delete) ? { deletePredicate: all((p) => p.delete?.bind(p)) } : {}),
    ...(opts.batch ? { batchMs: opts.batch } : {}),
    ...(opts.trail ? { trail: opts.trail } : {}),
  };
}

/** The requests of the controller owners of kind `owner` (same namespace, as owner references require). */
export function controllerOwner(owner: WatchedKind): MapFunc<KubernetesObject> {
  return (obj) => {
    const ref = obj.metadata?.ownerReferences?.find((r) => r.controller && r.kind === owner.kind);
    return ref
      ? { ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}), name: ref.name }
      : undefined;
  };
}

export class Builder<T extends KubernetesObject> {
  readonly #mgr: Manager;
  readonly #for: WatchedKind;
  readonly #forOpts: WatchesOptions<T>;
  readonly #watches: ((c: Controller) => void)[] = [];
  readonly #informers: Informer<KubernetesObject>[] = [];
  #name: string;
  #opts: BuilderOptions = {};

  constructor(mgr: Manager, kind: WatchedKind, opts: WatchesOptions<T> = {}) {
    this.#mgr = mgr;
    this.#for = kind;
    this.#forOpts = opts;
    this.#name = kind.kind.toLowerCase();
  }

  /** The controller's name in logs and metrics (default: the kind, lower case). */
  named(name: string): this {
    this.#name = name;
    return this;
  }

  /** The informer of `kind` from the shared cache (to read from or add indexes to). */
  informer<W extends KubernetesObject>(kind: WatchedKind): Informer<W> {
    const inf = this.#mgr.cache.informer<W>({
      group: kind.group,
      version: kind.version,
      plural: kind.plural,
    });
    this.#register(inf);
    return inf;
  }

  /** Registers `inf` with the manager at complete() (once, however often it is watched or read). */
  #register<W extends KubernetesObject>(inf: Informer<W>): void {
    const shared = inf as unknown as Informer<KubernetesObject>;
    if (!this.#informers.includes(shared)) this.#informers.push(shared);
  }

  /** Objects of `kind` whose controller ownerReference is the `for` kind (or mapped by `by`). */
  owns<C extends KubernetesObject>(kind: WatchedKind, o: WatchesOptions<C> & { by?: MapFunc<C> } = {}): this {
    return this.watches(kind, o.by ?? (controllerOwner(this.#for) as MapFunc<C>), o);
  }

  /** Objects of `kind`, mapped to the requests to reconcile. */
  watches<W extends KubernetesObject>(kind: WatchedKind, map: MapFunc<W>, o: WatchesOptions<W> = {}): this {
    return this.watchesSource(this.informer<W>(kind), map, o);
  }

  /**
   * Events of any source (catalog reloads, on-demand kinds, a metadata-only informer), mapped to the
   * requests to reconcile. An informer source is registered with the manager like the builder's own.
   */
  watchesSource<S extends KubernetesObject>(
    source: WatchSource<S>,
    map: MapFunc<S>,
    o: WatchesOptions<S> = {},
  ): this {
    if (source instanceof Informer) this.#register(source);
    this.#watches.push((c) => c.watch(source, { map: keysOf(map), ...combined(o) }));
    return this;
  }

  withOptions(opts: BuilderOptions): this {
    this.#opts = { ...this.#opts, ...opts };
    return this;
  }

  /** Builds the controller, registers it and its informers with the manager, and returns it. */
  complete(r: Reconciler): Controller {
    const forInformer = this.informer<T>(this.#for);
    const controller = this.#mgr.newController({
      name: this.#name,
      reconcile: async (ctx) => {
        const res = await r.reconcile(
          { ...(ctx.namespace !== undefined ? { namespace: ctx.namespace } : {}), name: ctx.name },
          ctx,
        );
        return res.requeueAfter ? { requeueAfterMs: res.requeueAfter } : {};
      },
      ...(this.#opts.workers ? { workers: this.#opts.workers } : {}),
      ...(this.#opts.rateLimiter ? { rateLimiter: this.#opts.rateLimiter } : {}),
      ...(this.#opts.clock ? { clock: this.#opts.clock } : {}),
      ...(this.#opts.activity ? { activity: this.#opts.activity } : {}),
    });
    controller.watch(forInformer, combined(this.#forOpts));
    for (const w of this.#watches) w(controller);
    for (const inf of this.#informers) this.#mgr.addInformer(inf);
    return controller;
  }
}

/** A builder of a controller for `kind` (controller-runtime's ctrl.NewControllerManagedBy(mgr).For(kind)). */
export function controllerFor<T extends KubernetesObject>(
  mgr: Manager,
  kind: WatchedKind,
  opts?: WatchesOptions<T>,
): Builder<T> {
  return new Builder<T>(mgr, kind, opts);
}
