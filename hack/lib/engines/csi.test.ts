import { describe, expect, it } from 'vitest';
import {
  CSI_DRIVER,
  CSI_NAMESPACE,
  type CsiLayout,
  csiObjects,
  mountPropagation,
  RULES,
  SNAPSHOT_CLASS,
  STORAGE_CLASS,
  socketPaths,
  volumeSnapshotClass,
} from './csi.ts';

const layout: CsiLayout = {
  kubeletRoot: '/tmp/vws-node-abc/kubelet',
  dataDir: '/tmp/vws-node-abc/csi-hostpath',
  images: {
    snapshotController: 'r/snapshot-controller@sha256:1',
    csiSnapshotter: 'r/csi-snapshotter@sha256:2',
    csiProvisioner: 'r/csi-provisioner@sha256:3',
    hostpath: 'r/csi-hostpath@sha256:4',
  },
};

interface Container {
  name: string;
  image: string;
  args: string[];
  securityContext: Record<string, unknown>;
  volumeMounts: { name: string; mountPath: string; mountPropagation?: string }[];
}
interface PodSpec {
  serviceAccountName: string;
  containers: Container[];
  volumes: { name: string; hostPath: { path: string; type: string } }[];
}
type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } };

const objects = csiObjects(layout) as Obj[];
const byKind = (kind: string, name?: string) =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const podSpec = (kind: string) =>
  (byKind(kind) as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

describe('CSI manifests', () => {
  it('the namespace comes first and allows the privileged driver; every namespaced object is in it', () => {
    expect(objects[0]).toMatchObject({
      kind: 'Namespace',
      metadata: { name: CSI_NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
    });
    for (const o of objects.filter((x) => ['ServiceAccount', 'Deployment', 'DaemonSet'].includes(x.kind)))
      expect(o.metadata.namespace).toBe(CSI_NAMESPACE);
  });

  it('the CSIDriver needs no attach step (there is no external-attacher) and serves persistent volumes', () => {
    expect(byKind('CSIDriver')).toMatchObject({
      metadata: { name: CSI_DRIVER },
      spec: { attachRequired: false, volumeLifecycleModes: ['Persistent'] },
    });
  });

  it('the driver: privileged, the kubelet root at the same path with Bidirectional propagation, its socket where the kubelet looks', () => {
    const spec = podSpec('DaemonSet');
    const driver = spec.containers.find((c) => c.name === 'hostpath');
    expect(driver?.image).toBe(layout.images.hostpath);
    expect(driver?.securityContext).toMatchObject({ privileged: true });
    expect(driver?.volumeMounts).toContainEqual({
      name: 'kubelet-root',
      mountPath: layout.kubeletRoot,
      mountPropagation: 'Bidirectional',
    });
    const s = socketPaths(layout.kubeletRoot);
    expect(s.socket).toBe(`${layout.kubeletRoot}/plugins/${CSI_DRIVER}/csi.sock`);
    expect(s.registrationDir).toBe(`${layout.kubeletRoot}/plugins_registry`);
    expect(driver?.args).toEqual(
      expect.arrayContaining([
        `--csi-socket=${s.socket}`,
        `--registration-dir=${s.registrationDir}`,
        `--data-dir=${layout.dataDir}`,
      ]),
    );
    expect(spec.volumes).toContainEqual({
      name: 'kubelet-root',
      hostPath: { path: layout.kubeletRoot, type: 'Directory' },
    });
  });

  it("the sidecars: nonroot without privileges, on the driver's socket directory, the socket's group is theirs", () => {
    const spec = podSpec('DaemonSet');
    const socketDir = spec.volumes.find((v) => v.name === 'socket-dir');
    expect(socketDir?.hostPath.path).toBe(socketPaths(layout.kubeletRoot).dir);
    const driver = spec.containers.find((c) => c.name === 'hostpath');
    for (const [name, image] of [
      ['csi-provisioner', layout.images.csiProvisioner],
      ['csi-snapshotter', layout.images.csiSnapshotter],
    ]) {
      const c = spec.containers.find((x) => x.name === name);
      expect(c?.image).toBe(image);
      expect(c?.securityContext).toMatchObject({
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(c?.securityContext.privileged).toBeUndefined();
      expect(c?.args).toContain('--csi-address=/csi/csi.sock');
      expect(driver?.args).toContain(`--socket-gid=${c?.securityContext.runAsGroup}`);
    }
  });

  it('snapshot-controller runs restricted, without leader election, under a role that lets it bind snapshots', () => {
    const spec = podSpec('Deployment');
    expect(spec.containers[0]?.image).toBe(layout.images.snapshotController);
    expect(spec.containers[0]?.args).toContain('--leader-election=false');
    expect(spec.containers[0]?.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
    });
    const role = byKind('ClusterRole', `vws-csi-${spec.serviceAccountName}`) as unknown as {
      rules: unknown[];
    };
    expect(role.rules).toEqual(RULES.snapshotController);
    expect(RULES.snapshotController).toContainEqual({
      apiGroups: ['snapshot.storage.k8s.io'],
      resources: ['volumesnapshotcontents'],
      verbs: expect.arrayContaining(['create', 'delete']),
    });
    expect(byKind('ClusterRoleBinding', `vws-csi-${spec.serviceAccountName}`)).toMatchObject({
      subjects: [{ kind: 'ServiceAccount', name: spec.serviceAccountName, namespace: CSI_NAMESPACE }],
    });
  });

  it('the sidecars may create PVs and update snapshot contents, but never create or delete snapshots', () => {
    const verbs = (resource: string) =>
      RULES.plugin.filter((r) => r.resources.includes(resource)).flatMap((r) => r.verbs);
    expect(verbs('persistentvolumes')).toEqual(expect.arrayContaining(['create', 'delete']));
    expect(verbs('volumesnapshotcontents/status')).toContain('update');
    expect(verbs('volumesnapshots')).not.toContain('create');
    expect(verbs('volumesnapshotcontents')).not.toContain('delete');
  });

  it('the StorageClass and the default VolumeSnapshotClass name the driver', () => {
    expect(byKind('StorageClass')).toMatchObject({
      metadata: { name: STORAGE_CLASS },
      provisioner: CSI_DRIVER,
      volumeBindingMode: 'Immediate',
    });
    expect(byKind('VolumeSnapshotClass')).toMatchObject({
      metadata: {
        name: SNAPSHOT_CLASS,
        annotations: { 'snapshot.storage.kubernetes.io/is-default-class': 'true' },
      },
      driver: CSI_DRIVER,
      deletionPolicy: 'Delete',
    });
    expect(volumeSnapshotClass('x', 'other.csi', 'Retain')).not.toHaveProperty('metadata.annotations');
  });

  it('mount propagation is read from mountinfo: the last mount on the path decides', () => {
    const table = [
      '27 1 254:1 / / rw,relatime - ext4 /dev/vda rw',
      '88 27 254:1 /tmp/n/kubelet /tmp/n/kubelet rw,relatime - ext4 /dev/vda rw',
      '89 88 254:1 /tmp/n/kubelet /tmp/n/kubelet rw,relatime shared:120 - ext4 /dev/vda rw',
      '90 27 254:1 /x /tmp/slave rw master:7 - ext4 /dev/vda rw',
    ].join('\n');
    expect(mountPropagation(table, '/tmp/n/kubelet')).toBe('shared');
    expect(mountPropagation(table, '/')).toBe('private');
    expect(mountPropagation(table, '/tmp/slave')).toBe('slave');
    expect(mountPropagation(table, '/tmp/n')).toBeUndefined();
  });
});
