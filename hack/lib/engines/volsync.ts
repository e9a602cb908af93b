// VolSync on a real node (docs/engines.md#volsync--backup-restore): its controller as a Deployment in
// `volsync-system`, told its restic mover image by RELATED_IMAGE_RESTIC_CONTAINER, both images built
// here (hack/images/engines/volsync.ts) and pushed to the node's registry. The CRDs are already there
// (the real node installs bin/crds, VolSync's among them). The controller gets exactly the permissions
// VolSync's own CSV asks OLM for (bin/volsync-bundle, from the pinned module): the cluster rules as a
// ClusterRole, the namespaced ones (leases, configmaps, events) as a Role in its namespace.
//
// Differences from upstream's Deployment, and why: no kube-rbac-proxy sidecar (it only guards the
// metrics port; its image is not built here), no leader election (one replica; the lease would only
// delay a restart by up to 137 s), metrics on :8080 inside the pod.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { volsyncImages } from '../../images/engines/volsync.ts';
import { BIN } from '../controlplane.ts';
import type { RealNode } from '../real-node.ts';
import { applyAll, type Obj, perNode, pushImages, waitReady } from './workloads.ts';

export const VOLSYNC_NAMESPACE = 'volsync-system';
export const VOLSYNC_NAME = 'volsync-controller-manager';
const LABELS = { 'app.kubernetes.io/name': 'volsync', 'app.kubernetes.io/component': 'controller' };

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
  nonResourceURLs?: string[];
}

export interface VolSyncPermissions {
  cluster: PolicyRule[];
  namespaced: PolicyRule[];
}

export interface VolSyncInstall {
  namespace: string;
  controllerImage: string;
  moverImage: string;
}

interface Csv {
  spec?: {
    install?: {
      spec?: {
        clusterPermissions?: { rules?: PolicyRule[] }[];
        permissions?: { rules?: PolicyRule[] }[];
      };
    };
  };
}

/** The rules a CSV's install strategy asks for, cluster-wide and in the operator's namespace. Pure. */
export function csvPermissions(csv: Csv): VolSyncPermissions {
  const install = csv.spec?.install?.spec;
  const cluster = (install?.clusterPermissions ?? []).flatMap((p) => p.rules ?? []);
  const namespaced = (install?.permissions ?? []).flatMap((p) => p.rules ?? []);
  if (cluster.length === 0)
    throw new Error('the VolSync CSV asks for no clusterPermissions: not the bundle expected');
  return { cluster, namespaced };
}

/** VolSync's CSV from bin/volsync-bundle (hack/build-tools.sh volsync-bundle). */
export function upstreamCsv(): Csv {
  const path = join(BIN, 'volsync-bundle/manifests/volsync.clusterserviceversion.yaml');
  try {
    return parse(readFileSync(path, 'utf8')) as Csv;
  } catch (err) {
    throw new Error(
      `${path} is unreadable (${(err as Error).message}): run \`hack/build-tools.sh volsync\` (or make tools)`,
    );
  }
}

/** The controller Deployment. Pure. */
export function controllerDeployment(namespace: string, controllerImage: string, moverImage: string): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: VOLSYNC_NAME, namespace, labels: LABELS },
    spec: {
      replicas: 1,
      selector: { matchLabels: LABELS },
      template: {
        metadata: { labels: LABELS },
        spec: {
          serviceAccountName: VOLSYNC_NAME,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'manager',
              image: controllerImage,
              args: ['--health-probe-bind-address=:8081', '--metrics-bind-address=:8080'],
              env: [
                { name: 'VOLSYNC_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                // The one mover the operator's templates use; the others keep upstream's default.
                { name: 'RELATED_IMAGE_RESTIC_CONTAINER', value: moverImage },
              ],
              readinessProbe: { httpGet: { path: '/readyz', port: 8081 }, periodSeconds: 2 },
              livenessProbe: {
                httpGet: { path: '/healthz', port: 8081 },
                initialDelaySeconds: 15,
                periodSeconds: 20,
              },
              resources: { requests: { cpu: '20m', memory: '64Mi' }, limits: { memory: '512Mi' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
                readOnlyRootFilesystem: true,
              },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: { medium: 'Memory' } }],
        },
      },
    },
  };
}

/** Everything the install applies, in order. Pure. */
export function volsyncObjects(install: VolSyncInstall, permissions: VolSyncPermissions): Obj[] {
  const { namespace } = install;
  const subject = { kind: 'ServiceAccount', name: VOLSYNC_NAME, namespace };
  const clusterRole = `vws-${VOLSYNC_NAME}`;
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: VOLSYNC_NAME, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: clusterRole },
      rules: permissions.cluster,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: clusterRole },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [subject],
    },
    ...(permissions.namespaced.length > 0
      ? [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: VOLSYNC_NAME, namespace },
            rules: permissions.namespaced,
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: VOLSYNC_NAME, namespace },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: VOLSYNC_NAME },
            subjects: [subject],
          },
        ]
      : []),
    controllerDeployment(namespace, install.controllerImage, install.moverImage),
  ];
}

/**
 * Installs VolSync on the node once (journeys share it; a failed install is forgotten) and resolves
 * when the controller is ready; `log` hears the first caller's progress.
 */
export const ensureVolSync = perNode(install);

async function install(node: RealNode, log: (m: string) => void): Promise<VolSyncInstall> {
  const images = volsyncImages(node.registryPrefix);
  pushImages(node, [images.controller, images.restic]);
  const install: VolSyncInstall = {
    namespace: VOLSYNC_NAMESPACE,
    controllerImage: images.controller.ref,
    moverImage: images.restic.ref,
  };
  log(
    `VolSync: controller ${images.controller.tag}, restic mover ${images.restic.tag} pushed; installing ...`,
  );
  await applyAll(node.client, volsyncObjects(install, csvPermissions(upstreamCsv())), 'vws-volsync');
  await waitReady(node.client, 'Deployment', VOLSYNC_NAMESPACE, VOLSYNC_NAME);
  log('VolSync controller ready');
  return install;
}
