// When each object was first seen by a watch of the bench's own: the moment a run "exists" for both
// sides alike (operator's Operations and the peer's Jobs are timed by the same clock and the same
// watch path, so its delivery delay cancels out in the comparison).
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { createInformer, type Informer, type RestClient } from '@vworkspace/runtime';

export class Recorder<T extends KubernetesObject = KubernetesObject> {
  readonly seen = new Map<string, { at: number; obj: T }>();
  readonly informer: Informer<T>;

  constructor(
    kc: KubeConfig,
    client: RestClient,
    resource: { group: string; version: string; plural: string; namespace?: string },
    labelSelector?: string,
  ) {
    this.informer = createInformer<T>(kc, resource, { client, ...(labelSelector ? { labelSelector } : {}) });
    this.informer.addEventHandler({
      add: (o) => {
        const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
        if (!this.seen.has(key)) this.seen.set(key, { at: Date.now(), obj: o });
      },
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }
}
