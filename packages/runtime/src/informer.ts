// A supervised informer: list, then watch from the list's resourceVersion, forever.
//
// What client-node's ListWatch does not do and this does:
// - restarts after ANY failure (403, 5xx, connection reset, failed list) with exponential backoff,
//   instead of stopping for good;
// - relists on 410 Gone whether it arrives as an HTTP status, a failed list page or a watch ERROR
//   event, and reports vanished objects as deletes;
// - tracks "synced" (the first list has been delivered), which readiness and controllers wait on;
// - hands out the cached objects themselves, deep-frozen: reads cost nothing (no copies), and a
//   caller that tries to change one throws instead of corrupting what every reader shares. Code
//   that wants a changed object builds a new one (spread, structuredClone): copy on write;
// - indexes (by namespace always, more with addIndexer) so lookups cost the answer, not a scan;
// - reads show this process's own writes until the cache has caught up with them (pending-writes.ts);
// - hands the cache to a late handler, and a relist's changes to all handlers, in batches that
//   yield to the event loop, so 10,000 objects never block timers (the Lease renewal) or I/O;
// - normalises timestamps (Date vs string) so list and watch produce identical objects;
// - asks for bookmarks and a server-side watch timeout, so quiet watches advance and rotate;
// - optional periodic resync (update(old, old) for every cached object);
// - guards handlers: a throwing handler or a rejected async handler is logged, never unhandled.

import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { leanManagedFields } from './cache-transform.ts';
import { type Clock, realClock, sleep, type TimerHandle } from './clock.ts';
import { Indexer, type IndexFunc, NAMESPACE_INDEX } from './indexer.ts';
import { keyOf, objectKey } from './keys.ts';
import {
  apiVersionOf,
  isGone,
  KubeApiError,
  type KubeClient,
  type KubeStatus,
  type KubeWatcher,
  type ResourceRef,
  RestClient,
  resourcePath,
} from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import type { ListerWatcher, ListOptions } from './lister-watcher.ts';
import { type Logger, silentLogger } from './logger.ts';
import { scopedListerWatcher } from './multi-namespace.ts';
import { freezeNormalized, normalizeTimestamps } from './normalize.ts';
import { PendingWrites } from './pending-writes.ts';
import { cacheStrings, type StringTable } from './strings.ts';

export type MaybePromise = void | Promise<void>;

export interface InformerHandlers<T> {
  add?: (obj: T) => MaybePromise;
  update?: (oldObj: T, newObj: T) => MaybePromise;
  delete?: (obj: T) => MaybePromise;
}

export interface InformerOptions<T> {
  /** Used in logs, e.g. "operations". */
  name: string;
  /** Secondary indexes (see addIndexer); the namespace index always exists. */
  indexers?: Record<string, IndexFunc<T>>;
  listerWatcher: ListerWatcher<T>;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * What the cache keeps of each object, applied in place before it is frozen (controller-runtime's
   * cache TransformFunc). Default: managedFields reduced to annotation ownership (cache-transform.ts).
   */
  transform?: (obj: T) => T;
  /** Where the cache's short strings are shared (strings.ts); default the one table all informers share. */
  strings?: StringTable;
  /** Fire update(obj, obj) for every cached object this often; 0 or unset = never. */
  resyncPeriodMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Reconnect backoff after errors; default 1 s doubling to 30 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** Server-side watch timeout is this × (1 + random), like client-go (default 300 s). */
  minWatchTimeoutSeconds?: number;
  random?: () => number;
}

export interface InformerStats {
  lists: number;
  watches: number;
  errors: number;
  /** Relists caused by 410 Gone. */
  gone: number;
}

/** Objects handed to handlers per event-loop turn (a late handler's replay, a relist's changes). */
export const HANDOVER_BATCH = 500;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

function statusError(obj: unknown): KubeApiError {
  const s: KubeStatus = isRecord(obj) ? (obj as KubeStatus) : {};
  return new KubeApiError(s.code ?? 500, s.reason ?? 'Unknown', s.message ?? 'watch error event', s);
}

export class Informer<T extends KubernetesObject> {
  readonly name: string;
  readonly #lw: ListerWatcher<T>;
  readonly #opts: InformerOptions<T>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  readonly #random: () => number;
  readonly #transform: (obj: T) => T;
  readonly #strings: StringTable;

  readonly #store = new Indexer<T>();
  readonly #pending = new PendingWrites<T>();
  #rv = '';
  #handlers: InformerHandlers<T>[] = [];
  #synced = false;
  #resolveSynced!: () => void;
  readonly #syncedPromise: Promise<void>;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #resyncTimer: TimerHandle | undefined;
  #progress = 0;
  readonly #stats: InformerStats = { lists: 0, watches: 0, errors: 0, gone: 0 };

  constructor(opts: InformerOptions<T>) {
    this.name = opts.name;
    this.#opts = opts;
    this.#lw = opts.listerWatcher;
    this.#clock = opts.clock ?? realClock;
    this.#log = (opts.logger ?? silentLogger).child({ informer: opts.name });
    this.#random = opts.random ?? Math.random;
    this.#transform = opts.transform ?? leanManagedFields;
    this.#strings = opts.strings ?? cacheStrings;
    this.#backoff = new Backoff({ random: this.#random, ...opts.backoff });
    this.#syncedPromise = new Promise((resolve) => {
      this.#resolveSynced = resolve;
    });
    for (const [name, fn] of Object.entries(opts.indexers ?? {})) this.addIndexer(name, fn);
  }

  /**
   * Registers handlers; returns a function that removes them. Objects already cached are replayed as
   * adds, after the caller's synchronous code, HANDOVER_BATCH per event-loop turn.
   */
  addEventHandler(h: InformerHandlers<T>): () => void {
    this.#handlers.push(h);
    if (this.#store.size > 0 && h.add) void this.#replay(h, [...this.#store.keys()]);
    return () => {
      this.#handlers = this.#handlers.filter((x) => x !== h);
    };
  }

  async #replay(h: InformerHandlers<T>, keys: string[]): Promise<void> {
    await Promise.resolve();
    for (let i = 0; i < keys.length; i += HANDOVER_BATCH) {
      if (i > 0) await yieldToEventLoop();
      if (!this.#handlers.includes(h)) return;
      for (const key of keys.slice(i, i + HANDOVER_BATCH)) {
        // The object as it is now: an update delivered meanwhile must not be followed by an older add.
        const o = this.#store.get(key);
        if (o !== undefined) this.#call(() => h.add?.(o));
      }
    }
  }

  /**
   * Adds an index (see Indexer.addIndexer): `byIndex(name, value)` then returns the objects `fn`
   * maps to `value`. Returns false when the name was taken (the first function stays).
   */
  addIndexer(name: string, fn: IndexFunc<T>): boolean {
    return this.#store.addIndexer(name, fn);
  }

  /** Starts list+watch in the background. Idempotent. */
  start(): void {
    if (this.#loop) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal);
    this.#scheduleResync();
  }

  async stop(): Promise<void> {
    this.#abort?.abort();
    if (this.#resyncTimer) this.#clock.clearTimeout(this.#resyncTimer);
    this.#resyncTimer = undefined;
    await this.#loop;
  }

  /** True once the first list has been stored and delivered to handlers (stays true after errors). */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves true when synced, false if `signal` aborts or the informer stops first. */
  async waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.#synced) return true;
    const stops: Promise<void>[] = [this.#syncedPromise];
    const abortPromise = (s: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (s.aborted) resolve();
        else s.addEventListener('abort', () => resolve(), { once: true });
      });
    if (signal) stops.push(abortPromise(signal));
    if (this.#abort) stops.push(abortPromise(this.#abort.signal));
    await Promise.race(stops);
    return this.#synced;
  }

  /** The resourceVersion the next watch would start from ('' = the next step is a list). */
  get resourceVersion(): string {
    return this.#rv;
  }

  get stats(): Readonly<InformerStats> {
    return { ...this.#stats };
  }

  // Reads hand out the cached objects themselves, frozen: copy before changing (see the header). They
  // show this process's pending writes (recordWrite) over the cache.

  get(name: string, namespace?: string): T | undefined {
    return this.getByKey(keyOf(namespace, name));
  }

  getByKey(key: string): T | undefined {
    const p = this.#pending.get(key);
    return p ? p.obj : this.#store.get(key);
  }

  /** Every cached object, or those of one namespace (by the namespace index). */
  list(namespace?: string): T[] {
    const cached =
      namespace !== undefined ? this.#store.byIndex(NAMESPACE_INDEX, namespace) : [...this.#store.values()];
    return this.#pending.overlay(cached, objectKey, namespace, () => true);
  }

  /** The objects index `name` maps to `value` (throws for an unknown index). */
  byIndex(name: string, value: string): T[] {
    const cached = this.#store.byIndex(name, value);
    if (this.#pending.size === 0) return cached;
    return this.#pending.overlay(cached, objectKey, undefined, (o) =>
      this.#store.indexValues(name, o).includes(value),
    );
  }

  // ---- own writes (pending-writes.ts) -----------------------------------------------------------

  /** Marks a write to `key` in flight; call the returned function when it has answered (or failed). */
  beginWrite(key: string): () => void {
    return this.#pending.begin(key);
  }

  /**
   * Shows `written` (what the API server returned for a write) to reads until a watch event or a relist
   * shows the cache has caught up. Record only objects this informer's scope and selectors hold: nothing
   * else would ever clear them. The informer keeps its own frozen copy, made without recursion
   * (structuredClone's overflows on the 10,000-level objects the API server may store; normalize.ts).
   */
  recordWrite(written: T): void {
    const obj = freezeNormalized(this.#transform(normalizeTimestamps(written)), this.#strings);
    const key = objectKey(obj);
    this.#pending.record(key, obj, this.#store.get(key));
  }

  /** Leaves the object `uid` under `key` out of reads until its DELETED event (or a relist). */
  recordDelete(key: string, uid: string): void {
    this.#pending.tombstone(key, uid);
  }

  /** How many own writes the cache has not caught up with yet. */
  get pendingWrites(): number {
    return this.#pending.size;
  }

  /** How many objects are cached. */
  get size(): number {
    return this.#store.size;
  }

  keys(): string[] {
    return [...this.#store.keys()];
  }

  // ---- the supervisor loop ---------------------------------------------------------------------

  async #run(signal: AbortSignal): Promise<void> {
    let consecutiveGone = 0;
    while (!signal.aborted) {
      try {
        if (this.#rv === '') await this.#relist(signal);
        if (signal.aborted) break;
        const started = this.#clock.now();
        const progressBefore = this.#progress;
        await this.#watch(signal);
        if (this.#progress > progressBefore) consecutiveGone = 0;
        // A watch that ends at once without any event must not become a hot loop.
        if (this.#progress === progressBefore && this.#clock.now() - started < 1000) {
          await sleep(this.#clock, this.#backoff.next(), signal);
        }
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          this.#stats.gone++;
          this.#rv = '';
          this.#log.info({ err: String(err) }, 'resourceVersion too old (410 Gone): relisting');
          // One relist is the cure; back off only if the cure keeps failing the same way.
          if (++consecutiveGone > 1) await sleep(this.#clock, this.#backoff.next(), signal);
          continue;
        }
        consecutiveGone = 0;
        this.#stats.errors++;
        const delay = this.#backoff.next();
        this.#log.warn({ err: String(err), retryInMs: delay }, 'list/watch failed; retrying');
        await sleep(this.#clock, delay, signal);
      }
    }
  }

  async #relist(signal: AbortSignal): Promise<void> {
    this.#stats.lists++;
    const mark = this.#pending.mark();
    const result = await this.#lw.list(this.#selectors(), signal);
    if (signal.aborted) return;
    const fresh = new Map<string, T>();
    for (const raw of result.items) {
      const obj = freezeNormalized(this.#transform(raw), this.#strings);
      fresh.set(objectKey(obj), obj);
    }
    const old = this.#store.replace(fresh);
    this.#pending.relisted(mark, fresh);
    this.#rv = result.resourceVersion;
    this.#backoff.reset();
    // The store is complete already; the handlers hear of it in batches (the watch starts after).
    const changes: (() => void)[] = [];
    for (const [k, o] of old) if (!fresh.has(k)) changes.push(() => this.#emitDelete(o));
    for (const [k, n] of fresh) {
      const o = old.get(k);
      if (!o) changes.push(() => this.#emitAdd(n));
      else if (o.metadata?.resourceVersion !== n.metadata?.resourceVersion)
        changes.push(() => this.#emitUpdate(o, n));
    }
    for (let i = 0; i < changes.length; i += HANDOVER_BATCH) {
      if (i > 0) await yieldToEventLoop();
      if (signal.aborted) return;
      for (const c of changes.slice(i, i + HANDOVER_BATCH)) c();
    }
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveSynced();
      this.#log.debug({ objects: fresh.size }, 'synced');
    }
  }

  async #watch(signal: AbortSignal): Promise<void> {
    this.#stats.watches++;
    const ac = new AbortController();
    const onAbort = () => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let failure: KubeApiError | undefined;
    const min = this.#opts.minWatchTimeoutSeconds ?? 300;
    try {
      await this.#lw.watch(
        {
          ...this.#selectors(),
          resourceVersion: this.#rv,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.floor(min * (1 + this.#random())),
        },
        (type, obj) => {
          if (ac.signal.aborted) return;
          if (type === 'ERROR') {
            failure = statusError(obj);
            ac.abort();
            return;
          }
          this.#apply(type, obj);
        },
        ac.signal,
      );
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (failure) throw failure;
  }

  #apply(type: string, raw: unknown): void {
    if (!isRecord(raw) || !isRecord(raw.metadata)) return;
    const rv = typeof raw.metadata.resourceVersion === 'string' ? raw.metadata.resourceVersion : '';
    if (type === 'ADDED' || type === 'MODIFIED') {
      const obj = freezeNormalized(this.#transform(raw as T), this.#strings);
      const key = objectKey(obj);
      const old = this.#store.get(key);
      this.#store.set(key, obj);
      this.#pending.observe(key, type, obj);
      if (!old) this.#emitAdd(obj);
      else if (old.metadata?.resourceVersion !== rv) this.#emitUpdate(old, obj);
    } else if (type === 'DELETED') {
      // Leaving the cache: its strings are not worth sharing.
      const obj = freezeNormalized(this.#transform(raw as T));
      const key = objectKey(obj);
      this.#pending.observe(key, type, obj);
      if (this.#store.delete(key)) this.#emitDelete(obj);
    } else if (type !== 'BOOKMARK') {
      return;
    }
    if (rv) this.#rv = rv;
    this.#progress++;
    this.#backoff.reset();
  }

  #selectors(): ListOptions {
    const s: ListOptions = {};
    if (this.#opts.labelSelector) s.labelSelector = this.#opts.labelSelector;
    if (this.#opts.fieldSelector) s.fieldSelector = this.#opts.fieldSelector;
    return s;
  }

  #scheduleResync(): void {
    const period = this.#opts.resyncPeriodMs ?? 0;
    if (period <= 0) return;
    this.#resyncTimer = this.#clock.setTimeout(() => void this.#resync(), period);
  }

  async #resync(): Promise<void> {
    const signal = this.#abort?.signal;
    if (!signal || signal.aborted) return;
    if (this.#synced) {
      const keys = [...this.#store.keys()];
      for (let i = 0; i < keys.length; i += HANDOVER_BATCH) {
        if (i > 0) await yieldToEventLoop();
        if (signal.aborted) return;
        for (const k of keys.slice(i, i + HANDOVER_BATCH)) {
          const o = this.#store.get(k);
          if (o !== undefined) this.#emitUpdate(o, o);
        }
      }
    }
    this.#scheduleResync();
  }

  // ---- guarded handler calls -------------------------------------------------------------------

  #emitAdd(obj: T): void {
    for (const h of this.#handlers) if (h.add) this.#call(() => h.add?.(obj));
  }

  #emitUpdate(oldObj: T, newObj: T): void {
    for (const h of this.#handlers) if (h.update) this.#call(() => h.update?.(oldObj, newObj));
  }

  #emitDelete(obj: T): void {
    for (const h of this.#handlers) if (h.delete) this.#call(() => h.delete?.(obj));
  }

  #call(fn: () => MaybePromise): void {
    try {
      const r = fn();
      if (r instanceof Promise)
        r.catch((err: unknown) => this.#log.error({ err }, 'informer handler rejected'));
    } catch (err) {
      this.#log.error({ err }, 'informer handler threw');
    }
  }
}

// ---- the real ListerWatcher over the API server -----------------------------------------------

interface ListBody<T> {
  kind?: string;
  apiVersion?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

function isAbort(err: unknown): boolean {
  return isRecord(err) && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

function isWatcher(c: KubeClient): c is KubeClient & KubeWatcher {
  return typeof (c as Partial<KubeWatcher>).watch === 'function';
}

/**
 * List (paginated, 500 a page) and watch `resource` through the API server. The resource's
 * `namespace` scopes both; leave it out for cluster-scoped kinds or all namespaces. Watches go
 * through `client` when it can stream (a RestClient), else through a RestClient of `kc`.
 */
export function kubeListerWatcher<T extends KubernetesObject>(
  kc: KubeConfigLike,
  resource: ResourceRef,
  client: KubeClient = new RestClient(kc),
  accept?: { list: string; watch: string },
): ListerWatcher<T> {
  const path = resourcePath(resource);
  const watcher: KubeWatcher = isWatcher(client) ? client : new RestClient(kc);
  return {
    async list(opts, signal) {
      const items: T[] = [];
      let cont: string | undefined;
      let rv = '';
      let kind: string | undefined;
      do {
        const page: ListBody<T> = await client.request<ListBody<T>>({
          method: 'GET',
          path,
          query: { ...opts, limit: 500, continue: cont },
          signal,
          timeoutMs: 60_000,
          ...(accept ? { accept: accept.list } : {}),
        });
        items.push(...(page.items ?? []));
        rv = page.metadata?.resourceVersion ?? '';
        cont = page.metadata?.continue || undefined;
        kind = page.kind?.replace(/List$/, '');
      } while (cont && !signal.aborted);
      // Items of typed lists carry no apiVersion/kind; watch events do. Make them alike.
      const apiVersion = apiVersionOf(resource);
      for (const it of items) {
        it.apiVersion ??= apiVersion;
        if (kind) it.kind ??= kind;
      }
      return { items, resourceVersion: rv };
    },

    async watch(opts, onEvent, signal) {
      const query: Record<string, string | number | boolean> = {
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks,
        timeoutSeconds: opts.timeoutSeconds,
      };
      if (opts.labelSelector) query.labelSelector = opts.labelSelector;
      if (opts.fieldSelector) query.fieldSelector = opts.fieldSelector;
      try {
        await watcher.watch({ path, query, signal, ...(accept ? { accept: accept.watch } : {}) }, onEvent);
      } catch (err) {
        // Our own abort and a connection cut while closing are clean ends; anything else is a failure.
        if (signal.aborted || isAbort(err)) return;
        throw err;
      }
    },
  };
}

export interface KubeInformerOptions<T> extends Omit<InformerOptions<T>, 'listerWatcher' | 'name'> {
  name?: string;
  client?: KubeClient;
  /**
   * Watch only these namespaces (a namespaced resource without resource.namespace); empty or unset:
   * all namespaces. See multi-namespace.ts.
   */
  namespaces?: readonly string[];
}

/** An Informer over the API server for `resource` (namespace-scoped if resource.namespace is set). */
export function createInformer<T extends KubernetesObject>(
  kc: KubeConfigLike,
  resource: ResourceRef,
  opts: KubeInformerOptions<T> = {},
): Informer<T> {
  const { client, name, namespaces, ...rest } = opts;
  const c = client ?? new RestClient(kc);
  return new Informer<T>({
    ...rest,
    name: name ?? `${resource.plural}${resource.group ? `.${resource.group}` : ''}`,
    listerWatcher: scopedListerWatcher(resource, namespaces, (r) => kubeListerWatcher<T>(kc, r, c)),
  });
}
