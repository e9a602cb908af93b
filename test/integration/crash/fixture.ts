// The world the crash-safety run operates on, in its own kwok cluster: the operator namespace, Velero's
// namespace, two target namespaces with ApplicationInstances backed by real Helm releases of the tiny
// chart (with PVCs), the runner ServiceAccount, the restic repository Secret and a WorkflowTemplate.
import { KubeConfig } from '@kubernetes/client-node';
import { type KubeClient, resourcePath } from '@vworkspace/runtime';
import { LABEL_HELM_INSTANCE } from '../../../operator/src/api/annotations.ts';
import { testClient } from '../../support/clients.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';
import { Api } from '../operation/support.ts';
import { BARE, CAPABILITIES, INSTANCES, REPO_SECRET, type Side, WORKFLOW_TEMPLATE } from './plan.ts';

export const OPERATOR_NAMESPACE = 'vworkspace-system';
export const VELERO_NAMESPACE = 'velero';
export const NAMESPACES: Record<Side, string> = { a: 'crash-a', b: 'crash-b' };

export interface World {
  kc: KubeConfig;
  client: KubeClient;
  api: Api;
}

export function connect(kubeconfigPath: string): World {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { kc, client: testClient(kc), api: new Api(kc) };
}

async function create(client: KubeClient, path: string, body: Record<string, unknown>): Promise<void> {
  await client.request({ method: 'POST', path, body });
}

export async function buildWorld(w: World, kubeconfigPath: string): Promise<void> {
  const { client, api } = w;
  for (const ns of [OPERATOR_NAMESPACE, VELERO_NAMESPACE, ...Object.values(NAMESPACES)]) {
    await create(client, '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns },
    });
  }
  for (const side of ['a', 'b'] as const) {
    const ns = NAMESPACES[side];
    await create(
      client,
      resourcePath({ group: '', version: 'v1', plural: 'serviceaccounts', namespace: ns }),
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'vworkspace-runner' },
      },
    );
    // One restic repository per claim (plan.ts resticRepository).
    const claims = Math.max(...Object.values(INSTANCES[side]));
    for (let i = 0; i < claims; i++) {
      const name = i === 0 ? REPO_SECRET : `${REPO_SECRET}-${i}`;
      await create(client, resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace: ns }), {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name },
        stringData: {
          RESTIC_REPOSITORY: `s3:http://minio.invalid/restic/${name}`,
          RESTIC_PASSWORD: 'not-a-secret',
        },
      });
    }
    await create(
      client,
      resourcePath({ group: 'argoproj.io', version: 'v1alpha1', plural: 'workflowtemplates', namespace: ns }),
      {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { name: WORKFLOW_TEMPLATE },
        spec: {
          entrypoint: 'main',
          arguments: { parameters: [{ name: 'who', value: 'world' }] },
          templates: [{ name: 'main', container: { image: 'busybox', command: ['echo', 'hello'] } }],
        },
      },
    );
    for (const [release, pvcs] of Object.entries(INSTANCES[side])) {
      // A real release record: the operator's instance controller derives Ready from it.
      await helm(kubeconfigPath, ['install', release, TINY_CHART, '-n', ns, '--set', 'persistence=true']);
      // The chart makes one PVC; more make the per-PVC engines create one child each.
      for (let i = 1; i < pvcs; i++) {
        await create(
          client,
          resourcePath({ group: '', version: 'v1', plural: 'persistentvolumeclaims', namespace: ns }),
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: `${release}-extra-${i}`, labels: { [LABEL_HELM_INSTANCE]: release } },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        );
      }
      await api.createInstance(ns, release, { ...CAPABILITIES });
    }
  }
  // No capability annotations: every Operation on it is CapabilityMissing.
  await api.createInstance(NAMESPACES.a, BARE, {});
}
