// Which Helm release an ApplicationInstance describes: spec.release, in the instance's own namespace
// when spec.release.namespace is empty. Read by the instance's status, the Operation controller and the
// cache index by release, so it lives below all of them.
import type { ApplicationInstance } from '../api/applicationinstance.ts';

/** Where the instance's release lives: spec.release.namespace, defaulting to the instance's own. */
export function releaseRef(instance: ApplicationInstance): { name: string; namespace: string } {
  return {
    name: instance.spec.release.name,
    namespace: instance.spec.release.namespace || (instance.metadata.namespace ?? ''),
  };
}
