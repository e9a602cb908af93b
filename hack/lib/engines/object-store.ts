// The engines' S3-compatible object store on a real node: MinIO's server (built by hack/build-tools.sh
// object-store, image from hack/images/engines/object-store.ts) as one pod with a Service, its data in
// an emptyDir (the store lives as long as the node). The root credentials are random per node, held in
// a Secret and in memory, never logged. Engines create their own buckets with bucket(); tests read what
// landed there with list(), over S3 from this process (the Service's ClusterIP is reachable from the
// host through kube-proxy's rules).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { minioImage } from '../../images/engines/object-store.ts';
import type { RealNode } from '../real-node.ts';
import { createBucket, listKeys, type S3Credentials } from './s3.ts';
import { applyAll, type Obj, perNode, pushImages, waitReady } from './workloads.ts';

export interface ObjectStore {
  namespace: string;
  /** In-cluster URL, e.g. http://minio.object-store.svc.cluster.local:9000 (path-style S3). */
  serviceUrl: string;
  /** The same store from this process: http://<ClusterIP>:9000. */
  hostUrl: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** Creates a bucket (one that exists already is fine). */
  bucket(name: string): Promise<void>;
  /** Keys in `bucket` under `prefix`, sorted. */
  list(bucket: string, prefix?: string): Promise<string[]>;
}

export const OBJECT_STORE_NAMESPACE = 'object-store';
export const OBJECT_STORE_REGION = 'us-east-1';
const NAME = 'minio';
const PORT = 9000;
const CREDENTIALS_SECRET = 'minio-root';

/** MinIO's namespace, root credentials Secret, Deployment and Service. Pure. */
export function objectStoreObjects(opts: {
  namespace: string;
  image: string;
  accessKey: string;
  secretKey: string;
  region: string;
}): Obj[] {
  const { namespace } = opts;
  const labels = { 'app.kubernetes.io/name': NAME, 'app.kubernetes.io/part-of': 'vws-engines' };
  const fromSecret = (key: string) => ({ secretKeyRef: { name: CREDENTIALS_SECRET, key } });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: CREDENTIALS_SECRET, namespace, labels },
      type: 'Opaque',
      stringData: { accessKey: opts.accessKey, secretKey: opts.secretKey },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: NAME, namespace, labels },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            enableServiceLinks: false,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: NAME,
                image: opts.image,
                args: ['server', '/data', '--address', `:${PORT}`, '--quiet', '--anonymous'],
                env: [
                  { name: 'MINIO_ROOT_USER', valueFrom: fromSecret('accessKey') },
                  { name: 'MINIO_ROOT_PASSWORD', valueFrom: fromSecret('secretKey') },
                  { name: 'MINIO_REGION', value: opts.region },
                  // No update checks, telemetry or web console: nothing here reaches the internet.
                  { name: 'MINIO_BROWSER', value: 'off' },
                  { name: 'MINIO_UPDATE', value: 'off' },
                ],
                ports: [{ name: 's3', containerPort: PORT }],
                readinessProbe: { httpGet: { path: '/minio/health/ready', port: PORT }, periodSeconds: 2 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'data', mountPath: '/data' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'data', emptyDir: {} },
              { name: 'tmp', emptyDir: {} },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: NAME, namespace, labels },
      spec: { selector: labels, ports: [{ name: 's3', port: PORT, targetPort: PORT }] },
    },
  ];
}

async function waitReachable(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // What answered, not only its status: a 404 here once came from something that was not this MinIO.
    const status = await fetch(url).then(
      async (r) =>
        r.status === 200
          ? '200'
          : `${r.status} from ${r.headers.get('server') ?? 'a server that names itself not'}: ${(await r.text()).slice(0, 200)}`,
      (err: unknown) => String((err as { cause?: { code?: string } }).cause?.code ?? err),
    );
    if (status === '200') return;
    if (Date.now() > deadline)
      throw new Error(`${url} not reachable within ${timeoutMs / 1000} s: ${status}`);
    await sleep(250);
  }
}

const credentials = new WeakMap<RealNode, S3Credentials>();

export const ensureObjectStore: (node: RealNode) => Promise<ObjectStore> = perNode(async (node) => {
  const namespace = OBJECT_STORE_NAMESPACE;
  const img = minioImage(node.registryPrefix);
  pushImages(node, [img]);
  // One set per node: when a first install fails and a later journey installs again, the MinIO still
  // running from the first answers with the credentials the second one uses.
  let creds = credentials.get(node);
  if (!creds) {
    creds = {
      accessKey: `vws${randomBytes(6).toString('hex')}`,
      secretKey: randomBytes(24).toString('base64url'),
      region: OBJECT_STORE_REGION,
    };
    credentials.set(node, creds);
  }
  await applyAll(
    node.client,
    objectStoreObjects({ namespace, image: img.ref, ...creds }),
    'vws-object-store',
  );
  await waitReady(node.client, 'Deployment', namespace, NAME);
  const svc = await node.client.request<{ spec?: { clusterIP?: string } }>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/services/${NAME}`,
  });
  const hostUrl = `http://${svc.spec?.clusterIP}:${PORT}`;
  // Ready pod, but kube-proxy may not have its endpoint in the rules yet (it rejects until then).
  await waitReachable(`${hostUrl}/minio/health/ready`);
  return {
    namespace,
    serviceUrl: `http://${NAME}.${namespace}.svc.cluster.local:${PORT}`,
    hostUrl,
    ...creds,
    bucket: (name) => createBucket(hostUrl, creds, name),
    list: (bucket, prefix) => listKeys(hostUrl, creds, bucket, prefix),
  };
});
