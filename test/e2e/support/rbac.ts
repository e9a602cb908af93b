// RBAC questions and grants the journeys ask and make as the cluster admin: SubjectAccessReviews for
// the operator's ServiceAccount, and profile RoleBindings as docs/install.md tells namespace owners.

import type { KubeClient } from '@vworkspace/runtime';
import { profileClusterRoleName } from '../../../operator/src/rbac/profiles.ts';

export interface Access {
  namespace?: string;
  group: string;
  resource: string;
  verb: string;
}

/** Whether ServiceAccount `ns/name` may do `a` (SubjectAccessReview, as the API server decides). */
export async function serviceAccountCan(
  client: KubeClient,
  ns: string,
  name: string,
  a: Access,
): Promise<boolean> {
  const review = await client.request<{ status?: { allowed?: boolean } }>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${ns}:${name}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
        resourceAttributes: { ...a, ...(a.namespace ? {} : { namespace: '' }) },
      },
    },
  });
  return review.status?.allowed === true;
}

/** Grants an RBAC profile in `namespace`: one RoleBinding of its ClusterRole to the ServiceAccount. */
export async function grantProfile(
  client: KubeClient,
  profile: string,
  namespace: string,
  sa: { namespace: string; name: string },
): Promise<string> {
  const role = profileClusterRoleName(profile);
  await client.request({
    method: 'POST',
    path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: role, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace }],
    },
  });
  return role;
}
