// Short-lived pods for the engine journeys: run a shell script with a PVC mounted at /data (read what
// a restore put there, or change it) and return its log.
import { randomBytes } from 'node:crypto';
import { podSummary } from '../../../hack/lib/engines/workloads.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { deleteIfExists } from '../../../hack/lib/real-node.ts';
import { eventually } from '../../support/eventually.ts';

/**
 * Runs `script` (busybox sh) in a pod of `namespace` with the claim `pvc` at /data, waits for it to
 * end, and returns its log; a failing script throws with the log. The pod is removed afterwards.
 */
export async function runWithVolume(
  node: RealNode,
  namespace: string,
  pvc: string,
  script: string,
): Promise<string> {
  const name = `vol-${randomBytes(3).toString('hex')}`;
  const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
  await node.client.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/pods`,
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { 'app.kubernetes.io/part-of': 'vws-e2e' } },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 0,
        enableServiceLinks: false,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'sh',
            image: node.images.busybox,
            command: ['sh', '-c', script],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: pvc } }],
      },
    },
  });
  try {
    const phase = await eventually(
      `pod ${namespace}/${name} (${script}) finished`,
      async () => {
        const pod = await node.client.request<{ status?: { phase?: string } }>({ method: 'GET', path });
        return ['Succeeded', 'Failed'].includes(pod.status?.phase ?? '') ? pod.status?.phase : undefined;
      },
      180_000,
      250,
    ).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n${await podSummary(node.client, namespace, 'app.kubernetes.io/part-of=vws-e2e')}`,
      );
    });
    const log = String(await node.client.request<unknown>({ method: 'GET', path: `${path}/log` }));
    if (phase !== 'Succeeded') throw new Error(`pod ${namespace}/${name} failed running ${script}:\n${log}`);
    return log;
  } finally {
    await deleteIfExists(node.client, path);
  }
}
