// A real dynamic PVC provisioner on a real node: Rancher's local-path-provisioner (built by
// hack/build-tools.sh storage, image from hack/images/engines/storage.ts) behind the default
// StorageClass `local-path`. Volumes are directories under the node's work directory (so the node's
// cleanup removes them), made and removed by helper pods running the node's busybox.
//
// The class makes PersistentVolumes of type `local`, not upstream's default `hostPath`: the kubelet
// bind-mounts a local volume into the pod's volume directory (<kubelet root>/pods/<uid>/volumes/
// kubernetes.io~local-volume/<pv>), which is where Velero's File System Backup and other movers look;
// a hostPath volume has no such directory and Velero refuses it.
import { join } from 'node:path';
import { localPathProvisionerImage } from '../../images/engines/storage.ts';
import type { RealNode } from '../real-node.ts';
import { applyAll, type Obj, perNode, pushImages, waitReady } from './workloads.ts';

export const STORAGE_NAMESPACE = 'local-path-storage';
export const STORAGE_CLASS = 'local-path';
export const PROVISIONER = 'rancher.io/local-path';
const NAME = 'local-path-provisioner';
const CONFIG = 'local-path-config';

/** The provisioner's RBAC, configuration, Deployment and the default StorageClass. Pure. */
export function storageObjects(opts: { image: string; helperImage: string; volumesDir: string }): Obj[] {
  const ns = STORAGE_NAMESPACE;
  const labels = { 'app.kubernetes.io/name': NAME, 'app.kubernetes.io/part-of': 'vws-engines' };
  const helperPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'helper-pod' },
    spec: {
      priorityClassName: 'system-node-critical',
      tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'helper-pod', image: opts.helperImage, imagePullPolicy: 'IfNotPresent' }],
    },
  };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: NAME, namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: NAME, namespace: ns },
      rules: [
        {
          apiGroups: [''],
          resources: ['pods'],
          verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: NAME, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAME },
      subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: ns }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: NAME },
      rules: [
        {
          apiGroups: [''],
          resources: ['nodes', 'persistentvolumeclaims', 'configmaps', 'pods', 'pods/log'],
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: [''],
          resources: ['persistentvolumes'],
          verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
        },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: NAME },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAME },
      subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: ns }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONFIG, namespace: ns },
      data: {
        'config.json': JSON.stringify({
          nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [opts.volumesDir] }],
        }),
        setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        'helperPod.yaml': JSON.stringify(helperPod),
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: NAME, namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: NAME,
            enableServiceLinks: false,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: NAME,
                image: opts.image,
                args: [
                  'start',
                  '--config',
                  '/etc/config/config.json',
                  '--service-account-name',
                  NAME,
                  '--configmap-name',
                  CONFIG,
                  '--provisioner-name',
                  PROVISIONER,
                ],
                env: [
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  { name: 'CONFIG_MOUNT_PATH', value: '/etc/config/' },
                ],
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/config/' }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: CONFIG } }],
          },
        },
      },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: STORAGE_CLASS,
        annotations: {
          'storageclass.kubernetes.io/is-default-class': 'true',
          // PersistentVolumes of type local (the kubelet mounts them into the pod's volume directory).
          defaultVolumeType: 'local',
        },
      },
      provisioner: PROVISIONER,
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    },
  ];
}

export const ensureStorage: (node: RealNode) => Promise<{ storageClassName: string }> = perNode(
  async (node) => {
    const img = localPathProvisionerImage(node.registryPrefix);
    pushImages(node, [img]);
    await applyAll(
      node.client,
      storageObjects({
        image: img.ref,
        helperImage: node.images.busybox,
        volumesDir: join(node.workdir, 'local-path'),
      }),
      'vws-storage',
    );
    await waitReady(node.client, 'Deployment', STORAGE_NAMESPACE, NAME);
    return { storageClassName: STORAGE_CLASS };
  },
);
