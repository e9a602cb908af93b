// Journey 1 (issue 7): install from the catalog through OLM, as docs/install.md tells a user.
//
// A kwok cluster with OLM's olm and catalog operators (built from the pinned OLM module) and our
// catalog served by `opm serve` behind a CatalogSource (test/e2e/support/world.ts). A Subscription on
// the package's default channel with Automatic approval gets one InstallPlan that installs our bundle
// and, because its olm.gvk dependencies are only met by bundles that provide those APIs, the Velero,
// Argo Workflows and VolSync provider bundles of the e2e catalog (test/e2e/support/providers.ts).
// Bundles carry their manifests embedded (empty image), so OLM unpacks nothing: no bundle Job runs.
// Checked: every CSV Succeeded (kwok makes the Deployments available), the providers' CRDs, and what
// OLM made from our CSV: CRDs, the webhook configurations pointing at its Service with the CA of the
// serving certificate it issued, the RBAC profile ClusterRoles, and the operator's own RBAC (read
// cluster-wide, write nowhere until a profile is granted). No operator process runs in this journey.
import { X509Certificate } from 'node:crypto';
import { resourcePath } from '@vworkspace/runtime';
import { describe, expect } from 'vitest';
import { OLM_NAMESPACE, OPERATORS_NAMESPACE } from '../../hack/lib/olm.ts';
import { csvWebhookDefinitions } from '../../hack/lib/webhooks.ts';
import { DEPLOYMENT_NAME, POD_LABELS, PORTS, SERVICE_ACCOUNT } from '../../hack/packaging/csv.ts';
import { DEFAULT_CHANNEL } from '../../hack/packaging/manifests.ts';
import { ALL_KINDS } from '../../operator/src/api/index.ts';
import { profileClusterRoleName, RBAC_PROFILE_LIST } from '../../operator/src/rbac/profiles.ts';
import {
  CURRENT_VERSION,
  csvName,
  getSubscription,
  subscribeOperator,
  waitCsvSucceeded,
  waitInstallPlanFor,
  waitSubscriptionAtLatest,
} from './support/install.ts';
import { type InstallPlan, list, type Subscription, subscriptionsPath } from './support/olm-api.ts';
import { PROVIDERS, providerCrds, providerCsvName } from './support/providers.ts';
import { serviceAccountCan } from './support/rbac.ts';
import { Journey } from './support/world.ts';

interface Crd {
  metadata: { name: string };
  status?: { storedVersions?: string[]; conditions?: { type: string; status: string }[] };
}
interface WebhookConfiguration {
  metadata: { name: string };
  webhooks: {
    name: string;
    clientConfig: {
      service?: { name: string; namespace: string; path?: string; port?: number };
      caBundle?: string;
    };
    rules: unknown[];
    failurePolicy: string;
  }[];
}

const established = (c: Crd | undefined) =>
  c?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') === true;
const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
const OUR_CSV = csvName(CURRENT_VERSION);
const WEBHOOK_SERVICE = `${DEPLOYMENT_NAME}-service`;

describe('journey 1: install through a Subscription on the default channel', () => {
  const journey = new Journey('install');
  let plan: InstallPlan;

  journey.step(
    'the Subscription gets an Automatic InstallPlan for our bundle and its dependencies',
    async (world) => {
      const { client } = world;
      await subscribeOperator(world);
      plan = await waitInstallPlanFor(world, OUR_CSV);
      expect(plan.spec.approval).toBe('Automatic');
      expect(plan.spec.approved).toBe(true);
      expect([...plan.spec.clusterServiceVersionNames].sort()).toEqual(
        [OUR_CSV, ...PROVIDERS.map(providerCsvName)].sort(),
      );
      // Embedded bundles: OLM had nothing to unpack (no bundle lookups, no unpack Job).
      expect(plan.status?.bundleLookups ?? []).toEqual([]);
      const jobs = await list<{ metadata: { name: string } }>(
        client,
        resourcePath({ group: 'batch', version: 'v1', plural: 'jobs', namespace: OLM_NAMESPACE }),
      );
      expect(jobs.map((j) => j.metadata.name)).toEqual([]);
      const sub = await getSubscription(world);
      world.say(
        `Subscription on channel ${sub.spec.channel ?? '(unset)'}: current ${sub.status?.currentCSV}`,
      );
    },
  );

  journey.step(
    'OLM resolved each olm.gvk dependency to a provider bundle: Subscription, CSV Succeeded, CRDs',
    async (world) => {
      const { client } = world;
      const subs = await list<Subscription>(client, subscriptionsPath(OPERATORS_NAMESPACE));
      for (const p of PROVIDERS) {
        const sub = subs.find((s) => s.spec.name === p.package);
        expect(sub, `OLM-created Subscription for ${p.package}`).toBeDefined();
        world.say(`dependency ${p.package}: Subscription ${sub?.metadata.name} created by OLM`);
        await waitCsvSucceeded(world, providerCsvName(p));
        for (const crd of providerCrds(p)) {
          const got = await client.request<Crd>({ method: 'GET', path: crdPath(crd.metadata.name) });
          expect(established(got), `${crd.metadata.name} Established`).toBe(true);
        }
        world.say(
          `  CRDs ${providerCrds(p)
            .map((c) => c.metadata.name)
            .join(', ')} established`,
        );
      }
    },
  );

  journey.step(
    `our CSV ${OUR_CSV} (head of the default channel ${DEFAULT_CHANNEL}) reaches Succeeded`,
    async (world) => {
      const { client } = world;
      const csv = await waitCsvSucceeded(world, OUR_CSV);
      expect(csv.spec.version).toBe(CURRENT_VERSION);
      const sub = await waitSubscriptionAtLatest(world);
      expect(sub.status).toMatchObject({ currentCSV: OUR_CSV, installedCSV: OUR_CSV });
      const d = await client.request<{ status?: { availableReplicas?: number }; spec: { replicas: number } }>(
        {
          method: 'GET',
          path: resourcePath(
            { group: 'apps', version: 'v1', plural: 'deployments', namespace: OPERATORS_NAMESPACE },
            DEPLOYMENT_NAME,
          ),
        },
      );
      expect(d.status?.availableReplicas).toBe(d.spec.replicas);
      world.say(
        `Deployment ${DEPLOYMENT_NAME}: ${d.status?.availableReplicas}/${d.spec.replicas} available (kwok pods)`,
      );
    },
  );

  journey.step(
    'our CRDs, the webhook configurations on OLM’s Service and CA, and the RBAC profile ClusterRoles exist',
    async (world) => {
      const { client } = world;
      for (const k of ALL_KINDS) {
        const crd = await client.request<Crd>({
          method: 'GET',
          path: crdPath(`${k.resource.plural}.${k.resource.group}`),
        });
        expect(established(crd)).toBe(true);
        expect(crd.status?.storedVersions).toEqual([k.resource.version]);
      }
      world.say(`CRDs: ${ALL_KINDS.map((k) => `${k.resource.plural}.${k.resource.group}`).join(', ')}`);

      // The serving certificate OLM issued for the Service, and the CA it injected into every webhook.
      const secret = await client.request<{ data: Record<string, string> }>({
        method: 'GET',
        path: resourcePath(
          { group: '', version: 'v1', plural: 'secrets', namespace: OPERATORS_NAMESPACE },
          `${WEBHOOK_SERVICE}-cert`,
        ),
      });
      const serving = new X509Certificate(Buffer.from(secret.data['tls.crt'] ?? '', 'base64'));
      expect(serving.subjectAltName).toContain(`DNS:${WEBHOOK_SERVICE}.${OPERATORS_NAMESPACE}.svc`);
      const svc = await client.request<{
        spec: { selector: Record<string, string>; ports: { port: number; targetPort: number }[] };
      }>({
        method: 'GET',
        path: resourcePath(
          { group: '', version: 'v1', plural: 'services', namespace: OPERATORS_NAMESPACE },
          WEBHOOK_SERVICE,
        ),
      });
      expect(svc.spec.selector).toEqual(POD_LABELS);
      expect(svc.spec.ports).toContainEqual(
        expect.objectContaining({ port: PORTS.webhook, targetPort: PORTS.webhook }),
      );

      const defs = csvWebhookDefinitions();
      const configs = [
        ...(await list<WebhookConfiguration>(
          client,
          `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?labelSelector=olm.owner%3D${OUR_CSV}`,
        )),
        ...(await list<WebhookConfiguration>(
          client,
          `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?labelSelector=olm.owner%3D${OUR_CSV}`,
        )),
      ];
      const hooks = configs.flatMap((c) => c.webhooks);
      expect(hooks.map((h) => h.name).sort()).toEqual(defs.map((d) => d.generateName).sort());
      for (const d of defs) {
        const h = hooks.find((x) => x.name === d.generateName)!;
        expect(h.clientConfig.service).toMatchObject({
          name: WEBHOOK_SERVICE,
          namespace: OPERATORS_NAMESPACE,
          path: d.webhookPath,
          port: PORTS.webhook,
        });
        expect(h.rules).toMatchObject(d.rules);
        // As the CSV declares it: Fail, except the ApplicationInstance check the controller also enforces.
        expect(h.failurePolicy).toBe(d.failurePolicy);
        const ca = new X509Certificate(Buffer.from(h.clientConfig.caBundle ?? '', 'base64'));
        expect(serving.verify(ca.publicKey), `${h.name}: caBundle signs the serving certificate`).toBe(true);
      }
      world.say(
        `webhooks (${configs.length} configurations): ${hooks.map((h) => `${h.name} → ${WEBHOOK_SERVICE}${h.clientConfig.service?.path}`).join(', ')}`,
      );

      for (const p of RBAC_PROFILE_LIST) {
        await client.request({
          method: 'GET',
          path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${profileClusterRoleName(p.id)}`,
        });
      }
      world.say(
        `RBAC profile ClusterRoles: ${RBAC_PROFILE_LIST.map((p) => profileClusterRoleName(p.id)).join(', ')}`,
      );
    },
  );

  journey.step(
    'the operator’s ServiceAccount got exactly the CSV’s permissions: read cluster-wide, no writes in app namespaces',
    async (world) => {
      const { client } = world;
      const can = (a: Parameters<typeof serviceAccountCan>[3]) =>
        serviceAccountCan(client, OPERATORS_NAMESPACE, SERVICE_ACCOUNT, a);
      const checks: [string, Parameters<typeof serviceAccountCan>[3], boolean][] = [
        [
          'watch Operations everywhere',
          { group: 'ops.vworkspace.io', resource: 'operations', verb: 'watch' },
          true,
        ],
        [
          'patch Operation status',
          { group: 'ops.vworkspace.io', resource: 'operations/status', verb: 'patch' },
          true,
        ],
        ['list Helm release Secrets', { group: '', resource: 'secrets', verb: 'list' }, true],
        [
          'update its Lease',
          {
            namespace: OPERATORS_NAMESPACE,
            group: 'coordination.k8s.io',
            resource: 'leases',
            verb: 'update',
          },
          true,
        ],
        [
          'create Jobs in default',
          { namespace: 'default', group: 'batch', resource: 'jobs', verb: 'create' },
          false,
        ],
        [
          'create velero Backups',
          { namespace: 'velero', group: 'velero.io', resource: 'backups', verb: 'create' },
          false,
        ],
        ['get Secrets', { namespace: 'default', group: '', resource: 'secrets', verb: 'get' }, false],
      ];
      for (const [what, a, want] of checks) {
        expect(await can(a), what).toBe(want);
        world.say(`  ${SERVICE_ACCOUNT} ${want ? 'may' : 'may not'} ${what}`);
      }
    },
  );
});
