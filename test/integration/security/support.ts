// Shared steps of the security tests: what the operator made of an Operation (its settled state and the
// children it created, read as the admin: the tenant's own view does not matter for the verdict), and the
// bait a hostile tenant reaches for.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { KubeApiError, type RestClient } from '../../../operator/src/runtime/index.ts';
import { TINY_APP_REF } from '../../support/helm.ts';
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
  const list = await w.waitFor(`the list of ${path}`, async () => {
    try {
      return await w.admin.request<{ items?: KubernetesObject[] }>({
        method: 'GET',
        path,
        query: { labelSelector: `ops.vworkspace.io/operation=${name}` },
      });
    } catch (err) {
      // The API server's watch cache for the kind is (re)initializing: it answers 429, try again.
      if (err instanceof KubeApiError && err.code === 429) return undefined;
      throw err;
    }
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

const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const WORLD_LABEL = 'vws-security-world';

/**
 * POSTs an ApplicationInstance of the tiny chart as `client` (a tenant, by impersonation): `release` is its
 * spec.release, `chart` replaces fields of spec.appRef.chart, `annotations` its metadata's.
 */
export function createInstance(
  client: RestClient,
  namespace: string,
  name: string,
  release: Record<string, string>,
  opts: { chart?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<unknown> {
  return client.request({
    method: 'POST',
    path: `${APPS}/namespaces/${namespace}/applicationinstances`,
    body: {
      apiVersion: 'apps.vworkspace.io/v1alpha1',
      kind: 'ApplicationInstance',
      metadata: { name, ...(opts.annotations ? { annotations: opts.annotations } : {}) },
      spec: { appRef: { ...TINY_APP_REF, chart: { ...TINY_APP_REF.chart, ...opts.chart } }, release },
    },
  });
}

/** An ApplicationInstance as the admin reads it. */
export function getInstance(w: World, namespace: string, name: string): Promise<ApplicationInstance> {
  return w.admin.request<ApplicationInstance>({
    method: 'GET',
    path: `${APPS}/namespaces/${namespace}/applicationinstances/${name}`,
  });
}

/** Waits until the instance's Ready condition has `reason`, and returns the instance. */
export function instanceWithReady(
  w: World,
  namespace: string,
  name: string,
  reason: string,
  timeoutMs?: number,
): Promise<ApplicationInstance> {
  return w.waitFor(
    `ApplicationInstance ${namespace}/${name} to be Ready=…/${reason}`,
    async () => {
      const i = await getInstance(w, namespace, name);
      return i.status?.conditions?.find((c) => c.type === 'Ready')?.reason === reason ? i : undefined;
    },
    timeoutMs,
  );
}

/**
 * Runs `write` (as the admin) while the world's webhooks do not judge `namespace`: what a cluster holds
 * from before the webhooks were registered, or from a namespace they do not select. The API server picks
 * webhooks by its namespace cache, which sees the label go a moment later: `write` is retried while the
 * webhook still refuses it (`refusedBy` matches the refusal).
 */
export async function withoutWebhooks(
  w: World,
  namespace: string,
  refusedBy: RegExp,
  write: () => Promise<unknown>,
): Promise<void> {
  const label = (value: string | null) =>
    w.admin.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${namespace}`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { [WORLD_LABEL]: value } } },
    });
  await label(null);
  try {
    await w.waitFor('the write to be admitted unjudged', async () => {
      try {
        await write();
        return true;
      } catch (err) {
        if (refusedBy.test(String(err))) return undefined;
        throw err;
      }
    });
  } finally {
    await label(w.id);
  }
}
