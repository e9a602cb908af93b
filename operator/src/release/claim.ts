// Which ApplicationInstance a Helm release belongs to. RBAC grants day-2 verbs per instance name, and the
// operator acts on the release the instance names: two instances naming one release would let whoever holds
// a verb on either act on the other's release (restore its backup selection, upgrade it from another chart).
// So a release is described by one instance of its namespace: the oldest that names it (creation time, then
// name, so every replica and every controller agrees). The webhook refuses a second one; these functions
// let the controllers refuse one that got past admission. Pure.
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { releaseRef } from './ref.ts';

function created(i: ApplicationInstance): number {
  const t = Date.parse(String(i.metadata.creationTimestamp ?? ''));
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/** Oldest first; equal creation times (a second's resolution) by name. */
function older(a: ApplicationInstance, b: ApplicationInstance): number {
  const name = (i: ApplicationInstance) => i.metadata.name ?? '';
  return created(a) - created(b) || (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0);
}

/**
 * The instance that describes `instance`'s release when it is another one (older, or as old with a name
 * that sorts first), else undefined: `instance` owns its release. `sameRelease` are the instances naming
 * the same release (an index lookup), `instance` itself may be among them.
 */
export function releaseClaimant(
  instance: ApplicationInstance,
  sameRelease: readonly ApplicationInstance[],
): ApplicationInstance | undefined {
  const ref = releaseRef(instance);
  const owner = sameRelease
    .filter((i) => {
      const r = releaseRef(i);
      return (
        r.name === ref.name && r.namespace === ref.namespace && i.metadata.name !== instance.metadata.name
      );
    })
    .concat([instance])
    .sort(older)[0];
  return owner && owner !== instance ? owner : undefined;
}

/** Why `instance` may not act on its release because `claimant` describes it; says what to do. */
export function releaseClaimedMessage(instance: ApplicationInstance, claimant: ApplicationInstance): string {
  const release = releaseRef(instance).name;
  return `Helm release ${release} is already described by ApplicationInstance ${claimant.metadata.name}, created before this one; an ApplicationInstance may only name a release no other instance of the namespace names, so nothing of the release is read or operated on through ${instance.metadata.name}. Set spec.release.name to this instance's own release, or delete this instance and operate on ${claimant.metadata.name}`;
}
