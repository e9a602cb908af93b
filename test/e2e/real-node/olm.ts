// OLM on a real node: nothing is played by host processes but OLM's own two operators (olm-on-node.ts,
// shared with the production journey). The catalog is served by a real CatalogSource pod from the catalog
// image; OLM unpacks our bundle image with its real unpack Job (util image with cpb, the bundle image, opm
// from the catalog image); the operator's Deployment runs the operator image as a real pod (uid 65532,
// read-only root, in a namespace that enforces the restricted Pod Security Standard); the API server
// reaches its webhooks through OLM's Service with OLM's CA; the channel upgrade replaces the pod with the
// next bundle's image. Images are built by the project's image code and pushed to the node's loopback
// registry (olm-images.ts).
//
// Two parts on real-node.test.ts's node. First, the engines' dependencies (ADR 0031): the node has the
// engines' CRDs as their Helm charts leave them, and a catalog with our package and no provider leaves a
// Subscription at ConstraintsNotSatisfiable; packaging/olm/engine-apis.yaml applied in its namespace makes
// OLM resolve our bundle alone (nothing installed: the namespace goes away whole). Then, after the journeys
// whose Operation controller runs in the test process, the install: catalogs with provider bundles,
// through which OLM installs the engines with us, and the operator pod that then stays for the production
// journey (ADR 0048).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound, PATCH_TYPES } from '@vworkspace/runtime';
import { beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ROOT } from '../../../hack/bundle.ts';
import { OLM_NAMESPACE, OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { csvName, DEPLOYMENT_NAME, PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { ENGINE_APIS_PATH, engineApisCsvName } from '../../../hack/packaging/engine-apis.ts';
import { dependencies } from '../../../hack/packaging/manifests.ts';
import { eventually } from '../../support/eventually.ts';
import { createOperation, refusal, veleroBackup } from '../support/app.ts';
import {
  CURRENT_VERSION,
  getSubscription,
  type OlmUser,
  ownNamespaceGroup,
  SUBSCRIPTION,
  waitCsvSucceeded,
  waitInstallPlanFor,
} from '../support/install.ts';
import {
  csvsPath,
  type InstallPlan,
  installPlansPath,
  subscribe,
  subscriptionsPath,
} from '../support/olm-api.ts';
import { PROVIDERS, providerCsvName } from '../support/providers.ts';
import { CATALOG_SOURCE } from '../support/world.ts';
import { catalogPodRunning, catalogReady, pointCatalog, subscribeOperator } from './catalog-source.ts';
import type { OlmImages } from './olm-images.ts';
import { type NodeOlm, OLDER, olmOnNode } from './olm-on-node.ts';

/** A namespace whose admin installed the engines from Helm charts: their CRDs exist, no OLM provider. */
const HELM_ENGINES = 'vws-helm-engines';

interface RequirementStatus {
  group: string;
  version: string;
  kind: string;
  status: string;
  message?: string;
}

interface Pod extends KubernetesObject {
  spec: {
    containers: { name: string; image: string; securityContext?: Record<string, unknown> }[];
    initContainers?: { name: string; image: string }[];
    securityContext?: Record<string, unknown>;
  };
  status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
}

/** One part of the journey: its describe, with the node, OLM on it and the images set before its tests. */
function part(name: string, theNode: () => RealNode, say: (line: string) => void, tests: (on: On) => void) {
  describe(name, () => {
    const on = {} as On;
    beforeAll(async () => {
      on.node = theNode();
      on.world = { client: on.node.client, say };
      on.olm = await olmOnNode(on.node, say);
      on.images = on.olm.images;
    });
    tests(on);
  });
}

interface On {
  node: RealNode;
  world: OlmUser;
  olm: NodeOlm;
  images: OlmImages;
}

async function pods(node: RealNode, ns: string): Promise<Pod[]> {
  return (
    await node.client.request<{ items: Pod[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` })
  ).items;
}

const ready = (p: Pod) => p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready);

/**
 * The engines' dependencies: a catalog without providers, then the way out. Installs nothing, so it runs
 * before the journeys whose Operation controller runs in the test process.
 */
export function olmDependenciesJourney(theNode: () => RealNode, say: (line: string) => void): void {
  part("OLM on a real node: the engines' APIs without a provider", theNode, say, (on) => {
    it('engines from Helm, no provider in any catalog: the Subscription stays at constraints not satisfiable', async () => {
      await pointCatalog(on.node, on.images.catalogWithoutProviders);
      await catalogPodRunning(on.node, on.images.catalogWithoutProviders);
      await catalogReady(on.node);
      // The engines' CRDs are on the node, as their Helm charts install them (hack/lib/real-node.ts).
      for (const g of dependencies().map((d) => d.value)) {
        const kinds = await on.node.client.request<{ resources: { kind: string }[] }>({
          method: 'GET',
          path: `/apis/${g.group}/${g.version}`,
        });
        expect(
          kinds.resources.map((r) => r.kind),
          `${g.group}/${g.version}`,
        ).toContain(g.kind);
      }
      await on.node.client.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: HELM_ENGINES } },
      });
      await ownNamespaceGroup(on.world, HELM_ENGINES);
      await subscribe(
        on.node.client,
        SUBSCRIPTION,
        {
          name: PACKAGE_NAME,
          channel: 'stable-v0',
          source: CATALOG_SOURCE,
          sourceNamespace: OLM_NAMESPACE,
          installPlanApproval: 'Manual',
        },
        HELM_ENGINES,
      );
      const failed = await eventually(
        'the Subscription to report ResolutionFailed',
        async () =>
          (await getSubscription(on.world, SUBSCRIPTION, HELM_ENGINES)).status?.conditions?.find(
            (c) => c.type === 'ResolutionFailed' && c.status === 'True',
          ),
        300_000,
        1000,
      );
      say(
        `Subscription ${HELM_ENGINES}/${SUBSCRIPTION}: ResolutionFailed ${failed.reason}: ${failed.message}`,
      );
      expect(failed.reason).toBe('ConstraintsNotSatisfiable');
      expect(failed.message).toMatch(/constraints not satisfiable/);
      expect(failed.message).toMatch(/velero\.io|argoproj\.io|volsync\.backube/);
      expect(
        (await getSubscription(on.world, SUBSCRIPTION, HELM_ENGINES)).status?.installPlanRef,
      ).toBeUndefined();
    });

    it('the way out: the engine-APIs CSV says the APIs exist, and OLM resolves the operator without a provider', async () => {
      // What docs/install.md tells the admin to apply in the operator's namespace before subscribing.
      const csv = YAML.parse(readFileSync(join(ROOT, ENGINE_APIS_PATH), 'utf8')) as Record<string, unknown>;
      await on.node.client.request({ method: 'POST', path: csvsPath(HELM_ENGINES), body: csv });
      const marker = await eventually(
        'the engine-APIs CSV Succeeded',
        async () => {
          const c = await on.node.client.request<{
            status?: { phase?: string; requirementStatus?: RequirementStatus[] };
          }>({ method: 'GET', path: csvsPath(HELM_ENGINES, engineApisCsvName(CURRENT_VERSION)) });
          return c.status?.phase === 'Succeeded' ? c : undefined;
        },
        180_000,
        1000,
      );
      // Its requirements: minKubeVersion, and each engine API as a native API.
      const native = (marker.status?.requirementStatus ?? []).filter((r) =>
        dependencies().some((d) => d.value.group === r.group && d.value.kind === r.kind),
      );
      say(
        `${engineApisCsvName(CURRENT_VERSION)}: Succeeded; ${native.map((r) => `${r.group}/${r.version} ${r.kind}: ${r.message}`).join('; ')}`,
      );
      expect(
        native.map((r) => ({ group: r.group, version: r.version, kind: r.kind, status: r.status })),
      ).toEqual(dependencies().map((d) => ({ ...d.value, status: 'Present' })));
      // OLM resolves again: one InstallPlan holding our CSV alone (no provider to install). Usually on its
      // own within seconds; while OLM's retry backoff for the failed namespace lasts it may not look for
      // minutes (seen once in four runs), and then the admin's step of docs/install.md — any change to
      // the Subscription — makes it resolve at once.
      const waitedFrom = Date.now();
      let nudged = false;
      const sub = await eventually(
        'the Subscription to name an InstallPlan',
        async () => {
          const s = await getSubscription(on.world, SUBSCRIPTION, HELM_ENGINES);
          if (s.status?.installPlanRef) return s;
          if (!nudged && Date.now() - waitedFrom > 60_000) {
            nudged = true;
            say(
              'no InstallPlan a minute after the engine-APIs CSV: annotating the Subscription (docs/install.md)',
            );
            await on.node.client.request({
              method: 'PATCH',
              path: subscriptionsPath(HELM_ENGINES, SUBSCRIPTION),
              contentType: PATCH_TYPES.merge,
              body: { metadata: { annotations: { 'vworkspace.io/resolve': String(Date.now()) } } },
            });
          }
          return undefined;
        },
        300_000,
        1000,
      );
      const plan = await on.node.client.request<InstallPlan>({
        method: 'GET',
        path: installPlansPath(HELM_ENGINES, sub.status?.installPlanRef?.name),
      });
      say(
        `InstallPlan ${plan.metadata.name}: CSVs ${plan.spec.clusterServiceVersionNames.join(', ')}, approval ${plan.spec.approval}`,
      );
      expect(plan.spec.clusterServiceVersionNames).toEqual([csvName(CURRENT_VERSION)]);
      expect(sub.status?.conditions?.find((c) => c.type === 'ResolutionFailed')?.status ?? 'False').toBe(
        'False',
      );
      // Nothing of it installed (Manual approval): the namespace goes away whole before the next install.
      await on.node.client.request({ method: 'DELETE', path: `/api/v1/namespaces/${HELM_ENGINES}` });
      await eventually(
        `namespace ${HELM_ENGINES} gone`,
        () =>
          on.node.client.request({ method: 'GET', path: `/api/v1/namespaces/${HELM_ENGINES}` }).then(
            () => undefined,
            (e: unknown) => (isNotFound(e) ? true : Promise.reject(e)),
          ),
        180_000,
        1000,
      );
    });
  });
}

/**
 * The install from the catalog image and the channel upgrade. The operator pod it leaves reconciles every
 * Operation from then on: it runs after the journeys whose Operation controller runs in the test
 * process, and the production journey then uses that pod.
 */
export function olmInstallJourney(theNode: () => RealNode, say: (line: string) => void): void {
  part('OLM on a real node: the operator from the catalog image', theNode, say, (on) => {
    const operatorPods = async () =>
      (await pods(on.node, OPERATORS_NAMESPACE)).filter((p) => p.metadata?.name?.startsWith(DEPLOYMENT_NAME));
    it('serves the catalog from a real CatalogSource pod running the catalog image', async () => {
      await pointCatalog(on.node, on.images.catalogUpTo);
      const pod = await catalogPodRunning(on.node, on.images.catalogUpTo);
      await catalogReady(on.node).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await on.olm.report()}`);
      });
      say(`CatalogSource pod ${pod.metadata?.name} Running, OLM connected`);
      expect(
        on.node.podProcesses((argv) => argv[0] === '/bin/opm' && argv[1] === 'serve').length,
      ).toBeGreaterThan(0);
    });

    it(`installs ${OLDER}: the bundle image unpacked by OLM's Job, the operator image as a real restricted pod`, async () => {
      await subscribeOperator(on.node);
      const plan = await waitInstallPlanFor(on.world, csvName(OLDER), 600_000).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await on.olm.report()}`);
      });
      // The bundle came from its image: a bundle lookup in the plan and OLM's unpack Job in the catalog's
      // namespace, whose pull container ran the bundle image.
      expect(JSON.stringify(plan.status ?? {})).toContain(on.images.bundles[OLDER]);
      const unpack = (await pods(on.node, OLM_NAMESPACE)).filter((p) =>
        p.spec.initContainers?.some((c) => c.image === on.images.bundles[OLDER]),
      );
      expect(unpack.length, 'an unpack pod ran the bundle image').toBeGreaterThan(0);
      await waitCsvSucceeded(on.world, csvName(OLDER), 600_000);
      // The dependencies' Deployments really run too (their containers run the node's busybox), VolSync's
      // own bundle among them: its CSV reaches Succeeded only when its pod is ready.
      for (const p of PROVIDERS) await waitCsvSucceeded(on.world, providerCsvName(p), 300_000);
      const [pod] = await eventually(
        'the operator pods Running and ready',
        async () => {
          const ps = await operatorPods();
          return ps.length > 0 && ps.every(ready) ? ps : undefined;
        },
        300_000,
        1000,
      );
      expect(pod?.spec.containers[0]?.image).toBe(on.images.operators[OLDER]);
      expect(pod?.spec.containers[0]?.securityContext).toMatchObject({ readOnlyRootFilesystem: true });
      // The process on the host: the operator's node runs as uid 65532.
      const [pid] = on.node.podProcesses((argv) => argv.includes('operator/src/main.ts'));
      expect(pid, 'the operator process on the host').toBeDefined();
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+65532\s+65532/m);
    });

    it("the API server reaches the operator's webhooks through OLM's Service", async () => {
      await on.node.client.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } },
      });
      const msg = await refusal(
        createOperation(on.node.client, 'team-a', 'bad-ttl', veleroBackup('forever')),
      );
      say(`invalid parameter: ${msg}`);
      expect(msg).toMatch(/admission webhook "voperation\.ops\.vworkspace\.io" denied the request/);
    });

    it(`the channel upgrade to ${CURRENT_VERSION} replaces the pod with the next bundle's image`, async () => {
      const before = (await operatorPods()).map((p) => p.metadata?.uid);
      await pointCatalog(on.node, on.images.catalogFull);
      await catalogPodRunning(on.node, on.images.catalogFull);
      await catalogReady(on.node);
      await waitInstallPlanFor(on.world, csvName(CURRENT_VERSION), 600_000).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await on.olm.report()}`);
      });
      await waitCsvSucceeded(on.world, csvName(CURRENT_VERSION), 600_000);
      const after = await eventually(
        'only new operator pods, Running and ready, on the new image',
        async () => {
          const ps = await operatorPods();
          return ps.length > 0 &&
            ps.every((p) => ready(p) && !before.includes(p.metadata?.uid) && !p.metadata?.deletionTimestamp)
            ? ps
            : undefined;
        },
        300_000,
        1000,
      );
      for (const p of after) expect(p.spec.containers[0]?.image).toBe(on.images.operators[CURRENT_VERSION]);
      expect(on.images.operators[CURRENT_VERSION]).not.toBe(on.images.operators[OLDER]);
    });
  });
}
