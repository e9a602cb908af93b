// The operator's identity on least privilege for the integration tests: a ServiceAccount holding exactly
// the CSV's rules (cluster-wide, as OLM grants an AllNamespaces install), and profile ClusterRoles bound
// to it as docs/security/rbac.md tells a namespace owner.
import type { KubeConfig } from '@kubernetes/client-node';
import { PATCH_TYPES, resourcePath } from '@vworkspace/runtime';
import { profileClusterRole } from '../../../operator/src/rbac/clusterroles.ts';
import { OPERATOR_CLUSTER_RULES, OPERATOR_NAMESPACE_RULES } from '../../../operator/src/rbac/operator.ts';
import { profileClusterRoleName, rbacProfile } from '../../../operator/src/rbac/profiles.ts';
import type { Api } from './support.ts';

export async function apply(api: Api, path: string, body: unknown) {
  await api.client.request({
    method: 'PATCH',
    path,
    query: { fieldManager: 'operation-test', force: true },
    contentType: PATCH_TYPES.apply,
    body,
  });
}

/** A KubeConfig for a ServiceAccount (TokenRequest) bound to the operator's cluster-wide rules. */
export async function operatorIdentity(admin: KubeConfig, api: Api, ns: string): Promise<KubeConfig> {
  const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
  await apply(
    api,
    resourcePath({ group: '', version: 'v1', plural: 'serviceaccounts', namespace: ns }, 'operator'),
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'operator', namespace: ns },
    },
  );
  const role = `vworkspace-operator-test-${ns}`;
  await apply(api, resourcePath({ ...rbac, plural: 'clusterroles' }, role), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: role },
    // AllNamespaces, as OLM installs it: the CSV's permissions lifted to the cluster with its clusterPermissions.
    rules: [...OPERATOR_CLUSTER_RULES, ...OPERATOR_NAMESPACE_RULES].map((r) => ({
      apiGroups: r.apiGroups,
      resources: r.resources,
      verbs: r.verbs,
    })),
  });
  await apply(api, resourcePath({ ...rbac, plural: 'clusterrolebindings' }, role), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns }],
  });
  const tr = await api.client.request<{ status: { token: string } }>({
    method: 'POST',
    path: resourcePath(
      { group: '', version: 'v1', plural: 'serviceaccounts', namespace: ns },
      'operator',
      'token',
    ),
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  const cluster = admin.getCurrentCluster()!;
  const kc = new (admin.constructor as new () => KubeConfig)();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'operator', token: tr.status.token }],
    contexts: [{ name: 'operator', cluster: cluster.name, user: 'operator' }],
    currentContext: 'operator',
  });
  return kc;
}

/** Binds profile `id`'s ClusterRole (applied as generated) to the test operator of `operatorNs` in `ns`. */
export async function grant(api: Api, id: string, ns: string, operatorNs: string) {
  const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
  const name = profileClusterRoleName(id);
  await apply(
    api,
    resourcePath({ ...rbac, plural: 'clusterroles' }, name),
    profileClusterRole(rbacProfile(id)!),
  );
  await apply(api, resourcePath({ ...rbac, plural: 'rolebindings', namespace: ns }, name), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: operatorNs }],
  });
}
