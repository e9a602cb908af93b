// A Helm release as the operator sees it, for the Operation controller's integration tests on the real API
// server: Helm's release record (labels only: the operator reads no more of it), the chart source the
// instance controller records, and the release's claim and Deployment. What Helm, the instance controller
// and the volume controllers would do, the test does as the admin.
import type { KubernetesObject } from '@kubernetes/client-node';
import { PATCH_TYPES } from '@vworkspace/runtime';
import { type Api, eventually } from './support.ts';

/** GET, POST and merge PATCH as the admin. */
export function requests(api: Api) {
  return {
    get: <T>(path: string) => api.client.request<T>({ method: 'GET', path }),
    post: (path: string, body: unknown) => api.client.request({ method: 'POST', path, body }),
    patch: (path: string, body: unknown) =>
      api.client.request({ method: 'PATCH', path, body, contentType: PATCH_TYPES.merge }),
  };
}

/** Revision `version` of release `release`'s record with `status` (deployed, superseded, failed, pending-…). */
export function releaseRecord(api: Api, ns: string, release: string, version: number, status: string) {
  return requests(api).post(`/api/v1/namespaces/${ns}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'helm.sh/release.v1',
    metadata: {
      name: `sh.helm.release.v1.${release}.v${version}`,
      labels: { owner: 'helm', name: release, version: String(version), status },
    },
    data: { release: Buffer.from('not read').toString('base64') },
  });
}

/** What the instance controller records from a deployed revision (ADR 0027); it does not run here. */
export async function recordChartSource(api: Api, ns: string, instance: string): Promise<void> {
  const { get, patch } = requests(api);
  const path = `/apis/apps.vworkspace.io/v1alpha1/namespaces/${ns}/applicationinstances/${instance}`;
  const { spec } = await get<{
    spec: { appRef: { chart: { sourceType: string; url: string; name: string } } };
  }>(path);
  const { sourceType, url, name } = spec.appRef.chart;
  await patch(`${path}/status`, { status: { release: { chartSource: { sourceType, url, name } } } });
}

/** The release's claim, labelled as the chart labels it, Bound with its capacity. */
export async function releaseClaim(api: Api, ns: string, name: string, release = 'app'): Promise<void> {
  await requests(api).post(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, labels: { 'app.kubernetes.io/instance': release } },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'csi',
      resources: { requests: { storage: '1Gi' } },
    },
  });
  await bindClaim(api, ns, name);
}

/** What the volume controller writes once a claim is bound. */
export function bindClaim(api: Api, ns: string, name: string) {
  return requests(api).patch(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}/status`, {
    status: { phase: 'Bound', capacity: { storage: '1Gi' } },
  });
}

/** The release's Deployment `app-db` (1 replica) mounting `claim`. */
export function releaseDeployment(api: Api, ns: string, claim: string, release = 'app') {
  return requests(api).post(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app-db', labels: { 'app.kubernetes.io/instance': release } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'db' } },
      template: {
        metadata: { labels: { app: 'db' } },
        spec: {
          containers: [{ name: 'db', image: 'db:1' }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
        },
      },
    },
  });
}

/**
 * What the pvc-protection controller does once a restore deleted claim `name` (`old`, the claim before it):
 * waits for that claim's deletion, then releases it (no pod mounts it any more).
 */
export async function releaseDeletedClaim(api: Api, ns: string, name: string, old: KubernetesObject) {
  const { get, patch } = requests(api);
  const path = `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`;
  const deleting = await eventually(
    'the old claim deleted',
    async () => {
      const c = await get<KubernetesObject>(path);
      return c.metadata?.deletionTimestamp && c.metadata.uid === old.metadata?.uid ? c : undefined;
    },
    60_000,
  );
  await patch(path, { metadata: { finalizers: null, resourceVersion: deleting.metadata?.resourceVersion } });
}
