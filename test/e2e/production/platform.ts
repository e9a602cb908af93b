// The platform of the production journey, installed on the real node the way a platform team installs
// it (docs/production.md):
//
// - the engines as their own docs install them, by the installers the engine journeys use
//   (hack/lib/engines/): local-path storage, MinIO, Velero with its node-agent, the CSI snapshot machinery
//   with the hostpath driver, VolSync, Argo Workflows, and the chart repository with the helm runner image;
// - the operator from the catalog image by OLM: the bundle image unpacked by OLM's Job, the operator image
//   as a restricted pod, the CSV's RBAC as OLM grants it. OLM and the images are the node's
//   (test/e2e/real-node/olm-on-node.ts): on the node of real-node.test.ts the OLM journey has installed
//   the operator from that catalog image already (0.0.9, then the channel upgrade to this release), and
//   the same Subscription, InstallPlan, CSV and pods are what this checks; alone, it subscribes itself;
// - the RBAC profiles bound the way docs/security/rbac.md tells a user: the Velero ones once in the Velero
//   namespace, the others in each application namespace, with the namespace's runner ServiceAccount.
//
// From then on nothing in this process reconciles anything: every Operation is the operator pod's.

import { isNotFound } from '@vworkspace/runtime';
import { installArgo } from '../../../hack/lib/engines/argo.ts';
import { type CsiInstall, installCsi } from '../../../hack/lib/engines/csi.ts';
import { type HelmEngine, installHelm, RUNNER_SERVICE_ACCOUNT } from '../../../hack/lib/engines/helm.ts';
import { ensureStorage } from '../../../hack/lib/engines/storage.ts';
import { ensureVelero, type Velero } from '../../../hack/lib/engines/velero.ts';
import { ensureVolSync } from '../../../hack/lib/engines/volsync.ts';
import { type Olm, OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { apply, type RealNode } from '../../../hack/lib/real-node.ts';
import { csvName, DEPLOYMENT_NAME, SERVICE_ACCOUNT } from '../../../hack/packaging/csv.ts';
import { RBAC_PROFILES } from '../../../operator/src/api/enums.ts';
import { profileClusterRoleName, RBAC_PROFILE_DEFINITIONS } from '../../../operator/src/rbac/profiles.ts';
import { eventually } from '../../support/eventually.ts';
import {
  catalogPodRunning,
  catalogReady,
  pointCatalog,
  subscribeOperator,
} from '../real-node/catalog-source.ts';
import { olmOnNode } from '../real-node/olm-on-node.ts';
import { CURRENT_VERSION, SUBSCRIPTION, waitCsvSucceeded, waitInstallPlanFor } from '../support/install.ts';
import { subscriptionsPath } from '../support/olm-api.ts';

/** The profiles bound in an application namespace (the Velero ones go to the Velero namespace). */
const scoped = (scope: 'target' | 'velero') =>
  RBAC_PROFILES.filter((p) => RBAC_PROFILE_DEFINITIONS[p].rules.some((r) => r.scope === scope));
export const VELERO_PROFILES = scoped('velero');
/** verify.velero is in both: its Restores live in Velero's namespace, its probe Job beside the instance. */
export const NAMESPACE_PROFILES = scoped('target');

/** What a user installs from: the current release's images as `make images` builds them, on the node. */
export interface ReleaseImages {
  operator: string;
  /** The helm runner image the bundle's CSV names (RELATED_IMAGE_HELM), built here: the node pulls it. */
  helm: string;
  catalog: string;
}

export interface Platform {
  velero: Velero;
  csi: CsiInstall;
  helm: HelmEngine;
  olm: Olm;
  images: ReleaseImages;
  /** The operator's pods' names (Running, ready, on the release's operator image). */
  operatorPods: string[];
  stop(): Promise<void>;
}

interface Pod {
  metadata?: { name?: string; deletionTimestamp?: string };
  spec: { containers: { image: string }[] };
  status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
}

export const operatorSubject = {
  kind: 'ServiceAccount',
  name: SERVICE_ACCOUNT,
  namespace: OPERATORS_NAMESPACE,
};

/** One RoleBinding of a profile's ClusterRole to the operator's ServiceAccount, as docs/security/rbac.md shows. */
export function profileBinding(profile: string, namespace: string): Record<string, unknown> {
  const role = profileClusterRoleName(profile);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: role, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [operatorSubject],
  };
}

/**
 * What the namespace admin gives the helm runner for the PostgreSQL chart: Helm's release records and the
 * chart's kinds (the StatefulSet, its Service, Secret and ConfigMap, the hook Job), with list and watch
 * for `--wait` and for the hook Jobs Helm follows.
 */
export function postgresRunnerRole(namespace: string): Record<string, unknown> {
  const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: `${RUNNER_SERVICE_ACCOUNT}-postgres`, namespace },
    rules: [
      { apiGroups: [''], resources: ['secrets', 'configmaps', 'services'], verbs: all },
      { apiGroups: ['apps'], resources: ['statefulsets'], verbs: all },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: all },
      { apiGroups: [''], resources: ['pods', 'persistentvolumeclaims'], verbs: ['get', 'list', 'watch'] },
    ],
  };
}

/**
 * An application namespace as its admin prepares it: the namespace, the runner ServiceAccount with its
 * Role for the chart, and the operator's profiles. Also what the admin re-applies after the namespace
 * was lost, before asking for the restore (the namespace's RBAC is the platform's, not the app's backup).
 */
export async function prepareNamespace(node: RealNode, namespace: string): Promise<void> {
  await apply(node.client, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const role = postgresRunnerRole(namespace);
  for (const o of [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: RUNNER_SERVICE_ACCOUNT, namespace } },
    role,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: (role.metadata as { name: string }).name, namespace },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: (role.metadata as { name: string }).name,
      },
      subjects: [{ kind: 'ServiceAccount', name: RUNNER_SERVICE_ACCOUNT, namespace }],
    },
    ...NAMESPACE_PROFILES.map((p) => profileBinding(p, namespace)),
  ])
    await apply(node.client, o);
}

/** Does the operator's Subscription exist (a journey before this one subscribed)? */
async function subscribed(node: RealNode): Promise<boolean> {
  return node.client
    .request({ method: 'GET', path: subscriptionsPath(OPERATORS_NAMESPACE, SUBSCRIPTION) })
    .then(
      () => true,
      (e: unknown) => (isNotFound(e) ? false : Promise.reject(e)),
    );
}

/** Installs everything; `say` gets one line per stage with its time. */
export async function installPlatform(
  node: RealNode,
  _workdir: string,
  say: (m: string) => void,
): Promise<Platform> {
  const stage = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const r = await f();
    say(`platform: ${what} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  };
  const [velero, csi, helm] = await stage(
    'engines installed (storage, MinIO, Velero, CSI, VolSync, Argo, helm)',
    async () => {
      await ensureStorage(node);
      const v = await ensureVelero(node);
      const c = await installCsi(node, say);
      await ensureVolSync(node, say);
      await installArgo(node, say);
      const h = await installHelm(node, say);
      return [v, c, h] as const;
    },
  );

  // OLM and the images it installs from are the node's (olm-on-node.ts): when the OLM journey ran before
  // on this node, it installed the operator from the same catalog image and upgraded it to this release,
  // and each wait below finds its state at once.
  const shared = await stage('OLM and the operator, helm runner, bundle and catalog images', () =>
    olmOnNode(node, say),
  );
  const images: ReleaseImages = {
    operator: shared.images.operators[CURRENT_VERSION] ?? '',
    helm: shared.images.helm,
    catalog: shared.images.catalogFull,
  };
  try {
    const operatorPods = await stage(
      `the operator ${CURRENT_VERSION} installed by OLM from the catalog image and running`,
      async () => {
        await pointCatalog(node, images.catalog);
        await catalogPodRunning(node, images.catalog);
        await catalogReady(node);
        if (await subscribed(node))
          say(`Subscription ${OPERATORS_NAMESPACE}/${SUBSCRIPTION} exists (the OLM journey's)`);
        else await subscribeOperator(node);
        const world = { client: node.client, say };
        await waitInstallPlanFor(world, csvName(CURRENT_VERSION), 600_000);
        await waitCsvSucceeded(world, csvName(CURRENT_VERSION), 600_000);
        return eventually(
          'the operator pods Running and ready on the release image',
          async () => {
            const pods = (
              await node.client.request<{ items: Pod[] }>({
                method: 'GET',
                path: `/api/v1/namespaces/${OPERATORS_NAMESPACE}/pods`,
              })
            ).items.filter(
              (p) => p.metadata?.name?.startsWith(DEPLOYMENT_NAME) && !p.metadata.deletionTimestamp,
            );
            const ok =
              pods.length > 0 &&
              pods.every(
                (p) =>
                  p.status?.phase === 'Running' &&
                  p.status.containerStatuses?.every((c) => c.ready) &&
                  p.spec.containers[0]?.image === images.operator,
              );
            return ok ? pods.map((p) => p.metadata?.name ?? '') : undefined;
          },
          300_000,
          1000,
        );
      },
    );
    for (const p of VELERO_PROFILES) await apply(node.client, profileBinding(p, velero.namespace));
    return {
      velero,
      csi,
      helm,
      olm: shared.olm,
      images,
      operatorPods,
      // OLM stays: it is the node's, stopped with it.
      stop: () => helm.stop(),
    };
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${await shared.report()}`);
  }
}
