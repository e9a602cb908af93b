// Test helpers for code built on the runtime: an in-memory API resource that an Informer can
// list and watch, with a way to make the informer miss events (to exercise relists).

import type { KubernetesObject } from '@kubernetes/client-node';
import { type Clock, sleep } from './clock.ts';
import { keyOf, objectKey } from './keys.ts';
import {
  KubeApiError,
  type KubeClient,
  type KubeRequest,
  type KubeWatcher,
  PATCH_TYPES,
  type WatchRequest,
} from './kube-client.ts';
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
  /** While true, the active watch hears nothing: events wait in `held` until release() (a lagging cache). */
  holding = false;
  readonly held: { type: string; obj: T }[] = [];

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

  /** Delivers the events held back since `holding` was set, and stops holding. */
  release(): void {
    this.holding = false;
    for (const e of this.held.splice(0)) this.active?.onEvent(e.type, structuredClone(e.obj));
  }

  #emit(type: string, obj: T): void {
    this.history.push({ rv: this.rv, type, obj: structuredClone(obj) });
    if (this.holding) this.held.push({ type, obj: structuredClone(obj) });
    else this.active?.onEvent(type, structuredClone(obj));
  }
}

type Json = Record<string, unknown>;

function isJson(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch (null removes a field). */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJson(patch)) return patch;
  const out: Json = isJson(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * An in-memory API server over MemoryResources, as a KubeClient and KubeWatcher: enough REST (list, get,
 * create, merge patch and server-side apply as a merge, the status subresource, delete with a uid
 * precondition) for an InformerFactory and a Client to run against. `failNext` makes the next request of a
 * method fail with that error (an admission denial, a lost write).
 */
export class MemoryApiServer implements KubeClient, KubeWatcher {
  readonly #resources = new Map<string, MemoryResource<KubernetesObject>>();
  readonly failNext = new Map<string, unknown>();
  readonly requests: KubeRequest[] = [];
  #uids = 0;

  /** The store of `plural` (group/version ignored: one version per resource in tests). */
  resource<T extends KubernetesObject>(plural: string): MemoryResource<T> {
    let r = this.#resources.get(plural);
    if (!r) {
      r = new MemoryResource<KubernetesObject>();
      this.#resources.set(plural, r);
    }
    return r as unknown as MemoryResource<T>;
  }

  /** Stores `o` as a client outside this process would (a uid is given if it has none). */
  put<T extends KubernetesObject>(plural: string, o: T, silent = false): T {
    const withUid = o.metadata?.uid ? o : { ...o, metadata: { ...o.metadata, uid: `uid-${++this.#uids}` } };
    return this.resource<T>(plural).put(withUid, silent);
  }

  #route(path: string): {
    store: MemoryResource<KubernetesObject>;
    namespace?: string;
    name?: string;
    status: boolean;
  } {
    const parts = path.split('/').filter(Boolean);
    const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
    const namespace = rest[0] === 'namespaces' && rest.length > 2 ? rest[1] : undefined;
    const [plural = '', name, sub] = namespace !== undefined ? rest.slice(2) : rest;
    return {
      store: this.resource(plural),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(name !== undefined ? { name } : {}),
      status: sub === 'status',
    };
  }

  async request<T>(req: KubeRequest): Promise<T> {
    this.requests.push(req);
    await Promise.resolve();
    const failure = this.failNext.get(req.method);
    if (failure !== undefined) {
      this.failNext.delete(req.method);
      throw failure;
    }
    const { store, namespace, name, status } = this.#route(req.path);
    const key = name !== undefined ? keyOf(namespace, name) : '';
    const current = store.objects.get(key);
    const notFound = () => new KubeApiError(404, 'NotFound', `${name} not found`, undefined);
    if (req.method === 'GET' && name === undefined) {
      const items = [...store.objects.values()].filter(
        (o) => namespace === undefined || o.metadata?.namespace === namespace,
      );
      return { items: structuredClone(items), metadata: { resourceVersion: String(store.rv) } } as T;
    }
    if (req.method === 'GET') {
      if (!current) throw notFound();
      return structuredClone(current) as T;
    }
    if (req.method === 'POST') {
      const o = req.body as KubernetesObject;
      if (store.objects.has(keyOf(namespace, o.metadata?.name ?? '')))
        throw new KubeApiError(409, 'AlreadyExists', `${o.metadata?.name} already exists`, undefined);
      return this.put(this.#pluralOf(store), {
        ...o,
        metadata: { ...o.metadata, ...(namespace ? { namespace } : {}) },
      }) as T;
    }
    if (req.method === 'PATCH') {
      const body = req.body as Json;
      if (!current && (status || req.contentType !== PATCH_TYPES.apply)) throw notFound();
      const base: Json = current
        ? structuredClone(current as unknown as Json)
        : { metadata: { name, namespace } };
      const next = status
        ? { ...base, status: mergePatch(base.status, body.status) }
        : mergePatch(base, body);
      return this.put(this.#pluralOf(store), next as KubernetesObject) as T;
    }
    if (req.method === 'DELETE') {
      if (!current) throw notFound();
      const uid = (req.body as { preconditions?: { uid?: string } } | undefined)?.preconditions?.uid;
      if (uid && uid !== current.metadata?.uid)
        throw new KubeApiError(409, 'Conflict', 'Precondition failed: UID mismatch', undefined);
      store.remove(namespace, name ?? '');
      return { kind: 'Status', status: 'Success' } as T;
    }
    throw new Error(`MemoryApiServer: ${req.method} not supported`);
  }

  #pluralOf(store: MemoryResource<KubernetesObject>): string {
    for (const [plural, s] of this.#resources) if (s === store) return plural;
    return '';
  }

  watch(req: WatchRequest, onEvent: (type: string, obj: unknown) => void): Promise<void> {
    const { store, namespace } = this.#route(req.path);
    const q = req.query;
    return store.watch(
      {
        resourceVersion: String(q.resourceVersion ?? ''),
        allowWatchBookmarks: true,
        timeoutSeconds: Number(q.timeoutSeconds ?? 0),
      },
      (type, obj) => {
        if (namespace === undefined || (obj as KubernetesObject).metadata?.namespace === namespace)
          onEvent(type, obj);
      },
      req.signal,
    );
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
