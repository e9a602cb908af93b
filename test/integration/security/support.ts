// Shared steps of the security tests: what the operator made of an Operation (its settled state and the
// children it created, read as the admin: the tenant's own view does not matter for the verdict), and the
// bait a hostile tenant reaches for.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Operation } from '../../../operator/src/api/operation.ts';
import type { World } from './harness.ts';

export interface Outcome {
  op: Operation;
  accepted?: { status: string; reason: string; message: string };
  succeeded?: { status: string; reason: string; message: string };
}

/** Waits until the Operation left Pending/Blocked (it runs, or it ended) and returns its conditions. */
export async function settled(w: World, namespace: string, name: string): Promise<Outcome> {
  const op = await w.waitFor(`Operation ${namespace}/${name} to run or end`, async () => {
    const o = await w.getOperation(namespace, name);
    return ['Running', 'Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? '') ? o : undefined;
  });
  const cond = (type: string) => op.status?.conditions?.find((c) => c.type === type);
  const accepted = cond('Accepted');
  const succeeded = cond('Succeeded');
  return { op, ...(accepted ? { accepted } : {}), ...(succeeded ? { succeeded } : {}) };
}

/** Objects of `path` (a collection) labelled as children of the Operation `name`. */
export async function childrenOf(w: World, path: string, name: string): Promise<KubernetesObject[]> {
  const list = await w.admin.request<{ items?: KubernetesObject[] }>({
    method: 'GET',
    path,
    query: { labelSelector: `ops.vworkspace.io/operation=${name}` },
  });
  return list.items ?? [];
}

/** Jobs of the namespace, by collection path. */
export const jobsIn = (namespace: string) => `/apis/batch/v1/namespaces/${namespace}/jobs`;

/** A ServiceAccount of `namespace` bound to cluster-admin there: what a tenant must never run as through the operator. */
export async function adminServiceAccount(w: World, namespace: string, name: string): Promise<void> {
  await w.admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
  });
  await w.grantClusterRole(`system:serviceaccount:${namespace}:${name}`, namespace, 'cluster-admin');
}

/**
 * Plays Velero: the velero.io child of Operation `name` (in `collection`, a path) completes — velero.io
 * kinds have no status subresource — and the Operation succeeds. Returns the child.
 */
export async function completeVeleroChild(
  w: World,
  collection: string,
  namespace: string,
  name: string,
): Promise<KubernetesObject> {
  await settled(w, namespace, name);
  const [child] = await childrenOf(w, collection, name);
  await w.admin.request({
    method: 'PATCH',
    path: `${collection}/${child!.metadata!.name}`,
    contentType: 'application/merge-patch+json',
    body: { status: { phase: 'Completed', completionTimestamp: new Date().toISOString() } },
  });
  await w.waitFor(`Operation ${name} to succeed`, async () => {
    const o = await w.getOperation(namespace, name);
    return o.status?.phase === 'Succeeded';
  });
  return child!;
}
