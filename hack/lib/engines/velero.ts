// Velero on a real node, shaped like `velero install --use-node-agent --plugins <aws plugin>`: all of
// Velero's CRDs from its pinned module, the server Deployment (named `velero`: Velero reads its own
// Deployment for the restore helper's image) with the AWS plugin copied into /plugins by an init
// container, the node-agent DaemonSet for File System Backup with kopia, reading pod volumes from the
// kubelet's root directory, and the default BackupStorageLocation in a bucket of the shared object
// store (hack/lib/engines/object-store.ts). Images from hack/images/engines/velero.ts.
//
// Velero runs with cluster-admin, as upstream installs it: it reads and writes any namespace's objects
// on behalf of Backups and Restores. The object store's credentials live only in the Secret
// `cloud-credentials` (an AWS shared credentials file), mounted at /credentials.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AWS_PLUGIN, PLUGIN_TARGET, veleroImages } from '../../images/engines/velero.ts';
import { pinned } from '../../images/node-images.ts';
import { installCrds } from '../crds.ts';
import type { RealNode } from '../real-node.ts';
import { type NodeLayout, paths } from '../real-node-config.ts';
import { ensureObjectStore, type ObjectStore } from './object-store.ts';
import { applyAll, type Obj, perNode, podSummary, pushImages, waitReady } from './workloads.ts';

export const VELERO_NAMESPACE = 'velero';
export const VELERO_BUCKET = 'velero';
export const BSL_NAME = 'default';
const CREDENTIALS = 'cloud-credentials';
const VELERO_API = 'velero.io/v1';

export interface Velero {
  namespace: string;
  bucket: string;
  store: ObjectStore;
}

/** The kubelet's root directory on the node (its pods' volumes are below `<root>/pods`). */
export function kubeletRootOf(nodeWorkdir: string): string {
  return paths({ dir: nodeWorkdir } as NodeLayout).kubeletRoot;
}

/** Velero's CRD files in its module (v1 and v2alpha1), downloaded by `go mod download` at the pin. */
export function veleroCrdFiles(): string[] {
  const version = pinned('VELERO_VERSION');
  const out = execFileSync('go', ['mod', 'download', '-json', `github.com/vmware-tanzu/velero@${version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
  });
  const dir = (JSON.parse(out) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download github.com/vmware-tanzu/velero@${version} gave no directory`);
  return ['v1', 'v2alpha1'].flatMap((v) => {
    const bases = join(dir, 'config/crd', v, 'bases');
    return readdirSync(bases)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => join(bases, f));
  });
}

/** The AWS shared credentials file Velero and its plugin read (AWS_SHARED_CREDENTIALS_FILE). Pure. */
export function awsCredentialsFile(accessKey: string, secretKey: string): string {
  return `[default]\naws_access_key_id=${accessKey}\naws_secret_access_key=${secretKey}\n`;
}

const credentialEnv = [
  { name: 'AWS_SHARED_CREDENTIALS_FILE', value: '/credentials/cloud' },
  { name: 'VELERO_SCRATCH_DIR', value: '/scratch' },
  { name: 'VELERO_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
];
const credentialVolume = { name: CREDENTIALS, secret: { secretName: CREDENTIALS, defaultMode: 0o444 } };
const credentialMount = { name: CREDENTIALS, mountPath: '/credentials' };

/**
 * Velero's namespace, identity, credentials, server, node-agent and BackupStorageLocation. Pure.
 * `kubeletRoot` is the node's kubelet root directory; `s3Url` the in-cluster URL of the object store.
 */
export function veleroObjects(opts: {
  namespace: string;
  veleroImage: string;
  pluginImage: string;
  kubeletRoot: string;
  s3Url: string;
  region: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
}): Obj[] {
  const ns = opts.namespace;
  const labels = { component: 'velero' };
  const serverLabels = { ...labels, deploy: 'velero' };
  const agentLabels = { ...labels, name: 'node-agent', role: 'node-agent' };
  const hostToContainer = 'HostToContainer';
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'velero', namespace: ns, labels } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `velero-${ns}`, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'velero', namespace: ns }],
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: CREDENTIALS, namespace: ns, labels },
      type: 'Opaque',
      stringData: { cloud: awsCredentialsFile(opts.accessKey, opts.secretKey) },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'velero', namespace: ns, labels },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { deploy: 'velero' } },
        template: {
          metadata: { labels: serverLabels },
          spec: {
            serviceAccountName: 'velero',
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 5,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            initContainers: [
              {
                name: AWS_PLUGIN,
                image: opts.pluginImage,
                imagePullPolicy: 'IfNotPresent',
                volumeMounts: [{ name: 'plugins', mountPath: PLUGIN_TARGET }],
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              },
            ],
            containers: [
              {
                name: 'velero',
                image: opts.veleroImage,
                imagePullPolicy: 'IfNotPresent',
                command: ['/velero'],
                args: [
                  'server',
                  '--uploader-type=kopia',
                  // The journeys' repositories live as long as the node: no maintenance Jobs meanwhile.
                  '--default-repo-maintain-frequency=168h',
                  '--log-level=info',
                ],
                ports: [{ name: 'metrics', containerPort: 8085 }],
                env: [...credentialEnv, { name: 'LD_LIBRARY_PATH', value: '/plugins' }],
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                volumeMounts: [
                  { name: 'plugins', mountPath: '/plugins' },
                  { name: 'scratch', mountPath: '/scratch' },
                  credentialMount,
                ],
              },
            ],
            volumes: [{ name: 'plugins', emptyDir: {} }, { name: 'scratch', emptyDir: {} }, credentialVolume],
          },
        },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'node-agent', namespace: ns, labels },
      spec: {
        selector: { matchLabels: { name: 'node-agent' } },
        template: {
          metadata: { labels: agentLabels },
          spec: {
            serviceAccountName: 'velero',
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 5,
            // Root, as upstream: it reads every pod's files. Not privileged.
            securityContext: { runAsUser: 0 },
            containers: [
              {
                name: 'node-agent',
                image: opts.veleroImage,
                imagePullPolicy: 'IfNotPresent',
                command: ['/velero'],
                args: ['node-agent', 'server', '--log-level=info'],
                ports: [{ name: 'metrics', containerPort: 8085 }],
                env: [
                  { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                  ...credentialEnv,
                ],
                volumeMounts: [
                  { name: 'host-pods', mountPath: '/host_pods', mountPropagation: hostToContainer },
                  {
                    name: 'host-plugins',
                    mountPath: '/var/lib/kubelet/plugins',
                    mountPropagation: hostToContainer,
                  },
                  { name: 'scratch', mountPath: '/scratch' },
                  credentialMount,
                ],
              },
            ],
            volumes: [
              { name: 'host-pods', hostPath: { path: join(opts.kubeletRoot, 'pods') } },
              { name: 'host-plugins', hostPath: { path: join(opts.kubeletRoot, 'plugins') } },
              { name: 'scratch', emptyDir: {} },
              credentialVolume,
            ],
          },
        },
      },
    },
    {
      apiVersion: VELERO_API,
      kind: 'BackupStorageLocation',
      metadata: { name: BSL_NAME, namespace: ns, labels },
      spec: {
        default: true,
        provider: 'aws',
        objectStorage: { bucket: opts.bucket },
        config: { region: opts.region, s3ForcePathStyle: 'true', s3Url: opts.s3Url },
      },
    },
  ];
}

/** Waits until Velero has validated the BackupStorageLocation against the bucket (phase Available). */
async function waitAvailable(node: RealNode, namespace: string, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const bsl = await node.client
      .request<{ status?: { phase?: string; message?: string } }>({
        method: 'GET',
        path: `/apis/velero.io/v1/namespaces/${namespace}/backupstoragelocations/${BSL_NAME}`,
      })
      .catch(() => undefined);
    if (bsl?.status?.phase === 'Available') return;
    if (Date.now() > deadline)
      throw new Error(
        `BackupStorageLocation ${namespace}/${BSL_NAME} not Available within ${timeoutMs / 1000} s (phase ${bsl?.status?.phase ?? 'unset'}: ${bsl?.status?.message ?? ''})\n${await podSummary(node.client, namespace, 'component=velero')}`,
      );
    await sleep(500);
  }
}

export const ensureVelero: (node: RealNode) => Promise<Velero> = perNode(async (node) => {
  const namespace = VELERO_NAMESPACE;
  const store = await ensureObjectStore(node);
  await store.bucket(VELERO_BUCKET);
  await installCrds(node.kubeconfigPath, veleroCrdFiles());
  const images = veleroImages(node.registryPrefix);
  pushImages(node, [images.velero, images.awsPlugin]);
  await applyAll(
    node.client,
    veleroObjects({
      namespace,
      veleroImage: images.velero.ref,
      pluginImage: images.awsPlugin.ref,
      kubeletRoot: kubeletRootOf(node.workdir),
      s3Url: store.serviceUrl,
      region: store.region,
      bucket: VELERO_BUCKET,
      accessKey: store.accessKey,
      secretKey: store.secretKey,
    }),
    'vws-velero',
  );
  await waitReady(node.client, 'Deployment', namespace, 'velero');
  await waitReady(node.client, 'DaemonSet', namespace, 'node-agent');
  await waitAvailable(node, namespace);
  return { namespace, bucket: VELERO_BUCKET, store };
});
