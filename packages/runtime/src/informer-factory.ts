// One informer per resource and selector for the whole process, like controller-runtime's shared
// cache: controllers that watch the same kind share one list+watch and one copy of every object
// (three ApplicationInstance caches were three times the memory and three watches on the API server).
// Each controller adds the indexes it reads by; index names are global per informer, so prefix them
// with the controller ("operation:target").
//
// A request's scope is part of what is shared: the namespaces watched (WATCH_NAMESPACE, one stream per
// namespace, multi-namespace.ts) and whether objects arrive as PartialObjectMetadata only (metadata.ts,
// for Secrets) select different informers, so a metadata-only cache never serves a full read, nor the
// other way round. Controllers ask the factory for a kind and never build list/watch paths themselves.
//
// The factory is also where a write reaches the caches (`writing`): the Client (client.ts) hands it what
// the API server returned, and every full informer whose scope and label selector would hold the object
// shows it to reads until it has caught up (pending-writes.ts). Metadata-only informers and informers
// with a field selector are left out: what they would hold cannot be told from the written object.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from './clock.ts';
import { createInformer, type Informer, type KubeInformerOptions } from './informer.ts';
import { keyOf } from './keys.ts';
import type { KubeClient, ResourceRef } from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import { matchesLabelSelector } from './label-selector.ts';
import type { Logger } from './logger.ts';
import { createMetadataInformer, type PartialObjectMetadata } from './metadata.ts';

export interface InformerFactoryOptions {
  kc: KubeConfigLike;
  client: KubeClient;
  logger?: Logger;
  /** Informers' reconnect backoff clock (not a schedule's clock). */
  clock?: Clock;
  /** WATCH_NAMESPACE: the scope of requests that do not name their own; empty or unset: all. */
  namespaces?: readonly string[];
}

/** A write in flight through the caches that would hold its object (see the header). */
export interface CacheWrite {
  /** The API server's answer to the write. */
  written(obj: KubernetesObject): void;
  /** The object `uid` (default: the one cached) was deleted. */
  deleted(uid?: string): void;
  /** The write has answered or failed. */
  done(): void;
}

interface Shared {
  readonly informer: Informer<KubernetesObject>;
  readonly shape: 'full' | 'metadata';
  readonly resource: ResourceRef;
  readonly namespaces: readonly string[];
  readonly labelSelector: string;
  readonly fieldSelector: string;
}

export interface InformerRequest {
  /** Name in logs and readiness checks; the first request names a shared informer. */
  name?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resyncPeriodMs?: number;
  /** Watch only these namespaces (WATCH_NAMESPACE; see scopedTo); empty: all; unset: the factory's. */
  namespaces?: readonly string[];
  /**
   * The resource has no namespace (ClusterRoleBinding, Namespace, CRD): never scoped, whatever the
   * factory's WATCH_NAMESPACE (a namespaced path for it would be 404 for ever). The factory cannot ask
   * discovery here (requests are synchronous), so the caller, who knows the kind, says so.
   */
  clusterScoped?: boolean;
}

export class InformerFactory {
  readonly #opts: InformerFactoryOptions;
  readonly #informers = new Map<string, Shared>();

  constructor(opts: InformerFactoryOptions) {
    this.#opts = opts;
  }

  /** The informer for `resource` with these selectors, created on first request (not started). */
  informer<T extends KubernetesObject>(resource: ResourceRef, req: InformerRequest = {}): Informer<T> {
    return this.#shared('full', resource, req, (opts) => createInformer<T>(this.#opts.kc, resource, opts));
  }

  /** The metadata-only informer (PartialObjectMetadata, no content) for `resource` with these selectors. */
  metadataInformer(resource: ResourceRef, req: InformerRequest = {}): Informer<PartialObjectMetadata> {
    return this.#shared('metadata', resource, req, (opts) =>
      createMetadataInformer(this.#opts.kc, resource, opts),
    );
  }

  #shared<T extends KubernetesObject>(
    shape: 'full' | 'metadata',
    resource: ResourceRef,
    req: InformerRequest,
    create: (opts: KubeInformerOptions<T> & { client: KubeClient }) => Informer<T>,
  ): Informer<T> {
    const namespaces =
      resource.namespace || req.clusterScoped
        ? []
        : [...new Set(req.namespaces ?? this.#opts.namespaces ?? [])].sort();
    const id = JSON.stringify([
      shape,
      resource.group,
      resource.version,
      resource.plural,
      resource.namespace ?? '',
      namespaces,
      req.labelSelector ?? '',
      req.fieldSelector ?? '',
    ]);
    let shared = this.#informers.get(id);
    if (!shared) {
      const inf = create({
        client: this.#opts.client,
        ...(req.name ? { name: req.name } : {}),
        ...(req.labelSelector ? { labelSelector: req.labelSelector } : {}),
        ...(req.fieldSelector ? { fieldSelector: req.fieldSelector } : {}),
        ...(req.resyncPeriodMs ? { resyncPeriodMs: req.resyncPeriodMs } : {}),
        ...(namespaces.length ? { namespaces } : {}),
        ...(this.#opts.logger ? { logger: this.#opts.logger } : {}),
        ...(this.#opts.clock ? { clock: this.#opts.clock } : {}),
      }) as unknown as Informer<KubernetesObject>;
      shared = {
        informer: inf,
        shape,
        resource,
        namespaces,
        labelSelector: req.labelSelector ?? '',
        fieldSelector: req.fieldSelector ?? '',
      };
      this.#informers.set(id, shared);
    }
    return shared.informer as unknown as Informer<T>;
  }

  /** Every informer handed out so far (to register with the Manager). */
  get informers(): Informer<KubernetesObject>[] {
    return [...this.#informers.values()].map((s) => s.informer);
  }

  /**
   * Starts a write of `name` in `namespace` of `resource` through the caches that may hold it: call
   * before sending the request, then `written` or `deleted` with the answer, and `done` in any case.
   */
  writing(resource: Omit<ResourceRef, 'namespace'>, namespace: string | undefined, name: string): CacheWrite {
    const key = keyOf(namespace, name);
    const caches = [...this.#informers.values()].filter(
      (s) =>
        s.shape === 'full' &&
        s.fieldSelector === '' &&
        s.resource.group === resource.group &&
        s.resource.version === resource.version &&
        s.resource.plural === resource.plural &&
        (s.resource.namespace === undefined
          ? s.namespaces.length === 0 || s.namespaces.includes(namespace ?? '')
          : s.resource.namespace === namespace),
    );
    const ends = caches.map((s) => s.informer.beginWrite(key));
    return {
      written: (obj) => {
        for (const s of caches) {
          const selected = matchesLabelSelector(s.labelSelector, obj.metadata?.labels);
          if (selected === true) s.informer.recordWrite(obj);
          // No longer selected (the watch says DELETED): reads must not show what the cache still holds.
          else if (selected === false && s.informer.getByKey(key) !== undefined && obj.metadata?.uid)
            s.informer.recordDelete(key, obj.metadata.uid);
        }
      },
      deleted: (uid) => {
        for (const s of caches) {
          const gone = uid ?? s.informer.getByKey(key)?.metadata?.uid;
          if (gone) s.informer.recordDelete(key, gone);
        }
      },
      done: () => {
        for (const end of ends) end();
      },
    };
  }
}
