// The client a reconciler reads and writes through (controller-runtime's client.Client): reads come from
// the process's shared informer cache, writes go to the API server and are recorded in that cache, so
// the next read shows them even before their watch event arrives (pending-writes.ts). Every controller
// has its own Client (its own connection pool and QPS budget) over the one cache: a write through any
// of them is seen by all.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from './informer.ts';
import type { CacheWrite, InformerFactory } from './informer-factory.ts';
import { type KubeClient, type ResourceRef, type RestMapper, resourcePath } from './kube-client.ts';
import type { Request } from './reconcile.ts';
import { FIELD_MANAGER, jsonEqual, type ObjectIdentity, ObjectWriter, type WriteOptions } from './status.ts';

/** A kind the client reads and writes (the API's ResourceId fits). */
export interface Kind {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

export interface CacheListOptions {
  namespace?: string;
  /** An index lookup instead: the objects index `[0]` files under `[1]` (see Informer.addIndexer). */
  index?: readonly [name: string, value: string];
}

export interface DeleteOptions {
  /** Only this object (a precondition): never one created under the same name since. */
  uid?: string;
  propagation?: 'Background' | 'Foreground' | 'Orphan';
  signal?: AbortSignal;
}

export interface ClientOptions {
  client: KubeClient;
  mapper: RestMapper;
  cache: InformerFactory;
  fieldManager?: string;
}

/** Writes of the status subresource, recorded like every other write. */
export interface StatusWriter {
  /** Server-side apply of `status` (the complete status this manager owns). */
  apply<T extends KubernetesObject>(obj: ObjectIdentity, status: unknown, opts?: WriteOptions): Promise<T>;
  /** apply unless `current.status` already equals `status`; false when nothing was written. */
  applyIfChanged<T extends KubernetesObject>(
    current: ObjectIdentity & { status?: unknown },
    status: unknown,
    opts?: WriteOptions,
  ): Promise<T | false>;
}

function resourceOf(kind: Omit<ResourceRef, 'namespace'>): Omit<ResourceRef, 'namespace'> {
  return { group: kind.group, version: kind.version, plural: kind.plural };
}

function isObject(v: unknown): v is KubernetesObject & { metadata: { uid?: string } } {
  return (
    typeof v === 'object' && v !== null && 'metadata' in v && (v as { kind?: unknown }).kind !== 'Status'
  );
}

export class Client {
  readonly #client: KubeClient;
  readonly #mapper: RestMapper;
  readonly #cache: InformerFactory;
  readonly #writer: ObjectWriter;
  readonly #status: StatusWriter;

  constructor(opts: ClientOptions) {
    this.#client = opts.client;
    this.#mapper = opts.mapper;
    this.#cache = opts.cache;
    this.#writer = new ObjectWriter(opts.client, opts.mapper, opts.fieldManager ?? FIELD_MANAGER);
    this.#status = {
      apply: (obj, status, o = {}) => this.#write(obj, () => this.#writer.applyStatus(obj, status, o)),
      applyIfChanged: async <T extends KubernetesObject>(
        current: ObjectIdentity & { status?: unknown },
        status: unknown,
        o: WriteOptions = {},
      ) => (jsonEqual(current.status ?? {}, status) ? false : this.#status.apply<T>(current, status, o)),
    };
  }

  // ---- reads: the shared cache with this process's pending writes ----------------------------------

  /** The cached `kind` object of `req` (undefined: not there). Throws if `kind` is not watched. */
  get<T extends KubernetesObject>(kind: Kind, req: Request): T | undefined {
    return this.#informer<T>(kind).get(req.name, req.namespace);
  }

  /** The cached `kind` objects, of one namespace or by an index. Throws if `kind` is not watched. */
  list<T extends KubernetesObject>(kind: Kind, opts: CacheListOptions = {}): T[] {
    const inf = this.#informer<T>(kind);
    return opts.index ? inf.byIndex(opts.index[0], opts.index[1]) : inf.list(opts.namespace);
  }

  #informer<T extends KubernetesObject>(kind: Kind): Informer<T> {
    const inf = this.#cache.informer<T>(resourceOf(kind));
    // An informer nobody started would answer "nothing there" for ever: a read needs a watch.
    if (!inf.hasSynced()) throw new Error(`${kind.kind} is not cached (watch it, and wait for the sync)`);
    return inf;
  }

  /** GET from the API server itself (controller-runtime's APIReader): what the cache cannot have yet. */
  async apiGet<T extends KubernetesObject>(obj: ObjectIdentity, signal?: AbortSignal): Promise<T> {
    const path = await this.#mapper.pathFor(obj);
    return this.#client.request<T>({ method: 'GET', path, ...(signal ? { signal } : {}) });
  }

  // ---- writes: the API server, then the cache ------------------------------------------------------

  /** POST `obj` (AlreadyExists and refusals are thrown as the API server said them). */
  async create<T extends KubernetesObject>(obj: T & ObjectIdentity, opts: WriteOptions = {}): Promise<T> {
    const path = await this.#mapper.pathFor(obj);
    const collection = path.slice(0, path.lastIndexOf('/'));
    return this.#write(obj, () =>
      this.#client.request<T>({
        method: 'POST',
        path: collection,
        body: obj,
        query: {
          fieldManager: opts.fieldManager ?? this.#writer.fieldManager,
          dryRun: opts.dryRun ? 'All' : undefined,
        },
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    );
  }

  /** Server-side apply of a whole object under the field manager (status left out). */
  apply<T extends KubernetesObject>(obj: T & ObjectIdentity, opts: WriteOptions = {}): Promise<T> {
    return this.#write(obj, () => this.#writer.apply<T>(obj, opts));
  }

  /** JSON merge patch of the main resource (labels, annotations, spec fields). */
  patch<T extends KubernetesObject>(
    obj: ObjectIdentity,
    mergePatch: unknown,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.#write(obj, () => this.#writer.mergePatch<T>(obj, mergePatch, opts));
  }

  /** DELETE (NotFound and a failed uid precondition are thrown as the API server said them). */
  async delete(obj: ObjectIdentity, opts: DeleteOptions = {}): Promise<void> {
    const info = await this.#mapper.resourceFor(obj.apiVersion, obj.kind);
    const ns = obj.metadata.namespace;
    const write = this.#cache.writing(info, ns, obj.metadata.name);
    try {
      const answer = await this.#client.request<unknown>({
        method: 'DELETE',
        path: resourcePath({ ...resourceOf(info), ...(ns ? { namespace: ns } : {}) }, obj.metadata.name),
        query: { propagationPolicy: opts.propagation ?? 'Background' },
        ...(opts.uid
          ? { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: opts.uid } } }
          : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      // Finalizers keep the object (the answer is the object, deletionTimestamp set); else it is gone.
      if (isObject(answer) && answer.metadata?.deletionTimestamp) write.written(answer);
      else write.deleted(opts.uid);
    } finally {
      write.done();
    }
  }

  status(): StatusWriter {
    return this.#status;
  }

  async #write<T extends KubernetesObject>(obj: ObjectIdentity, send: () => Promise<T>): Promise<T> {
    const info = await this.#mapper.resourceFor(obj.apiVersion, obj.kind);
    const write: CacheWrite = this.#cache.writing(info, obj.metadata.namespace, obj.metadata.name);
    try {
      const out = await send();
      if (isObject(out)) write.written(out);
      return out;
    } finally {
      write.done();
    }
  }
}
