// Writes with server-side apply under the operator's field manager: child objects (apply) and the
// status subresource (applyStatus). SSA makes writes declarative and idempotent: we send the
// fields we own, the API server merges them, and a field we stop sending is removed only if we
// owned it. `force` takes ownership from other managers (we are the controller of these fields).
//
// client-node's KubernetesObjectApi.patch cannot reach subresources, and its generated patch
// methods need a header override for SSA, so this goes through the raw JSON client.

import type { KubernetesObject } from '@kubernetes/client-node';
import { type KubeClient, PATCH_TYPES, type RestMapper } from './kube-client.ts';

export const FIELD_MANAGER = 'vworkspace-operator';

export interface WriteOptions {
  fieldManager?: string;
  /** Default true: the operator owns what it applies. */
  force?: boolean;
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** What identifies an object for a write. */
export type ObjectIdentity = Required<Pick<KubernetesObject, 'apiVersion' | 'kind'>> & {
  metadata: { name: string; namespace?: string };
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of JSON values; key order and undefined-valued keys do not matter. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}

function identity(obj: ObjectIdentity): ObjectIdentity {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: {
      name: obj.metadata.name,
      ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
    },
  };
}

export class ObjectWriter {
  readonly #client: KubeClient;
  readonly #mapper: RestMapper;
  readonly fieldManager: string;

  constructor(client: KubeClient, mapper: RestMapper, fieldManager = FIELD_MANAGER) {
    this.#client = client;
    this.#mapper = mapper;
    this.fieldManager = fieldManager;
  }

  #query(opts: WriteOptions): Record<string, string | boolean | undefined> {
    return {
      fieldManager: opts.fieldManager ?? this.fieldManager,
      force: opts.force ?? true,
      dryRun: opts.dryRun ? 'All' : undefined,
    };
  }

  /** Server-side apply of a whole object (children: Jobs, Velero Backups, …). Returns the result. */
  async apply<T extends KubernetesObject>(obj: T & ObjectIdentity, opts: WriteOptions = {}): Promise<T> {
    const { status: _dropped, ...body } = obj as T & ObjectIdentity & { status?: unknown };
    // A child's status belongs to its own controller; resourceVersion would turn the apply into a
    // conditional write and managedFields are the server's bookkeeping.
    const { resourceVersion: _rv, managedFields: _mf, ...meta } = body.metadata;
    return this.#client.request<T>({
      method: 'PATCH',
      path: await this.#mapper.pathFor(obj),
      query: this.#query(opts),
      body: { ...body, metadata: meta },
      contentType: PATCH_TYPES.apply,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /**
   * Server-side apply of `status` on the status subresource. Send the complete status this
   * manager owns: fields it applied before and omits now are removed.
   */
  async applyStatus<T extends KubernetesObject>(
    obj: ObjectIdentity,
    status: unknown,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.#client.request<T>({
      method: 'PATCH',
      path: await this.#mapper.pathFor(obj, 'status'),
      query: this.#query(opts),
      body: { ...identity(obj), status },
      contentType: PATCH_TYPES.apply,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /**
   * applyStatus unless `current.status` already equals `status`: a reconcile that changes nothing
   * makes no write (no resourceVersion bump, no watch event, no reconcile loop).
   * Returns the object as the API server stored it, or false when nothing was written.
   */
  async applyStatusIfChanged<T extends KubernetesObject = KubernetesObject>(
    current: ObjectIdentity & { status?: unknown },
    status: unknown,
    opts: WriteOptions = {},
  ): Promise<T | false> {
    if (jsonEqual(current.status ?? {}, status)) return false;
    return this.applyStatus<T>(current, status, opts);
  }

  /** JSON merge patch of the status subresource (for fields shared with other managers). */
  async mergePatchStatus<T extends KubernetesObject>(
    obj: ObjectIdentity,
    statusPatch: unknown,
    opts: WriteOptions = {},
  ) {
    return this.#client.request<T>({
      method: 'PATCH',
      path: await this.#mapper.pathFor(obj, 'status'),
      query: {
        fieldManager: opts.fieldManager ?? this.fieldManager,
        dryRun: opts.dryRun ? 'All' : undefined,
      },
      body: { status: statusPatch },
      contentType: PATCH_TYPES.merge,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /** JSON merge patch of the main resource (labels, annotations, finalizers). */
  async mergePatch<T extends KubernetesObject>(obj: ObjectIdentity, patch: unknown, opts: WriteOptions = {}) {
    return this.#client.request<T>({
      method: 'PATCH',
      path: await this.#mapper.pathFor(obj),
      query: {
        fieldManager: opts.fieldManager ?? this.fieldManager,
        dryRun: opts.dryRun ? 'All' : undefined,
      },
      body: patch,
      contentType: PATCH_TYPES.merge,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }
}
