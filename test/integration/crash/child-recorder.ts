// Every engine child that ever existed during the run, seen through watches from the test process
// (list + watch from before the first Operation): a child created and deleted between two looks at
// the API server is still counted, so "no child for an Operation whose preconditions never passed"
// and "no duplicate child" are checked against history, not just the final state.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { createInformer, type Informer, type ResourceRef } from '@vworkspace/runtime';
import {
  ANNOTATION_ATTEMPT,
  ANNOTATION_PVC,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
} from '../../../operator/src/api/annotations.ts';

/** The kinds an engine child can be, with the kind name used in summaries. */
export const CHILD_KINDS: readonly (ResourceRef & { kind: string })[] = [
  { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job' },
  { group: 'velero.io', version: 'v1', plural: 'backups', kind: 'Backup' },
  { group: 'velero.io', version: 'v1', plural: 'restores', kind: 'Restore' },
  { group: 'argoproj.io', version: 'v1alpha1', plural: 'workflows', kind: 'Workflow' },
  { group: 'snapshot.storage.k8s.io', version: 'v1', plural: 'volumesnapshots', kind: 'VolumeSnapshot' },
  { group: 'volsync.backube', version: 'v1alpha1', plural: 'replicationsources', kind: 'ReplicationSource' },
  {
    group: 'volsync.backube',
    version: 'v1alpha1',
    plural: 'replicationdestinations',
    kind: 'ReplicationDestination',
  },
];

export interface SeenChild {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  /** `<namespace>/<name>` of the Operation (labels). */
  operation: string;
  attempt: string | undefined;
  pvc: string | undefined;
  /** ms since the epoch (the API server's clock, second precision). */
  created: number;
  deleted: boolean;
}

export class ChildRecorder {
  readonly #informers: Informer<KubernetesObject>[] = [];
  /** By uid. */
  readonly seen = new Map<string, SeenChild>();

  constructor(kc: KubeConfig) {
    for (const k of CHILD_KINDS) {
      const informer = createInformer<KubernetesObject>(kc, k, {
        name: `recorder-${k.plural}`,
        labelSelector: LABEL_OPERATION,
      });
      informer.addEventHandler({
        add: (o) => this.#record(k.kind, o, false),
        update: (_, o) => this.#record(k.kind, o, false),
        delete: (o) => this.#record(k.kind, o, true),
      });
      this.#informers.push(informer);
    }
  }

  async start(): Promise<void> {
    for (const i of this.#informers) i.start();
    for (const i of this.#informers) {
      if (!(await i.waitForSync(AbortSignal.timeout(60_000))))
        throw new Error(`child recorder ${i.name} did not sync`);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  #record(kind: string, o: KubernetesObject, deleted: boolean): void {
    const m = o.metadata ?? {};
    const uid = m.uid ?? '';
    const prev = this.seen.get(uid);
    this.seen.set(uid, {
      kind,
      namespace: m.namespace ?? '',
      name: m.name ?? '',
      uid,
      operation: `${m.labels?.[LABEL_OPERATION_NAMESPACE] ?? m.namespace}/${m.labels?.[LABEL_OPERATION]}`,
      attempt: m.annotations?.[ANNOTATION_ATTEMPT],
      pvc: m.annotations?.[ANNOTATION_PVC],
      created: Date.parse(String(m.creationTimestamp)),
      deleted: deleted || (prev?.deleted ?? false),
    });
  }

  /** Children per Operation key `<namespace>/<name>`. */
  byOperation(): Map<string, SeenChild[]> {
    const out = new Map<string, SeenChild[]>();
    for (const c of this.seen.values()) {
      const list = out.get(c.operation) ?? [];
      list.push(c);
      out.set(c.operation, list);
    }
    return out;
  }
}
