// The informer indexes the controllers read by, in one place because controllers share informers
// (InformerFactory) and an index name must mean one function. Each returns `namespace/value` keys, so
// one lookup answers "the Operations on this target" without scanning the namespace.

import type { KubernetesObject } from '@kubernetes/client-node';
import { findCondition, type Informer, keyOf } from '@vworkspace/runtime';
import type { ApplicationInstance } from './api/applicationinstance.ts';
import type { Operation } from './api/operation.ts';
import { CONDITION_READY } from './api/reasons.ts';
import { type SchedulerKind, schedulerOwner } from './api/scheduler-owner.ts';
import type { ReadyReason } from './release/helm-release.ts';
import { releaseRef } from './release/ref.ts';

type Index<T> = { name: string; fn: (obj: T) => string | readonly string[] | undefined };

/** Operations by `namespace/<uid>` of the scheduler of `kind` their controller ownerReference names. */
function ownerIndex(name: string, kind: SchedulerKind): Index<Operation> {
  return {
    name,
    fn: (o) => {
      const uid = schedulerOwner(o, kind)?.uid;
      return uid ? keyOf(o.metadata.namespace, uid) : undefined;
    },
  };
}

/** Operations by `namespace/targetRef.name`. */
export const OPERATIONS_BY_TARGET: Index<Operation> = {
  name: 'operations:target',
  fn: (o) => keyOf(o.metadata.namespace, o.spec.targetRef.name),
};

/**
 * Operations by `namespace/<CronOperation uid>` of their controller ownerReference: what the CronOperation
 * created, never what a label (which anyone who may edit an Operation sets) claims.
 */
export const OPERATIONS_BY_CRON = ownerIndex('operations:cron-owner', 'CronOperation');

/** Operations by `namespace/<WatchOperation uid>` of their controller ownerReference. */
export const OPERATIONS_BY_WATCH = ownerIndex('operations:watch-owner', 'WatchOperation');

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

/**
 * ApplicationInstances refused their release because another instance claims it (Ready reason
 * ReleaseClaimed), all under `namespace/ReleaseClaimed`: what an instance that changes or goes may free,
 * found without reading every instance of the namespace on every instance event.
 */
const RELEASE_CLAIMED: ReadyReason = 'ReleaseClaimed';
export const INSTANCES_REFUSED_A_RELEASE: Index<ApplicationInstance> = {
  name: 'applicationinstances:release-claimed',
  fn: (i) =>
    findCondition(i.status?.conditions, CONDITION_READY)?.reason === RELEASE_CLAIMED
      ? keyOf(i.metadata.namespace, RELEASE_CLAIMED)
      : undefined,
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
