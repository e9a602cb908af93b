// The CSI snapshot machinery on a running real node (docs/engines.md "snapshot — Backup",
// docs/real-node.md, ADR 0019): upstream's snapshot-controller (a Deployment), and one pod per node
// (a DaemonSet) holding our hostpath driver (hack/csi-hostpath, the stand-in for a storage vendor's
// driver, which also registers itself with the kubelet) beside upstream's csi-provisioner and
// csi-snapshotter sidecars, as upstream's hostpath example runs them. The snapshot CRDs are the
// control plane's (bin/crds). A StorageClass and a default VolumeSnapshotClass name the driver.
//
// The builders are pure (csi.test.ts); installCsi() pushes the images (hack/images/engines/csi.ts),
// applies the objects and waits until the kubelet lists the driver in the node's CSINode and every
// container runs. Memoized per node, so journeys share one installation.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubernetesObject } from '@kubernetes/client-node';
import { pushBuilt } from '../../images/build.ts';
import { NONROOT } from '../../images/contents.ts';
import { type CsiImages, csiImages } from '../../images/engines/csi.ts';
import { apply, type RealNode } from '../real-node.ts';
import { type NodeLayout, paths } from '../real-node-config.ts';
import { perNode } from './workloads.ts';

export const CSI_DRIVER = 'hostpath.csi.vworkspace.io';
export const CSI_NAMESPACE = 'vws-csi';
export const STORAGE_CLASS = 'vws-csi-hostpath';
export const SNAPSHOT_CLASS = 'vws-csi-hostpath';
const PLUGIN = 'csi-hostpath';
const CONTROLLER = 'snapshot-controller';
/** Where the sidecars see the driver's socket directory. */
const SOCKET_DIR = '/csi';

type Obj = Record<string, unknown>;

export interface CsiLayout {
  /** The kubelet's --root-dir on the host: its plugins/ and plugins_registry/ and the pods' volumes. */
  kubeletRoot: string;
  /** The driver's volumes and snapshots on the host. */
  dataDir: string;
  /** Image references (by digest) for each component. */
  images: Record<keyof CsiImages, string>;
}

/** The driver's directory under the kubelet's plugins/ and its CSI socket there (the kubelet dials it). */
export function socketPaths(kubeletRoot: string): { dir: string; socket: string; registrationDir: string } {
  const dir = `${kubeletRoot}/plugins/${CSI_DRIVER}`;
  return { dir, socket: `${dir}/csi.sock`, registrationDir: `${kubeletRoot}/plugins_registry` };
}

const meta = (name: string, namespaced = true) => ({
  name,
  ...(namespaced ? { namespace: CSI_NAMESPACE } : {}),
  labels: { 'app.kubernetes.io/part-of': 'vws-csi' },
});

const rule = (apiGroups: string[], resources: string[], verbs: string[]) => ({ apiGroups, resources, verbs });

/** A ServiceAccount with a ClusterRole of `rules` bound to it. */
function clusterIdentity(name: string, rules: Obj[]): Obj[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(`vws-csi-${name}`, false),
      rules,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta(`vws-csi-${name}`, false),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `vws-csi-${name}` },
      subjects: [{ kind: 'ServiceAccount', name, namespace: CSI_NAMESPACE }],
    },
  ];
}

const SNAP = 'snapshot.storage.k8s.io';
const EVENTS = rule([''], ['events'], ['list', 'watch', 'create', 'update', 'patch']);

/**
 * The upstream rules (external-snapshotter deploy/kubernetes, external-provisioner deploy/kubernetes),
 * without group snapshots (the CSIVolumeGroupSnapshot feature gate stays off, its CRDs are not
 * installed) and leader-election leases (one replica, leader election off).
 */
export const RULES = {
  snapshotController: [
    rule([''], ['persistentvolumes'], ['get', 'list', 'watch']),
    rule([''], ['persistentvolumeclaims'], ['get', 'list', 'watch', 'update']),
    EVENTS,
    rule([SNAP], ['volumesnapshotclasses'], ['get', 'list', 'watch']),
    rule([SNAP], ['volumesnapshotcontents'], ['create', 'get', 'list', 'watch', 'update', 'delete', 'patch']),
    rule([SNAP], ['volumesnapshotcontents/status'], ['patch']),
    rule([SNAP], ['volumesnapshots'], ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete']),
    rule([SNAP], ['volumesnapshots/status'], ['update', 'patch']),
  ],
  // csi-provisioner and csi-snapshotter share the plugin pod's ServiceAccount.
  plugin: [
    rule([''], ['persistentvolumes'], ['get', 'list', 'watch', 'create', 'patch', 'delete']),
    rule([''], ['persistentvolumeclaims'], ['get', 'list', 'watch', 'update']),
    rule(['storage.k8s.io'], ['storageclasses'], ['get', 'list', 'watch']),
    EVENTS,
    rule([SNAP], ['volumesnapshots'], ['get', 'list']),
    rule([SNAP], ['volumesnapshotclasses'], ['get', 'list', 'watch']),
    rule([SNAP], ['volumesnapshotcontents'], ['get', 'list', 'watch', 'update', 'patch']),
    rule([SNAP], ['volumesnapshotcontents/status'], ['update', 'patch']),
    rule(['storage.k8s.io'], ['csinodes'], ['get', 'list', 'watch']),
    rule([''], ['nodes'], ['get', 'list', 'watch']),
    rule(['storage.k8s.io'], ['volumeattachments'], ['get', 'list', 'watch']),
  ],
};

/** Nonroot, nothing to escalate, read-only root: the upstream components need no more. */
const RESTRICTED = {
  runAsNonRoot: true,
  runAsUser: NONROOT,
  runAsGroup: NONROOT,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export function snapshotControllerObjects(image: string): Obj[] {
  const labels = { app: CONTROLLER };
  return [
    ...clusterIdentity(CONTROLLER, RULES.snapshotController),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(CONTROLLER),
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: CONTROLLER,
            terminationGracePeriodSeconds: 5,
            containers: [
              {
                name: CONTROLLER,
                image,
                args: ['--v=2', '--leader-election=false'],
                securityContext: RESTRICTED,
              },
            ],
          },
        },
      },
    },
  ];
}

/**
 * The plugin pod: the driver (privileged: it bind-mounts volumes into the kubelet's pod directories,
 * and Bidirectional propagation on the kubelet's root carries those mounts back to the host, where
 * the kubelet made that directory rshared), csi-provisioner and csi-snapshotter (nonroot, reaching the
 * driver's socket through its group).
 */
export function pluginObjects(l: CsiLayout): Obj[] {
  const labels = { app: PLUGIN };
  const s = socketPaths(l.kubeletRoot);
  const sidecar = (name: string, image: string) => ({
    name,
    image,
    args: [`--csi-address=${SOCKET_DIR}/csi.sock`, '--v=2'],
    securityContext: RESTRICTED,
    volumeMounts: [{ name: 'socket-dir', mountPath: SOCKET_DIR }],
  });
  return [
    ...clusterIdentity(PLUGIN, RULES.plugin),
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: meta(PLUGIN),
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: PLUGIN,
            terminationGracePeriodSeconds: 5,
            containers: [
              {
                name: 'hostpath',
                image: l.images.hostpath,
                args: [
                  `--driver-name=${CSI_DRIVER}`,
                  `--csi-socket=${s.socket}`,
                  `--registration-dir=${s.registrationDir}`,
                  `--data-dir=${l.dataDir}`,
                  `--socket-gid=${NONROOT}`,
                ],
                env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
                securityContext: { privileged: true, runAsUser: 0 },
                // The same paths inside as on the host: the kubelet names target paths and the socket by
                // host path.
                volumeMounts: [
                  { name: 'kubelet-root', mountPath: l.kubeletRoot, mountPropagation: 'Bidirectional' },
                  { name: 'data', mountPath: l.dataDir },
                ],
              },
              sidecar('csi-provisioner', l.images.csiProvisioner),
              sidecar('csi-snapshotter', l.images.csiSnapshotter),
            ],
            volumes: [
              { name: 'kubelet-root', hostPath: { path: l.kubeletRoot, type: 'Directory' } },
              { name: 'data', hostPath: { path: l.dataDir, type: 'DirectoryOrCreate' } },
              { name: 'socket-dir', hostPath: { path: s.dir, type: 'DirectoryOrCreate' } },
            ],
          },
        },
      },
    },
  ];
}

/** What the driver is to the cluster: no attach step, persistent volumes only, fsGroup applied by the kubelet. */
export function csiDriverObject(): Obj {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: meta(CSI_DRIVER, false),
    spec: {
      attachRequired: false,
      podInfoOnMount: false,
      volumeLifecycleModes: ['Persistent'],
      fsGroupPolicy: 'File',
    },
  };
}

/** The StorageClass (Immediate binding: the driver has no topology) and the driver's default VolumeSnapshotClass. */
export function storageObjects(): Obj[] {
  return [
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: meta(STORAGE_CLASS, false),
      provisioner: CSI_DRIVER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
    },
    volumeSnapshotClass(SNAPSHOT_CLASS, CSI_DRIVER, 'Delete', true),
  ];
}

export function volumeSnapshotClass(
  name: string,
  driver: string,
  deletionPolicy: 'Delete' | 'Retain',
  isDefault = false,
): Obj {
  return {
    apiVersion: `${SNAP}/v1`,
    kind: 'VolumeSnapshotClass',
    metadata: {
      ...meta(name, false),
      ...(isDefault ? { annotations: { 'snapshot.storage.kubernetes.io/is-default-class': 'true' } } : {}),
    },
    driver,
    deletionPolicy,
  };
}

/** Everything, in the order it can be applied. */
export function csiObjects(l: CsiLayout): Obj[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      // The driver's pod is privileged: the namespace says so whatever the cluster's default.
      metadata: {
        ...meta(CSI_NAMESPACE, false),
        labels: { 'pod-security.kubernetes.io/enforce': 'privileged' },
      },
    },
    csiDriverObject(),
    ...snapshotControllerObjects(l.images.snapshotController),
    ...pluginObjects(l),
    ...storageObjects(),
  ];
}

/** The propagation of the mount at `path` in a mountinfo table (`shared`, `slave` or `private`); undefined: no mount there. Pure. */
export function mountPropagation(
  mountinfo: string,
  path: string,
): 'shared' | 'slave' | 'private' | undefined {
  let found: 'shared' | 'slave' | 'private' | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields[4] !== path) continue;
    // Optional fields (shared:N, master:N) sit between the mount options and the "-" separator; the last
    // mount on a path is the one in effect.
    const optional = fields.slice(6, fields.indexOf('-'));
    found = optional.some((f) => f.startsWith('shared:'))
      ? 'shared'
      : optional.some((f) => f.startsWith('master:'))
        ? 'slave'
        : 'private';
  }
  return found;
}

export interface CsiInstall {
  driver: string;
  storageClass: string;
  snapshotClass: string;
  dataDir: string;
  kubeletRoot: string;
  /** The last log lines of every CSI container, for failure reports. */
  logs(lines?: number): Promise<string>;
}

/** Installs the CSI machinery on `node` once; later calls get the same installation. */
export const installCsi = perNode(install);

interface Pod extends KubernetesObject {
  spec: { containers: { name: string }[] };
  status?: { containerStatuses?: { name: string; ready?: boolean }[] };
}

async function install(node: RealNode, log: (line: string) => void): Promise<CsiInstall> {
  // Only the directory matters here; paths() derives every location from it.
  const kubeletRoot = paths({ dir: node.workdir } as NodeLayout).kubeletRoot;
  const dataDir = join(node.workdir, 'csi-hostpath');
  // The driver's Bidirectional mount needs the kubelet's root to be a shared mount on the host (this
  // machine's / is private; the kubelet makes its root rshared when it starts).
  const propagation = mountPropagation(readFileSync('/proc/self/mountinfo', 'utf8'), kubeletRoot);
  if (propagation !== 'shared')
    throw new Error(
      `CSI: the kubelet root ${kubeletRoot} is ${propagation === undefined ? 'not a mount point' : `a ${propagation} mount`}; the driver's Bidirectional mount needs it shared (the kubelet makes it rshared when it starts)`,
    );
  log(
    'CSI: the kubelet root is a shared mount; building and pushing snapshot-controller, csi-snapshotter, csi-provisioner, csi-hostpath ...',
  );
  const built = csiImages(node.registryPrefix);
  for (const b of Object.values(built)) pushBuilt(b, node.workdir);
  const layout: CsiLayout = {
    kubeletRoot,
    dataDir,
    images: {
      snapshotController: built.snapshotController.ref,
      csiSnapshotter: built.csiSnapshotter.ref,
      csiProvisioner: built.csiProvisioner.ref,
      hostpath: built.hostpath.ref,
    },
  };
  for (const obj of csiObjects(layout)) await apply(node.client, obj);

  const pods = async (app: string) =>
    (
      await node.client.request<{ items: Pod[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${CSI_NAMESPACE}/pods`,
        query: { labelSelector: `app=${app}` },
      })
    ).items;
  const logs = async (lines = 40) => {
    const out: string[] = [];
    for (const app of [PLUGIN, CONTROLLER])
      for (const pod of await pods(app).catch(() => []))
        for (const c of pod.spec.containers) {
          const text = await node.client
            .request<unknown>({
              method: 'GET',
              path: `/api/v1/namespaces/${CSI_NAMESPACE}/pods/${pod.metadata?.name}/log`,
              query: { container: c.name, tailLines: String(lines) },
            })
            .catch((e: unknown) => `(no log: ${e instanceof Error ? e.message : String(e)})`);
          out.push(`--- ${pod.metadata?.name}/${c.name} ---\n${String(text)}`);
        }
    return out.join('\n');
  };
  const ready = async (app: string) => {
    const [pod] = await pods(app);
    const statuses = pod?.status?.containerStatuses ?? [];
    return !!pod && statuses.length === pod.spec.containers.length && statuses.every((s) => s.ready);
  };
  // The kubelet lists the driver in its CSINode once it has found the registration socket, asked
  // GetInfo, and called NodeGetInfo on the CSI socket: the registration really happened.
  const registered = async () => {
    const csiNode = await node.client.request<{ spec?: { drivers?: { name: string; nodeID: string }[] } }>({
      method: 'GET',
      path: `/apis/storage.k8s.io/v1/csinodes/${node.nodeName}`,
    });
    return csiNode.spec?.drivers?.some((d) => d.name === CSI_DRIVER && d.nodeID === node.nodeName) ?? false;
  };
  const deadline = Date.now() + 180_000;
  for (;;) {
    const done = await Promise.all([ready(PLUGIN), ready(CONTROLLER), registered()]).catch(() => [false]);
    if (done.every(Boolean)) break;
    if (Date.now() > deadline)
      throw new Error(
        `CSI: not ready within 180 s (plugin pod, snapshot-controller, CSINode ${node.nodeName} listing ${CSI_DRIVER}: ${done.join(', ')})\n${await logs()}`,
      );
    await sleep(500);
  }
  log(
    `CSI: ${CSI_DRIVER} registered with the kubelet; snapshot-controller, csi-provisioner, csi-snapshotter running`,
  );
  return {
    driver: CSI_DRIVER,
    storageClass: STORAGE_CLASS,
    snapshotClass: SNAPSHOT_CLASS,
    dataDir,
    kubeletRoot,
    logs,
  };
}
