// One informer per resource and selector for the whole process, like controller-runtime's shared
// cache: controllers that watch the same kind share one list+watch and one copy of every object
// (three ApplicationInstance caches were three times the memory and three watches on the API server).
// Each controller adds the indexes it reads by; index names are global per informer, so prefix them
// with the controller ("operation:target").
//
// The factory is also the one place where a scope for every informer belongs (e.g. a set of watched
// namespaces): controllers ask it for a kind and never build list/watch paths themselves.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from './clock.ts';
import { createInformer, type Informer, type InformerOptions } from './informer.ts';
import type { KubeClient, ResourceRef } from './kube-client.ts';
import type { Logger } from './logger.ts';

export interface InformerFactoryOptions {
  kc: KubeConfig;
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
}

export class InformerFactory {
  readonly #opts: InformerFactoryOptions;
  readonly #informers = new Map<string, Informer<KubernetesObject>>();

  constructor(opts: InformerFactoryOptions) {
    this.#opts = opts;
  }

  /** The informer for `resource` with these selectors, created on first request (not started). */
  informer<T extends KubernetesObject>(resource: ResourceRef, req: InformerRequest = {}): Informer<T> {
    const id = JSON.stringify([
      resource.group,
      resource.version,
      resource.plural,
      resource.namespace ?? '',
      req.labelSelector ?? '',
      req.fieldSelector ?? '',
    ]);
    let inf = this.#informers.get(id);
    if (!inf) {
      const opts: Omit<InformerOptions<T>, 'listerWatcher' | 'name'> & { name?: string; client: KubeClient } =
        {
          client: this.#opts.client,
          ...(req.name ? { name: req.name } : {}),
          ...(req.labelSelector ? { labelSelector: req.labelSelector } : {}),
          ...(req.fieldSelector ? { fieldSelector: req.fieldSelector } : {}),
          ...(req.resyncPeriodMs ? { resyncPeriodMs: req.resyncPeriodMs } : {}),
          ...(this.#opts.logger ? { logger: this.#opts.logger } : {}),
          ...(this.#opts.clock ? { clock: this.#opts.clock } : {}),
        };
      inf = createInformer<T>(this.#opts.kc, resource, opts) as unknown as Informer<KubernetesObject>;
      this.#informers.set(id, inf);
    }
    return inf as unknown as Informer<T>;
  }

  /** Every informer handed out so far (to register with the Manager). */
  get informers(): Informer<KubernetesObject>[] {
    return [...this.#informers.values()];
  }
}
