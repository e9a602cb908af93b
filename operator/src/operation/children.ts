// The engine children of an Operation as the API server has them: read the recorded ones, create the
// decided ones (or adopt those that prove to be this Operation's, adoption.ts), perform an engine's
// cancel and prepare actions, and delete an Operation whose TTL passed. Every write here is one the
// decision (decide.ts) asked for; nothing is decided here.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  isAlreadyExists,
  isNotFound,
  type KubeClient,
  type ObjectWriter,
  PATCH_TYPES,
  type RestMapper,
  resourcePath,
  statusCode,
} from '@vworkspace/runtime';
import { OPERATION } from '../api/constants.ts';
import type { ChildRef, Operation } from '../api/operation.ts';
import type { CancelAction, ChildManifest, EngineAdapter } from '../engines/types.ts';
import { childConflict } from './adoption.ts';
import { refOf } from './decide.ts';
import type { ChildWatcher } from './watchers.ts';

/** The recorded children as they are now, and the first one that is no longer the object recorded. */
export interface RecordedChildren {
  children: KubernetesObject[];
  conflict?: string;
}

/** 400/422 from creating a child: the manifest is invalid; retrying cannot help. */
export function isInvalid(err: unknown): boolean {
  const code = statusCode(err);
  return code === 400 || code === 422;
}

export class OperationChildren {
  readonly #client: KubeClient;
  readonly #mapper: RestMapper;
  readonly #writer: ObjectWriter;
  readonly #watcher: ChildWatcher;

  constructor(opts: { client: KubeClient; mapper: RestMapper; writer: ObjectWriter; watcher: ChildWatcher }) {
    this.#client = opts.client;
    this.#mapper = opts.mapper;
    this.#writer = opts.writer;
    this.#watcher = opts.watcher;
  }

  async read(
    op: Operation,
    adapter: EngineAdapter | undefined,
    signal: AbortSignal,
  ): Promise<RecordedChildren> {
    const refs = op.status?.childRefs?.length
      ? op.status.childRefs
      : op.status?.childRef
        ? [op.status.childRef]
        : [];
    const out: KubernetesObject[] = [];
    let conflict: string | undefined;
    for (const ref of refs) {
      const kind = adapter?.childKinds.find((k) => k.apiVersion === ref.apiVersion && k.kind === ref.kind);
      const child = await this.#watcher.get(ref, kind, signal);
      if (!child) continue;
      conflict ??= childConflict(op, { ...child, apiVersion: ref.apiVersion, kind: ref.kind }, ref);
      // Items of a List arrive without kind; an adapter with children of several kinds needs it.
      out.push({ ...child, apiVersion: child.apiVersion ?? ref.apiVersion, kind: child.kind ?? ref.kind });
    }
    return { children: out, ...(conflict ? { conflict } : {}) };
  }

  /**
   * Creates the decided children, or adopts those that already exist AND prove to be this Operation's
   * (adoption.ts): a crash between creating and recording them must not make a second child, and an
   * object someone else made under a child's name must never stand in for one. Every existing child is
   * checked before anything is created, so a conflict leaves no half-created set. Returns the refs
   * with uids, or the conflict.
   */
  async create(
    op: Operation,
    children: ChildManifest[],
    adapter: EngineAdapter,
    signal: AbortSignal,
  ): Promise<{ refs: ChildRef[] } | { conflict: string }> {
    const kindOf = (child: ChildManifest) => {
      const kind = adapter.childKinds.find((k) => k.apiVersion === child.apiVersion && k.kind === child.kind);
      if (kind) this.#watcher.ensure(kind);
      return kind;
    };
    const lookup = async (child: ChildManifest) => {
      const found = await this.#watcher.get(refOfManifest(child), kindOf(child), signal);
      return found && { ...found, apiVersion: child.apiVersion, kind: child.kind };
    };
    // One child: its POST is the check (AlreadyExists leads to the same read and proof below), so only
    // the cache is asked first; a read before every create was a large share of the requests an Operation
    // waited on to start (bench operations; docs/performance.md). Several: every one is read before any is
    // created.
    const only = children.length === 1 ? children[0] : undefined;
    const onlyKind = only && kindOf(only);
    const cached = only && onlyKind && this.#watcher.cached(refOfManifest(only), onlyKind);
    const existing =
      only && onlyKind
        ? [cached ? { ...cached, apiVersion: only.apiVersion, kind: only.kind } : undefined]
        : await Promise.all(children.map(lookup));
    for (const found of existing) {
      const conflict = found && childConflict(op, found);
      if (conflict) return { conflict };
    }
    const refs: ChildRef[] = [];
    for (const [i, child] of children.entries()) {
      let obj = existing[i];
      if (!obj) {
        try {
          obj = { ...(await this.#post(child, signal)), apiVersion: child.apiVersion, kind: child.kind };
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
          // Made since the lookup: by us (a stale cache) or by someone else; the same proof decides.
          // Gone again already: the queue retries the whole reconcile.
          obj = await lookup(child);
          if (!obj) throw err;
          const conflict = childConflict(op, obj);
          if (conflict) return { conflict };
        }
      }
      refs.push(refOf(obj));
    }
    return { refs };
  }

  /** An engine's actions (cancel, prepare, follow-up), in order; what is already done is skipped. */
  async perform(actions: readonly CancelAction[], signal: AbortSignal): Promise<void> {
    for (const a of actions) {
      try {
        if (a.kind === 'patch' && a.subresource) {
          await this.#client.request({
            method: 'PATCH',
            path: await this.#mapper.pathFor(a.child, a.subresource),
            query: { fieldManager: this.#writer.fieldManager },
            body: a.patch,
            contentType: PATCH_TYPES.merge,
            signal,
          });
        } else if (a.kind === 'patch') await this.#writer.mergePatch(a.child as never, a.patch, { signal });
        else if (a.kind === 'delete') {
          const path = await this.#mapper.pathFor(a.child);
          await this.#client.request({
            method: 'DELETE',
            path,
            body: {
              propagationPolicy: a.propagationPolicy ?? 'Background',
              ...(a.uid ? { preconditions: { uid: a.uid } } : {}),
            },
            signal,
          });
        } else if (a.kind === 'ensure') await this.#post(a.object, signal);
        else if (a.kind === 'create') await this.#writer.apply(a.object, { signal });
      } catch (err) {
        // A delete whose uid precondition no longer holds (409): that object is already gone.
        if (
          isNotFound(err) ||
          isAlreadyExists(err) ||
          (a.kind === 'delete' && a.uid && statusCode(err) === 409)
        )
          continue;
        throw err;
      }
    }
  }

  /** TTL: delete the Operation; children elsewhere (no owner reference possible) go first. */
  async deleteOperation(op: Operation, signal: AbortSignal): Promise<void> {
    const refs = op.status?.childRefs ?? (op.status?.childRef ? [op.status.childRef] : []);
    for (const ref of refs) {
      if (ref.namespace === op.metadata.namespace) continue; // garbage-collected with the Operation
      // A velero.io Backup IS the backup: its spec.ttl governs it, and Velero's backup sync would
      // recreate a deleted Backup object from the storage location anyway.
      if (ref.apiVersion.startsWith('velero.io/') && ref.kind === 'Backup') continue;
      const path = () =>
        this.#mapper.pathFor({ ...ref, metadata: { name: ref.name, namespace: ref.namespace } });
      // By uid: a scratch namespace of a Verify, or a Restore, made since under the name is not ours.
      await this.#delete(
        path,
        { propagationPolicy: 'Background', ...(ref.uid ? { preconditions: { uid: ref.uid } } : {}) },
        signal,
      );
    }
    const path = resourcePath(
      {
        group: OPERATION.group,
        version: OPERATION.version,
        plural: OPERATION.plural,
        namespace: op.metadata.namespace ?? '',
      },
      op.metadata.name ?? '',
    );
    await this.#delete(
      async () => path,
      { propagationPolicy: 'Background', preconditions: { uid: op.metadata.uid } },
      signal,
    );
  }

  /** DELETE; NotFound, or a uid precondition that no longer holds (409), means done. */
  async #delete(path: () => Promise<string>, body: unknown, signal: AbortSignal): Promise<void> {
    try {
      await this.#client.request({ method: 'DELETE', path: await path(), body, signal });
    } catch (err) {
      if (!isNotFound(err) && statusCode(err) !== 409) throw err;
    }
  }

  /** POST, never apply: an apply would merge into an object someone else made under the child's name. */
  async #post(child: ChildManifest, signal: AbortSignal): Promise<KubernetesObject> {
    const info = await this.#mapper.resourceFor(child.apiVersion, child.kind);
    return this.#client.request<KubernetesObject>({
      method: 'POST',
      path: resourcePath({
        group: info.group,
        version: info.version,
        plural: info.plural,
        ...(info.namespaced ? { namespace: child.metadata.namespace } : {}),
      }),
      query: { fieldManager: this.#writer.fieldManager },
      body: child,
      signal,
    });
  }
}

function refOfManifest(child: ChildManifest) {
  return {
    apiVersion: child.apiVersion,
    kind: child.kind,
    name: child.metadata.name,
    namespace: child.metadata.namespace,
  };
}
