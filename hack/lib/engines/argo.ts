// Argo Workflows on a real node (docs/engines.md "workflow", docs/real-node.md): Argo's full CRDs (every
// kind the controller watches, straight from the pinned module: bin/argo/crds, `hack/build-tools.sh
// argo`), the controller's ServiceAccount and RBAC as upstream's cluster install has them, its
// ConfigMap, and the workflow-controller Deployment running the image hack/images/engines/argo.ts builds,
// with the argoexec image as its executor (emissary). No argo-server, no artifact repository, no archive:
// the operator only creates Workflows and reads their status. Installed once per node (memoized).
//
// The manifests are builders (pure, unit-tested); installArgo applies them and waits.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pushBuilt } from '../../images/build.ts';
import { argoImages } from '../../images/engines/argo.ts';
import { BIN } from '../controlplane.ts';
import { installCrds } from '../crds.ts';
import { eventually } from '../eventually.ts';
import { apply, type RealNode } from '../real-node.ts';
import { perNode } from './workloads.ts';

export const ARGO_NAMESPACE = 'argo';
export const ARGO_CONTROLLER = 'workflow-controller';
/** The controller's ConfigMap (its --configmap default); it must exist, empty means Argo's defaults. */
export const ARGO_CONFIGMAP = 'workflow-controller-configmap';
const SERVICE_ACCOUNT = 'argo';
const CLUSTER_ROLE = 'argo-cluster-role';
type Obj = Record<string, unknown>;

export interface ArgoInstall {
  namespace: string;
  controllerImage: string;
  executorImage: string;
  /** The CRDs installed (names). */
  crds: string[];
}

const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]) => ({
  apiGroups,
  resources,
  verbs,
  ...(resourceNames ? { resourceNames } : {}),
});

/**
 * The controller's cluster-wide permissions: upstream's argo-cluster-role (manifests/cluster-install-
 * no-crds/workflow-controller-rbac) for v3.7, rule for rule. It creates and signals the workflow pods
 * (pods/exec: `argoexec kill` on shutdown), reads WorkflowTemplates, lists the executors' task results.
 */
export function argoClusterRole(): Obj {
  const all = ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete'];
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: CLUSTER_ROLE },
    rules: [
      rule([''], ['pods', 'pods/exec'], all),
      rule([''], ['configmaps', 'namespaces'], ['get', 'watch', 'list']),
      rule(
        [''],
        ['persistentvolumeclaims', 'persistentvolumeclaims/finalizers'],
        ['create', 'update', 'delete', 'get'],
      ),
      rule(
        ['argoproj.io'],
        [
          'workflows',
          'workflows/finalizers',
          'workflowtasksets',
          'workflowtasksets/finalizers',
          'workflowartifactgctasks',
        ],
        ['get', 'list', 'watch', 'update', 'patch', 'delete', 'create'],
      ),
      rule(
        ['argoproj.io'],
        [
          'workflowtemplates',
          'workflowtemplates/finalizers',
          'clusterworkflowtemplates',
          'clusterworkflowtemplates/finalizers',
        ],
        ['get', 'list', 'watch'],
      ),
      rule(['argoproj.io'], ['workflowtaskresults'], ['list', 'watch', 'deletecollection']),
      rule([''], ['serviceaccounts'], ['get', 'list']),
      rule(
        ['argoproj.io'],
        ['cronworkflows', 'cronworkflows/finalizers'],
        ['get', 'list', 'watch', 'update', 'patch', 'delete'],
      ),
      rule([''], ['events'], ['create', 'patch']),
      rule(['policy'], ['poddisruptionbudgets'], ['create', 'get', 'delete']),
      rule([''], ['secrets'], ['get'], ['argo-workflows-agent-ca-certificates']),
    ],
  };
}

/** Namespace, ServiceAccount, RBAC (cluster role + its own Role for the leader Lease) and ConfigMap. */
export function argoObjects(namespace = ARGO_NAMESPACE): Obj[] {
  const sa = { kind: 'ServiceAccount', name: SERVICE_ACCOUNT, namespace };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SERVICE_ACCOUNT, namespace } },
    argoClusterRole(),
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'argo-binding' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: CLUSTER_ROLE },
      subjects: [sa],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'argo-role', namespace },
      rules: [
        rule(['coordination.k8s.io'], ['leases'], ['create', 'get', 'update']),
        rule([''], ['secrets'], ['get']),
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'argo-binding', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'argo-role' },
      subjects: [sa],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ARGO_CONFIGMAP, namespace }, data: {} },
  ];
}

/**
 * upstream's workflow-controller Deployment (manifests/base/workflow-controller) with our images: the
 * executor image by digest through --executor-image (it overrides the ConfigMap), cluster-wide (not
 * --namespaced: Operations run in any namespace), leader election as upstream (one replica takes the
 * Lease at once), Argo's test requeue time. No PriorityClass: one test node has nothing to preempt.
 */
export function argoControllerDeployment(
  controllerImage: string,
  executorImage: string,
  namespace = ARGO_NAMESPACE,
): Obj {
  const labels = { app: ARGO_CONTROLLER };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: ARGO_CONTROLLER, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: SERVICE_ACCOUNT,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: ARGO_CONTROLLER,
              image: controllerImage,
              args: ['--configmap', ARGO_CONFIGMAP, '--executor-image', executorImage, '--loglevel', 'info'],
              env: [
                {
                  name: 'LEADER_ELECTION_IDENTITY',
                  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } },
                },
                // How soon a Workflow is looked at again after a step changed (default 10 s): 1 s, as
                // Argo's own test environment runs it (its Makefile: "by keeping this short we speed
                // up tests"); each step of a journey would otherwise wait up to 10 s.
                { name: 'DEFAULT_REQUEUE_TIME', value: '1s' },
              ],
              ports: [
                { name: 'metrics', containerPort: 9090 },
                { name: 'healthz', containerPort: 6060 },
              ],
              livenessProbe: {
                httpGet: { port: 6060, path: '/healthz' },
                failureThreshold: 3,
                initialDelaySeconds: 90,
                periodSeconds: 60,
                timeoutSeconds: 30,
              },
              securityContext: {
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      },
    },
  };
}

/**
 * What a namespace admin grants the ServiceAccount a namespace's Workflows run as: Argo's executor
 * (emissary, v3.7) only writes its step's outputs as a WorkflowTaskResult, so `create` and `patch` on
 * workflowtaskresults is all it needs (upstream's quick-start `executor` Role). Nothing else: the
 * controller, not the pod, reads the WorkflowTemplate and the pods.
 */
export function workflowRunnerObjects(namespace: string, serviceAccount: string): Obj[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'argo-executor', namespace },
      rules: [rule(['argoproj.io'], ['workflowtaskresults'], ['create', 'patch'])],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `argo-executor-${serviceAccount}`, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'argo-executor' },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
  ];
}

/** bin/argo/crds: Argo's full CRDs, copied from the pinned module by `hack/build-tools.sh argo`. */
export function argoCrdFiles(dir = join(BIN, 'argo/crds')): string[] {
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  } catch {
    // reported below
  }
  if (files.length === 0)
    throw new Error(`${dir} holds no CRDs: run \`hack/build-tools.sh argo\` (make tools builds it too)`);
  return files.sort().map((f) => join(dir, f));
}

/** The CRD an Argo CRD file defines, by Argo's file naming: `argoproj.io_<plural>.yaml`. */
export function crdNameOf(file: string): string {
  const m = /^argoproj\.io_([a-z]+)\.yaml$/.exec(basename(file));
  if (!m) throw new Error(`${file} is not named like Argo's CRD files (argoproj.io_<plural>.yaml)`);
  return `${m[1]}.argoproj.io`;
}

/**
 * The files still to install: the control plane already installed some of Argo's CRDs from bin/crds
 * (hack/fetch-crds.sh, same module and pin); one the API server serves from a byte-identical file is
 * not sent again (workflows and workflowtemplates are 4.4 of the 7.6 MB).
 */
export function crdFilesToInstall(
  files: readonly string[],
  installedFrom: (file: string) => string | undefined,
  served: ReadonlySet<string>,
): string[] {
  return files.filter((f) => {
    const same = installedFrom(f);
    return !(same !== undefined && same === readFileSync(f, 'utf8') && served.has(crdNameOf(f)));
  });
}

/** Installs Argo Workflows on the node once; later calls share the first one's result. */
export const installArgo = perNode(install);

async function install(node: RealNode, log: (m: string) => void): Promise<ArgoInstall> {
  const files = argoCrdFiles();
  const images = argoImages(node.registryPrefix);
  for (const image of [images.controller, images.executor]) pushBuilt(image, node.workdir);
  log('argo: controller and executor images built and pushed');
  const served = new Set<string>();
  for (const f of files) {
    const name = crdNameOf(f);
    const crd = await node.client
      .request({ method: 'GET', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` })
      .catch(() => undefined);
    if (crd) served.add(name);
  }
  const nodeCrd = (f: string) => {
    const p = join(BIN, 'crds', basename(f));
    return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
  };
  const todo = crdFilesToInstall(files, nodeCrd, served);
  if (todo.length > 0) await installCrds(node.kubeconfigPath, todo);
  const crds = files.map(crdNameOf);
  log(`argo: ${crds.length} CRDs served (${todo.length} installed now)`);
  for (const obj of argoObjects()) await apply(node.client, obj);
  await apply(node.client, argoControllerDeployment(images.controller.ref, images.executor.ref));
  await eventually(
    'the Argo workflow-controller Deployment available',
    async () => {
      const d = await node.client.request<{ status?: { availableReplicas?: number } }>({
        method: 'GET',
        path: `/apis/apps/v1/namespaces/${ARGO_NAMESPACE}/deployments/${ARGO_CONTROLLER}`,
      });
      return (d.status?.availableReplicas ?? 0) >= 1;
    },
    180_000,
    500,
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${node.logs(20)}`);
  });
  // Available only means started: the Lease shows the controller leads and so acts on Workflows.
  await eventually(
    'the workflow-controller holding its leader Lease',
    async () => {
      const lease = await node.client.request<{ spec?: { holderIdentity?: string } }>({
        method: 'GET',
        path: `/apis/coordination.k8s.io/v1/namespaces/${ARGO_NAMESPACE}/leases/${ARGO_CONTROLLER}`,
      });
      return !!lease.spec?.holderIdentity;
    },
    120_000,
    500,
  );
  log('argo: workflow-controller running and leading');
  return {
    namespace: ARGO_NAMESPACE,
    controllerImage: images.controller.ref,
    executorImage: images.executor.ref,
    crds,
  };
}
