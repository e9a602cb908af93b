// The informer indexes the controllers read by, in one place because controllers share informers
// (InformerFactory) and an index name must mean one function. Each returns `namespace/value` keys, so
// one lookup answers "the Operations on this target" without scanning the namespace.

import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_CRON_OPERATION, LABEL_WATCH_OPERATION } from './api/annotations.ts';
import type { ApplicationInstance } from './api/applicationinstance.ts';
import type { Operation } from './api/operation.ts';
import { releaseRef } from './instance/status.ts';
import { type Informer, keyOf } from './runtime/index.ts';

type Index<T> = { name: string; fn: (obj: T) => string | readonly string[] | undefined };

function labelIndex(name: string, label: string): Index<Operation> {
  return {
    name,
    fn: (o) => {
      const v = o.metadata.labels?.[label];
      return v ? keyOf(o.metadata.namespace, v) : undefined;
    },
  };
}

/** Operations by `namespace/targetRef.name`. */
export const OPERATIONS_BY_TARGET: Index<Operation> = {
  name: 'operations:target',
  fn: (o) => keyOf(o.metadata.namespace, o.spec.targetRef.name),
};

/** Operations by `namespace/<CronOperation>` (the ops.vworkspace.io/cron-operation label). */
export const OPERATIONS_BY_CRON = labelIndex('operations:cron-operation', LABEL_CRON_OPERATION);

/** Operations by `namespace/<WatchOperation>` (the ops.vworkspace.io/watch-operation label). */
export const OPERATIONS_BY_WATCH = labelIndex('operations:watch-operation', LABEL_WATCH_OPERATION);

/** Operations by `namespace/<Operation>` of each Operation their spec.parametersFrom reads (operationRef). */
export const OPERATIONS_BY_PARAMETER_SOURCE: Index<Operation> = {
  name: 'operations:parameters-from',
  fn: (o) =>
    (o.spec.parametersFrom ?? []).flatMap((p) =>
      p.operationRef?.name ? [keyOf(o.metadata.namespace, p.operationRef.name)] : [],
    ),
};

/** ApplicationInstances by the `namespace/name` of the Helm release they describe. */
export const INSTANCES_BY_RELEASE: Index<ApplicationInstance> = {
  name: 'applicationinstances:release',
  fn: (i) => {
    const ref = releaseRef(i);
    return keyOf(ref.namespace, ref.name);
  },
};

/** Helm release Secrets by `namespace/<release name>` (Helm's `name` label). */
export const HELM_SECRETS_BY_RELEASE: Index<KubernetesObject> = {
  name: 'secrets:helm-release',
  fn: (s) => {
    const release = s.metadata?.labels?.name;
    return release && s.metadata?.namespace ? keyOf(s.metadata.namespace, release) : undefined;
  },
};

/** Adds `index` to `informer` (a no-op when a sharing controller added it already); returns the lookup. */
export function indexed<T extends KubernetesObject>(
  informer: Informer<T>,
  index: Index<T>,
): (namespace: string | undefined, value: string) => T[] {
  informer.addIndexer(index.name, index.fn);
  return (namespace, value) => informer.byIndex(index.name, keyOf(namespace, value));
}
