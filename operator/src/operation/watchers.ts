// Informers the Operation controller starts on demand:
//
// ChildWatcher: one cluster-wide informer per engine child kind, selecting `ops.vworkspace.io/operation`
// (only our children), started the first time an Operation of that engine needs it. Started lazily
// because an engine's CRD may not be installed: an informer on a missing kind would never sync and
// would hold up the controller. Child events enqueue the owning Operation (progress is watch-driven).
//
// NameWatcher: narrow watches (fieldSelector metadata.name=<name>) on the Secrets / ServiceAccounts a
// Blocked Operation waits for, started while someone waits for them and stopped afterwards. Only existence
// matters, so they list and watch metadata only (PartialObjectMetadata): Secret data is never sent.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeConfigLike } from '@vworkspace/runtime';
import {
  type Clock,
  Informer,
  isNotFound,
  type KubeClient,
  keyOf,
  kubeListerWatcher,
  kubeMetadataListerWatcher,
  type Logger,
  type RestMapper,
  realClock,
  requestSignal,
  scopedListerWatcher,
  silentLogger,
  splitApiVersion,
} from '@vworkspace/runtime';
import { LABEL_OPERATION, LABEL_OPERATION_NAMESPACE } from '../api/annotations.ts';

export interface ChildKind {
  apiVersion: string;
  kind: string;
  plural: string;
}

export interface ChildRefLike {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
}

/** The Operation key a child belongs to, from its labels. */
export function operationKeyOfChild(child: KubernetesObject): string | undefined {
  const l = child.metadata?.labels ?? {};
  const name = l[LABEL_OPERATION];
  const ns = l[LABEL_OPERATION_NAMESPACE] ?? child.metadata?.namespace;
  return name && ns ? keyOf(ns, name) : undefined;
}

export interface WatcherDeps {
  kc: KubeConfigLike;
  client: KubeClient;
  mapper: RestMapper;
  clock?: Clock;
  logger?: Logger;
  /**
   * The namespaces to watch children of a kind (by apiVersion) in; unset: every namespace. A
   * namespace-scoped install (WATCH_NAMESPACE) lists and watches only where it has Roles.
   */
  childNamespaces?: (apiVersion: string) => readonly string[];
}

export class ChildWatcher {
  readonly #deps: WatcherDeps;
  readonly #onEvent: (operationKey: string) => void;
  readonly #informers = new Map<string, Informer<KubernetesObject>>();

  constructor(deps: WatcherDeps, onEvent: (operationKey: string) => void) {
    this.#deps = deps;
    this.#onEvent = onEvent;
  }

  #childLw(apiVersion: string, resource: { group: string; version: string; plural: string }) {
    const { kc, client } = this.#deps;
    return scopedListerWatcher(resource, this.#deps.childNamespaces?.(apiVersion), (r) =>
      kubeListerWatcher<KubernetesObject>(kc, r, client),
    );
  }

  /** Starts the informer of `kind` if not yet running. */
  ensure(kind: ChildKind): Informer<KubernetesObject> {
    const id = `${kind.apiVersion}/${kind.kind}`;
    let inf = this.#informers.get(id);
    if (inf) return inf;
    this.#deps.mapper.register(kind.apiVersion, kind.kind, kind.plural, true);
    const gv = splitApiVersion(kind.apiVersion);
    const resource = { ...gv, plural: kind.plural };
    inf = new Informer<KubernetesObject>({
      name: `children-${kind.plural}${gv.group ? `.${gv.group}` : ''}`,
      listerWatcher: this.#childLw(kind.apiVersion, resource),
      labelSelector: LABEL_OPERATION,
      clock: this.#deps.clock ?? realClock,
      logger: this.#deps.logger ?? silentLogger,
    });
    const enqueue = (o: KubernetesObject) => {
      const key = operationKeyOfChild(o);
      if (key) this.#onEvent(key);
    };
    inf.addEventHandler({ add: enqueue, update: (_o, n) => enqueue(n), delete: enqueue });
    inf.start();
    this.#informers.set(id, inf);
    return inf;
  }

  /** The child as the cache shows it (undefined: not cached, or the informer has not synced). */
  cached(ref: ChildRefLike, kind: ChildKind): KubernetesObject | undefined {
    const inf = this.ensure(kind);
    return inf.hasSynced() ? inf.get(ref.name, ref.namespace) : undefined;
  }

  /**
   * The child as it is now: from the cache when the informer has it, else read from the API server
   * (the cache may not have seen a child created a moment ago). undefined = it does not exist.
   */
  async get(
    ref: ChildRefLike,
    kind: ChildKind | undefined,
    signal?: AbortSignal,
  ): Promise<KubernetesObject | undefined> {
    const cached = kind && this.cached(ref, kind);
    if (cached) return cached;
    try {
      const path = await this.#deps.mapper.pathFor({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { name: ref.name, namespace: ref.namespace },
      });
      const obj = await this.#deps.client.request<KubernetesObject>({
        method: 'GET',
        path,
        ...(signal ? { signal } : {}),
      });
      obj.apiVersion ??= ref.apiVersion;
      obj.kind ??= ref.kind;
      return obj;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.stop()));
    this.#informers.clear();
  }
}

export type NamedKind = 'secrets' | 'serviceaccounts';

/** On-demand watches of single named objects, reference-counted by the Operations waiting for them. */
export class NameWatcher {
  readonly #deps: WatcherDeps;
  readonly #onChange: (kind: NamedKind, namespace: string, name: string) => void;
  readonly #informers = new Map<string, Informer<KubernetesObject>>();
  readonly #wanted = new Map<string, Set<string>>(); // operation key → informer ids
  /**
   * informer id → how many Operations want it: a release looks at its own ids only, not at every waiting
   * Operation's (a scan of all of them per reconcile cost a burst of N waiting Operations N²; issue 26).
   */
  readonly #users = new Map<string, number>();

  constructor(deps: WatcherDeps, onChange: (kind: NamedKind, namespace: string, name: string) => void) {
    this.#deps = deps;
    this.#onChange = onChange;
  }

  static id(kind: NamedKind, namespace: string, name: string): string {
    return `${kind}/${namespace}/${name}`;
  }

  /** Starts (if needed) the watch of one object and reports whether it exists, once the watch listed. */
  async exists(
    operationKey: string,
    kind: NamedKind,
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const id = NameWatcher.id(kind, namespace, name);
    let set = this.#wanted.get(operationKey);
    if (!set) {
      set = new Set();
      this.#wanted.set(operationKey, set);
    }
    if (!set.has(id)) {
      set.add(id);
      this.#users.set(id, (this.#users.get(id) ?? 0) + 1);
    }
    let inf = this.#informers.get(id);
    if (!inf) {
      const resource = { group: '', version: 'v1', plural: kind, namespace };
      inf = new Informer<KubernetesObject>({
        name: `wait-${id}`,
        listerWatcher: kubeMetadataListerWatcher(this.#deps.kc, resource, this.#deps.client),
        fieldSelector: `metadata.name=${name}`,
        clock: this.#deps.clock ?? realClock,
        logger: this.#deps.logger ?? silentLogger,
      });
      const changed = () => this.#onChange(kind, namespace, name);
      inf.addEventHandler({ add: changed, delete: changed });
      inf.start();
      this.#informers.set(id, inf);
    }
    if (!inf.hasSynced()) {
      const deadline = requestSignal(signal, 10_000);
      const synced = await inf.waitForSync(deadline.signal).finally(deadline.done);
      if (!synced) throw new Error(`could not list ${kind} ${namespace}/${name} yet; retrying`);
    }
    return inf.get(name, namespace) !== undefined;
  }

  /** The Operation waits for nothing (any more): stop the watches nobody else needs. */
  release(operationKey: string, keep: readonly string[] = []): void {
    const set = this.#wanted.get(operationKey);
    if (!set) return;
    for (const id of [...set]) {
      if (keep.includes(id)) continue;
      set.delete(id);
      const users = (this.#users.get(id) ?? 1) - 1;
      if (users > 0) {
        this.#users.set(id, users);
        continue;
      }
      this.#users.delete(id);
      const inf = this.#informers.get(id);
      this.#informers.delete(id);
      void inf?.stop();
    }
    if (set.size === 0) this.#wanted.delete(operationKey);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.stop()));
    this.#informers.clear();
    this.#wanted.clear();
    this.#users.clear();
  }
}
