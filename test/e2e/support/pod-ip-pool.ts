// kwok gives pod IPs from a pool per CIDR that it creates on first use with a load-then-store and no
// lock (kwok v0.8.0, pkg/kwok/controllers/pod_controller.go, ipPool). Pods that get their first
// addresses at the same moment can each make a new pool and get the same address: OLM's first
// install starts several Deployments at once, two operator "Pods" got the CIDR's .1 and the second
// host process could not listen on it (EADDRINUSE). One Pod given an address before anything else
// makes the pool once; every later Pod draws from it.
import { type KubeClient, resourcePath } from '@vworkspace/runtime';
import { eventually } from '../../support/eventually.ts';

const PODS = { group: '', version: 'v1', plural: 'pods', namespace: 'default' };
const NAME = 'vws-pod-ip-pool';

interface Pod {
  status?: { podIP?: string };
}

/** Runs one Pod on the first node until kwok gives it an address, then deletes it. Returns the address. */
export async function warmPodIpPool(client: KubeClient): Promise<string> {
  const nodes = await client.request<{ items: { metadata: { name: string } }[] }>({
    method: 'GET',
    path: '/api/v1/nodes',
  });
  const node = nodes.items[0]?.metadata.name;
  if (!node) throw new Error('the kwok cluster has no node to run the pod-IP warm-up Pod on');
  // The API server refuses a Pod whose ServiceAccount does not exist, and kube-controller-manager makes
  // the namespace's "default" one a moment after the cluster is up.
  await eventually(
    'ServiceAccount default/default (made by kube-controller-manager)',
    () =>
      client.request({
        method: 'GET',
        path: resourcePath({ ...PODS, plural: 'serviceaccounts' }, 'default'),
      }),
    60_000,
    200,
  );
  await client.request({
    method: 'POST',
    path: resourcePath(PODS),
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: NAME },
      spec: {
        nodeName: node,
        tolerations: [{ operator: 'Exists' }],
        containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }],
      },
    },
  });
  const ip = await eventually(
    `kwok to give Pod default/${NAME} an address`,
    async () => (await client.request<Pod>({ method: 'GET', path: resourcePath(PODS, NAME) })).status?.podIP,
    60_000,
    200,
  );
  await client.request({
    method: 'DELETE',
    path: resourcePath(PODS, NAME),
    body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
  });
  return ip;
}
