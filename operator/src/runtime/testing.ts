// Test helpers for code built on the runtime: an in-memory API resource that an Informer can
// list and watch, with a way to make the informer miss events (to exercise relists).

import type { KubernetesObject } from '@kubernetes/client-node';
import { type Clock, sleep } from './clock.ts';
import { keyOf, objectKey } from './keys.ts';
import { KubeApiError } from './kube-client.ts';
import type { LeaderElectionRecord, LeaseLock, LockRead } from './leader-election.ts';
import type { ListerWatcher, ListOptions, WatchOptions } from './lister-watcher.ts';

export interface ActiveWatch {
  opts: WatchOptions;
  onEvent: (type: string, obj: unknown) => void;
  end: () => void;
  fail: (err: unknown) => void;
}

/** An in-memory API server for one resource: list, watch, and a way to miss events. */
export class MemoryResource<T extends KubernetesObject> implements ListerWatcher<T> {
  objects = new Map<string, T>();
  rv = 100;
  lists: ListOptions[] = [];
  watches: WatchOptions[] = [];
  listFailures: unknown[] = [];
  active: ActiveWatch | undefined;
  /** Events in resourceVersion order, replayed to a watch that starts from an older version. */
  readonly history: { rv: number; type: string; obj: T }[] = [];
  /** Lets tests return Date timestamps from list, as client-node's typed list does. */
  listTransform: (o: T) => T = (o) => o;

  async list(opts: ListOptions): Promise<{ items: T[]; resourceVersion: string }> {
    this.lists.push(opts);
    const f = this.listFailures.shift();
    if (f) throw f;
    return {
      items: [...this.objects.values()].map((o) => this.listTransform(structuredClone(o))),
      resourceVersion: String(this.rv),
    };
  }

  watch(
    opts: WatchOptions,
    onEvent: (type: string, obj: unknown) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.watches.push(opts);
    return new Promise((resolve, reject) => {
      const w: ActiveWatch = {
        opts,
        onEvent,
        end: () => {
          if (this.active === w) this.active = undefined;
          resolve();
        },
        fail: (err) => {
          if (this.active === w) this.active = undefined;
          reject(err);
        },
      };
      this.active = w;
      signal.addEventListener('abort', () => w.end(), { once: true });
      // Like the API server: a watch from version N first sees every event after N.
      const from = Number(opts.resourceVersion || '0');
      for (const e of this.history)
        if (e.rv > from && this.active === w) onEvent(e.type, structuredClone(e.obj));
    });
  }

  /** Creates or updates (new resourceVersion); the active watch sees it unless `silent`. */
  put(o: T, silent = false): T {
    const key = objectKey(o);
    const existed = this.objects.has(key);
    const stored = structuredClone(o);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) };
    this.objects.set(key, stored);
    // A silent change is one the watch never reports (as if compacted away): only a relist sees it.
    if (!silent) this.#emit(existed ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  /** Deletes; the active watch sees it unless `silent`. */
  remove(namespace: string | undefined, name: string, silent = false): void {
    const key = keyOf(namespace, name);
    const o = this.objects.get(key);
    if (!o) return;
    this.objects.delete(key);
    this.rv++;
    if (!silent)
      this.#emit('DELETED', { ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv) } });
  }

  #emit(type: string, obj: T): void {
    this.history.push({ rv: this.rv, type, obj: structuredClone(obj) });
    this.active?.onEvent(type, structuredClone(obj));
  }
}

/** One Lease in memory with the API server's compare-and-swap semantics. */
export class LeaseStore {
  record: LeaderElectionRecord | undefined;
  rv = 0;
  writes = 0;
  reads = 0;
}

/** One replica's view of the store; `broken` makes every call fail (a partitioned replica). */
export class MemoryLeaseLock implements LeaseLock {
  broken = false;
  latencyMs = 0;
  readonly #store: LeaseStore;
  readonly #clock: Clock;

  constructor(store: LeaseStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  describe() {
    return 'test/lease';
  }

  async #net(): Promise<void> {
    if (this.latencyMs > 0) await sleep(this.#clock, this.latencyMs);
    if (this.broken) throw new Error('connection refused');
  }

  async get(): Promise<LockRead | undefined> {
    await this.#net();
    const s = this.#store;
    s.reads++;
    return s.record ? { record: structuredClone(s.record), resourceVersion: String(s.rv) } : undefined;
  }

  async create(record: LeaderElectionRecord): Promise<string> {
    await this.#net();
    if (this.#store.record) throw new KubeApiError(409, 'AlreadyExists', 'exists', undefined);
    this.#store.record = structuredClone(record);
    this.#store.rv++;
    this.#store.writes++;
    return String(this.#store.rv);
  }

  async update(record: LeaderElectionRecord, resourceVersion: string): Promise<string> {
    await this.#net();
    if (String(this.#store.rv) !== resourceVersion)
      throw new KubeApiError(409, 'Conflict', 'changed', undefined);
    this.#store.record = structuredClone(record);
    this.#store.rv++;
    this.#store.writes++;
    return String(this.#store.rv);
  }
}
