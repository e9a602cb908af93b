// The kwok cluster harness: real controller-manager and scheduler with kwok as the kubelet, so a
// Job runs to completion without any container runtime.
import { BatchV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCrdFiles } from '../../../hack/lib/controlplane.ts';
import { type KwokCluster, startKwokCluster } from '../../../hack/lib/kwok-cluster.ts';

describe('kwok cluster (binary runtime, local binaries)', () => {
  let cluster: KwokCluster;
  let kc: KubeConfig;

  beforeAll(async () => {
    cluster = await startKwokCluster({ crdFiles: defaultCrdFiles() });
    kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('has a Ready node and the project and upstream CRDs', async () => {
    const nodes = await kc.makeApiClient(CoreV1Api).listNode();
    expect(nodes.items.map((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status)).toEqual([
      'True',
    ]);
  });

  it('runs a Job to completion (controller-manager + scheduler + kwok)', async () => {
    const batch = kc.makeApiClient(BatchV1Api);
    const ns = 'default';
    await kc
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } })
      .catch(() => undefined); // the controller-manager may have created it already
    await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'hello' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'c', image: 'busybox', command: ['true'] }],
            },
          },
        },
      },
    });
    let complete: string | undefined;
    for (let i = 0; i < 120 && !complete; i++) {
      const job = await batch.readNamespacedJob({ name: 'hello', namespace: ns });
      complete = job.status?.conditions?.find((c) => c.type === 'Complete' && c.status === 'True')?.type;
      if (!complete) await new Promise((r) => setTimeout(r, 500));
    }
    expect(complete).toBe('Complete');
  });
});
