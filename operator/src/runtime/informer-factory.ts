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

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from './clock.ts';
import { createInformer, type Informer, type KubeInformerOptions } from './informer.ts';
import type { KubeClient, ResourceRef } from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import type { Logger } from './logger.ts';
import { createMetadataInformer, type PartialObjectMetadata } from './metadata.ts';

export interface InformerFactoryOptions {
  kc: KubeConfigLike;
  client: KubeClient;
  logger?: Logger;
  /** Informers' reconnect backoff clock (not a schedule's clock). */
  clock?: Clock;
}

export interface InformerRequest {
  /** Name in logs and readiness checks; the first request names a shared informer. */
  name?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resyncPeriodMs?: number;
  /** Watch only these namespaces (WATCH_NAMESPACE; see scopedTo); empty or unset: all of them. */
  namespaces?: readonly string[];
}

export class InformerFactory {
  readonly #opts: InformerFactoryOptions;
  readonly #informers = new Map<string, Informer<KubernetesObject>>();

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
    const namespaces = resource.namespace ? [] : [...new Set(req.namespaces ?? [])].sort();
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
    let inf = this.#informers.get(id);
    if (!inf) {
      inf = create({
        client: this.#opts.client,
        ...(req.name ? { name: req.name } : {}),
        ...(req.labelSelector ? { labelSelector: req.labelSelector } : {}),
        ...(req.fieldSelector ? { fieldSelector: req.fieldSelector } : {}),
        ...(req.resyncPeriodMs ? { resyncPeriodMs: req.resyncPeriodMs } : {}),
        ...(namespaces.length ? { namespaces } : {}),
        ...(this.#opts.logger ? { logger: this.#opts.logger } : {}),
        ...(this.#opts.clock ? { clock: this.#opts.clock } : {}),
      }) as unknown as Informer<KubernetesObject>;
      this.#informers.set(id, inf);
    }
    return inf as unknown as Informer<T>;
  }

  /** Every informer handed out so far (to register with the Manager). */
  get informers(): Informer<KubernetesObject>[] {
    return [...this.#informers.values()];
  }
}
