// A Controller = informers that feed keys + a rate-limited work queue + a reconcile function,
// with controller-runtime's contract:
// - reconcile(key) is level-based: it reads current state (from the informer caches) and makes
//   the world match; it is told only WHICH object to look at, never what changed;
// - it returns {} (done: backoff forgotten), {requeueAfterMs} (run again later: backoff
//   forgotten) or {requeue: true} (run again with backoff), or throws (error: run again with
//   backoff, counted in controller_runtime_reconcile_errors_total); a TerminalError (reconcile.ts)
//   is logged and counted but not requeued;
// - one key never reconciles on two workers at once; N workers run different keys in parallel;
// - workers start only after every watched informer has synced, and every cached object is
//   reconciled once at start.

import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Activity, TrailOptions } from './activity.ts';
import { type Clock, realClock, sleep } from './clock.ts';
import type { Informer } from './informer.ts';
import { objectKey, splitKey } from './keys.ts';
import { type Logger, objectLogger, silentLogger } from './logger.ts';
import type { ReconcileResultLabel as ResultLabel, RuntimeMetrics } from './metrics.ts';
import type { RateLimiter } from './rate-limiter.ts';
import { isTerminal, type ReconcileContext } from './reconcile.ts';
import { Trailing } from './trailing.ts';
import { WorkQueue } from './workqueue.ts';

export interface ReconcileResult {
  /** Run again after this long (backoff is reset). */
  requeueAfterMs?: number;
  /** Run again with the rate limiter's backoff. */
  requeue?: boolean;
}

/** The function form of a reconciler (the Reconciler interface of reconcile.ts is the object form). */
export type ReconcileFunc = (ctx: ReconcileContext) => Promise<ReconcileResult | undefined>;

/** Maps an event's object to the keys to reconcile (default: the object's own key). */
export type KeyMapper<T> = (obj: T) => string | readonly string[] | undefined | null;

export interface ControllerWatchOptions<T> {
  map?: KeyMapper<T>;
  /**
   * Filters add events, the initial list's included (controller-runtime's CreateFunc predicate).
   * Default: all.
   */
  createPredicate?: (obj: T) => boolean;
  /** Filters update events (e.g. `generationChanged` to ignore status-only updates). Default: all. */
  updatePredicate?: (oldObj: T, newObj: T) => boolean;
  /** Filters delete events. Default: all. */
  deletePredicate?: (obj: T) => boolean;
  /**
   * Queue the mapped keys this long after the event instead of at once: the events of a burst for one
   * key become one reconcile (the queue keeps a delayed key's earliest deadline), as
   * kube-controller-manager's Job controller batches Pod events (syncJobBatchPeriod, 1 s).
   */
  batchMs?: number;
  /**
   * The mapped keys report on work rather than do it: after `batchMs`, they wait for a lull of the
   * foreground activity, at most `maxMs` (activity.ts; docs/adr/0062-bookkeeping-trails-a-burst.md).
   */
  trail?: TrailOptions;
}

export interface ControllerOptions {
  name: string;
  reconcile: ReconcileFunc;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles, default 1). */
  workers?: number;
  clock?: Clock;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  rateLimiter?: RateLimiter<string>;
  /** Foreground work: touched whenever a key is queued or reconciled (what trailing work waits for). */
  activity?: Activity;
}

/** What a controller watches: an Informer, or anything with its sync and handler calls. */
export type WatchSource<T extends KubernetesObject> = Pick<
  Informer<T>,
  'name' | 'waitForSync' | 'addEventHandler'
>;

interface Source {
  informer: Pick<Informer<KubernetesObject>, 'waitForSync' | 'name'>;
  register: () => () => void;
}

// ---- predicates and mappers ---------------------------------------------------------------------

/** True when metadata.generation changed (spec changes; not status-only updates). */
export function generationChanged(oldObj: KubernetesObject, newObj: KubernetesObject): boolean {
  return (
    oldObj.metadata?.generation === undefined || oldObj.metadata.generation !== newObj.metadata?.generation
  );
}

/** True when labels or annotations changed. */
export function labelsOrAnnotationsChanged(oldObj: KubernetesObject, newObj: KubernetesObject): boolean {
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
  return (
    !same(oldObj.metadata?.labels, newObj.metadata?.labels) ||
    !same(oldObj.metadata?.annotations, newObj.metadata?.annotations)
  );
}

export function anyOf<T>(...preds: ((a: T, b: T) => boolean)[]): (a: T, b: T) => boolean {
  return (a, b) => preds.some((p) => p(a, b));
}

/** Maps a child to the keys of its owners of `kind` (same namespace, as owner references require). */
export function ownerKeys(kind: string, apiVersion?: string): KeyMapper<KubernetesObject> {
  return (obj) =>
    (obj.metadata?.ownerReferences ?? [])
      .filter((r) => r.kind === kind && (apiVersion === undefined || r.apiVersion === apiVersion))
      .map((r) => (obj.metadata?.namespace ? `${obj.metadata.namespace}/${r.name}` : r.name));
}

// ---- the controller -----------------------------------------------------------------------------

export class Controller {
  readonly name: string;
  readonly #reconcile: ReconcileFunc;
  readonly #workers: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: RuntimeMetrics | undefined;
  readonly #sources: Source[] = [];
  readonly #newQueue: () => WorkQueue<string>;
  readonly #activity: Activity | undefined;
  readonly #trailing: Trailing<string>[] = [];
  // One set per run: a controller stopped when its replica lost the Lease starts again with a fresh
  // queue (no keys, no backoff carried over) once the replica leads again.
  #queue: WorkQueue<string>;
  #syncAbort = new AbortController();
  #hardStop = new AbortController();
  #running: Promise<void> | undefined;
  #stopped = false;
  #workersStarted = false;
  #workersStartedAt = 0;
  #active = 0;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.#reconcile = opts.reconcile;
    this.#workers = opts.workers ?? 1;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.logger ?? silentLogger;
    this.#metrics = opts.metrics;
    this.#activity = opts.activity;
    // The gauges read whichever queue is current (a new one per run after a lost Lease).
    const queueMetrics = opts.metrics?.queueMetrics(opts.name, () => this.#queue.inFlightSince());
    this.#newQueue = () =>
      new WorkQueue<string>({
        name: opts.name,
        clock: this.#clock,
        ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
        ...(queueMetrics ? { metrics: queueMetrics } : {}),
      });
    this.#queue = this.#newQueue();
    opts.metrics?.initController(opts.name);
  }

  /** The work queue of the current (or last) run. */
  get queue(): WorkQueue<string> {
    return this.#queue;
  }

  /** Enqueue keys from `informer`'s events. Call before start(). */
  watch<T extends KubernetesObject>(informer: WatchSource<T>, opts: ControllerWatchOptions<T> = {}): this {
    const map: KeyMapper<T> = opts.map ?? ((o: T) => objectKey(o));
    const { batchMs, trail } = opts;
    let add: (k: string) => void;
    if (trail) {
      const trailing = new Trailing<string>(batchMs ?? 0, trail, (k) => this.queue.add(k));
      this.#trailing.push(trailing);
      add = (k) => trailing.add(k);
    } else if (batchMs) add = (k) => this.queue.addAfter(k, batchMs);
    else add = (k) => this.queue.add(k);
    const enqueue = (obj: T) => {
      this.#activity?.touch();
      let keys: string | readonly string[] | undefined | null;
      try {
        keys = map(obj);
      } catch (err) {
        this.#log.error({ err, controller: this.name }, 'key mapper threw');
        return;
      }
      if (typeof keys === 'string') add(keys);
      else for (const k of keys ?? []) add(k);
    };
    this.#sources.push({
      informer,
      register: () =>
        informer.addEventHandler({
          add: (obj) => {
            if (!opts.createPredicate || opts.createPredicate(obj)) enqueue(obj);
          },
          update: (oldObj, newObj) => {
            if (!opts.updatePredicate || opts.updatePredicate(oldObj, newObj)) enqueue(newObj);
          },
          delete: (obj) => {
            if (!opts.deletePredicate || opts.deletePredicate(obj)) enqueue(obj);
          },
        }),
    });
    return this;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  enqueueAfter(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  /**
   * Waits for the informers, then reconciles until stop(). Resolves when the workers have exited. After
   * stop() has returned it starts afresh: a new queue, every cached object reconciled once again.
   */
  start(): Promise<void> {
    if (this.#stopped) {
      this.#stopped = false;
      this.#queue = this.#newQueue();
      this.#syncAbort = new AbortController();
      this.#hardStop = new AbortController();
      this.#workersStarted = false;
      this.#running = undefined;
    }
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<void> {
    const synced = await Promise.all(
      this.#sources.map((s) => s.informer.waitForSync(this.#syncAbort.signal)),
    );
    if (!synced.every(Boolean)) return;
    const unregister = this.#sources.map((s) => s.register());
    this.#log.info({ controller: this.name, workers: this.#workers }, 'starting workers');
    this.#workersStarted = true;
    this.#workersStartedAt = this.#clock.now();
    try {
      const queue = this.#queue;
      await queue.runWorkers(this.#workers, (key) => this.#process(queue, key));
    } finally {
      for (const u of unregister) u();
    }
  }

  /**
   * Stops taking new keys. `drain` (default) lets queued and in-flight reconciles finish;
   * `drain: false` drops queued keys (leadership lost). After `timeoutMs` the reconcile signal
   * aborts and stop() returns even if a reconcile ignores it.
   */
  async stop(opts: { drain?: boolean; timeoutMs?: number } = {}): Promise<void> {
    this.#stopped = true;
    for (const t of this.#trailing) t.clear();
    this.#syncAbort.abort();
    // Without workers (a standby replica, or stopped before the caches synced) nobody would drain the
    // keys queued by direct enqueues: drop them, the next leader lists everything anyway.
    const drain = opts.drain !== false && this.#workersStarted;
    const drained = this.queue.shutDownWithDrain({ dropQueued: !drain });
    const timeout = new AbortController();
    const timedOut = sleep(this.#clock, opts.timeoutMs ?? 30_000, timeout.signal).then(
      () => 'timeout' as const,
    );
    const first = await Promise.race([drained.then(() => 'drained' as const), timedOut]);
    timeout.abort();
    if (first === 'timeout') {
      this.#log.warn(
        { controller: this.name },
        'reconciles still running after the shutdown timeout; aborting them',
      );
      this.#hardStop.abort();
      return;
    }
    await this.#running;
  }

  async #process(queue: WorkQueue<string>, key: string): Promise<void> {
    const started = this.#clock.now();
    const reconcileID = randomUUID();
    const { namespace, name } = splitKey(key);
    const log = objectLogger(this.#log, this.name, key, { reconcileID });
    const retries = queue.numRequeues(key);
    let result: ResultLabel;
    this.#activity?.touch();
    this.#metrics?.activeWorkers.set({ controller: this.name }, ++this.#active);
    try {
      const res = await this.#reconcile({
        key,
        ...(namespace !== undefined ? { namespace } : {}),
        name,
        log,
        reconcileID,
        retries,
        signal: this.#hardStop.signal,
        workersStartedAt: this.#workersStartedAt,
      });
      if (res?.requeueAfterMs !== undefined && res.requeueAfterMs > 0) {
        queue.forget(key);
        queue.addAfter(key, res.requeueAfterMs);
        result = 'requeue_after';
      } else if (res?.requeue) {
        queue.addRateLimited(key);
        result = 'requeue';
      } else {
        queue.forget(key);
        result = 'success';
      }
    } catch (err) {
      result = 'error';
      if (isTerminal(err)) {
        // Retrying cannot fix it: only a new event on the object (or one it watches) brings it back.
        queue.forget(key);
        this.#metrics?.terminalErrors.inc({ controller: this.name });
        log.error({ err }, 'Reconciler error (terminal, not requeued)');
      } else {
        queue.addRateLimited(key);
        log.error({ err, retries }, 'Reconciler error');
      }
    } finally {
      this.#activity?.touch();
      this.#metrics?.activeWorkers.set({ controller: this.name }, --this.#active);
    }
    this.#metrics?.observeReconcile(this.name, result, (this.#clock.now() - started) / 1000);
  }
}
