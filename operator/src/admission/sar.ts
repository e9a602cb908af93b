// SubjectAccessReview for the requester of an admission request: may THIS user do `verb` on an
// ApplicationInstance? The operator acts with its own identity, so without this check anyone allowed
// to create an Operation could make the operator restore any instance of the namespace (the confused
// deputy). The review carries the request's whole userInfo (user, groups, uid, extra), so
// impersonation, group grants and scoped tokens are judged exactly as the API server judged the request.
// Needs `create subjectaccessreviews` (authorization.k8s.io) in the operator's ClusterRole.

import type { KubeClient } from '@vworkspace/runtime';
import { APPS_GROUP, OPERATION, PLURAL_APPLICATION_INSTANCES } from '../api/constants.ts';
import type { AccessCache } from './access-cache.ts';
import type { AccessCheck, AccessResult, Lookup } from './decision.ts';
import type { UserInfo } from './review.ts';

export interface SubjectAccessReview {
  apiVersion: 'authorization.k8s.io/v1';
  kind: 'SubjectAccessReview';
  spec: {
    user?: string;
    groups?: string[];
    uid?: string;
    extra?: Record<string, string[]>;
    resourceAttributes: {
      namespace: string;
      verb: string;
      group: string;
      resource: string;
      name?: string;
    };
  };
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** The group and resource a check is about. */
export function accessResource(check: AccessCheck): { group: string; resource: string } {
  if (check.resource === 'operations') return { group: OPERATION.group, resource: OPERATION.plural };
  if (check.resource === 'deletebackuprequests') return { group: 'velero.io', resource: check.resource };
  if (check.resource === 'volumesnapshots')
    return { group: 'snapshot.storage.k8s.io', resource: check.resource };
  if (check.resource) return { group: '', resource: check.resource };
  return { group: APPS_GROUP, resource: PLURAL_APPLICATION_INSTANCES };
}

/**
 * A copy of userInfo.extra (a map of string lists from the API server). Each Operation request asks one
 * review per check, each with the requester's extra (the API server adds a credential id to every
 * request's), so a plain copy rather than structuredClone, which serialises; anything that is not a map
 * of lists is copied by structuredClone as before.
 */
function copyExtra(extra: Record<string, string[]>): Record<string, string[]> {
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) return structuredClone(extra);
  // fromEntries defines each key as its own property, `__proto__` included (an assignment would not).
  return Object.fromEntries(
    Object.entries(extra).map(([k, v]) => [k, Array.isArray(v) ? [...v] : structuredClone(v)]),
  );
}

/** The review for `check` by `user` in `namespace` (pure). */
export function subjectAccessReview(
  user: UserInfo,
  namespace: string,
  check: AccessCheck,
): SubjectAccessReview {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      ...(user.username !== undefined ? { user: user.username } : {}),
      ...(user.groups ? { groups: [...user.groups] } : {}),
      ...(user.uid !== undefined ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: copyExtra(user.extra) } : {}),
      resourceAttributes: {
        namespace: check.namespace ?? namespace,
        verb: check.verb,
        ...accessResource(check),
        ...(check.name !== undefined ? { name: check.name } : {}),
      },
    },
  };
}

/** Posts the review; a failed call is a transient Lookup failure (the request is then denied, never admitted). */
export async function reviewAccess(
  client: KubeClient,
  user: UserInfo,
  namespace: string,
  check: AccessCheck,
  cache?: AccessCache,
): Promise<Lookup<AccessResult>> {
  const review = subjectAccessReview(user, namespace, check);
  const key = cache ? JSON.stringify(review.spec) : '';
  const kept = cache?.get(key);
  if (kept) return { ok: true, value: kept };
  try {
    const res = await client.request<SubjectAccessReview>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: review,
      timeoutMs: 5_000,
    });
    const s = res?.status ?? {};
    // RBAC reports unresolvable role references as evaluationError next to a plain "no"; a "no" stays a
    // "no" (the RBAC authorizer never allows on error), with the error as the reason when there is no other.
    const reason = s.reason || s.evaluationError;
    const value: AccessResult = { allowed: s.allowed === true, ...(reason ? { reason } : {}) };
    cache?.remember(key, value);
    return { ok: true, value };
  } catch (err) {
    return {
      ok: false,
      message: `SubjectAccessReview failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}
