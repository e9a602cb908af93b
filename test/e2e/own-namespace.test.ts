// Journey 5 (issue 14): the OwnNamespace install mode, beside journeys 1-3's AllNamespaces installs.
//
// A namespace `team-own` with an OperatorGroup that targets only itself, and the Subscription there:
// OLM installs our bundle and its dependencies' provider bundles into that namespace (VolSync's own
// bundle supports only AllNamespaces, so OLM fails its CSV there: UnsupportedOperatorGroup). What OLM then
// does with an OwnNamespace install, checked as it happens: the CSV's `permissions` become Roles in
// team-own (in an AllNamespaces install OLM lifts them to ClusterRoles), its `clusterPermissions`
// stay the only cluster-wide grant, the webhook configurations select the OperatorGroup's namespaces
// only, and the Pod template carries `olm.targetNamespaces`, which the Deployment turns into
// WATCH_NAMESPACE. The Pods are played by host processes as in journey 2 (operator-pods.ts): they
// become ready on those Roles alone (an informer watching every namespace would be refused), admit
// and run a RunCommand in team-own, and leave an Operation created in another namespace alone: the
// API server never calls their webhook there, and no reconciler touches it.
import { readFileSync } from 'node:fs';
import { resourcePath } from '@vworkspace/runtime';
import { describe, expect } from 'vitest';
import { SERVICE_ACCOUNT, TARGET_NAMESPACES_ANNOTATION } from '../../hack/packaging/csv.ts';
import { eventually } from '../support/eventually.ts';
import {
  APP,
  BUSYBOX,
  cond,
  createApp,
  createNamespace,
  createOperation,
  getOperation,
  refusal,
  veleroBackup,
  waitInstanceReady,
  watchToEnd,
} from './support/app.ts';
import { CURRENT_VERSION, csvName, installOperator, ownNamespaceGroup } from './support/install.ts';
import { type Csv, csvsPath, getOrUndefined, list } from './support/olm-api.ts';
import { OperatorPods, reportAndStopPods } from './support/operator-pods.ts';
import { PROVIDERS, providerCsvName } from './support/providers.ts';
import { grantProfile, serviceAccountCan } from './support/rbac.ts';
import { Journey } from './support/world.ts';

const OWN = 'team-own';
const OTHER = 'team-other';
const OUR_CSV = csvName(CURRENT_VERSION);

interface WebhookConfiguration {
  webhooks: { name: string; namespaceSelector?: { matchLabels?: Record<string, string> } }[];
}

describe('journey 5: an OwnNamespace install watches and admits only its namespace', () => {
  let pods: OperatorPods | undefined;
  const journey = new Journey('own-namespace', {
    onStart: (world) => reportAndStopPods(world, () => pods),
  });

  journey.step(
    `OLM installs the operator into ${OWN} for an OperatorGroup targeting ${OWN}`,
    async (world) => {
      const { client } = world;
      await createNamespace(client, OWN);
      await ownNamespaceGroup(world, OWN);
      const { plan } = await installOperator(world, CURRENT_VERSION, { namespace: OWN });
      world.say(`installed: ${plan.spec.clusterServiceVersionNames.join(', ')}`);
      const d = await client.request<{
        spec: { template: { metadata: { annotations?: Record<string, string> } } };
      }>({
        method: 'GET',
        path: resourcePath(
          { group: 'apps', version: 'v1', plural: 'deployments', namespace: OWN },
          'vworkspace-operator',
        ),
      });
      expect(d.spec.template.metadata.annotations?.[TARGET_NAMESPACES_ANNOTATION]).toBe(OWN);
    },
  );

  journey.step(
    `the dependencies in ${OWN}: the stand-ins run; VolSync's own bundle (AllNamespaces only) is refused there`,
    async (world) => {
      const { client } = world;
      for (const p of PROVIDERS) {
        const name = providerCsvName(p);
        // VolSync's upstream CSV supports only the AllNamespaces install mode: OLM still resolves it into
        // this namespace (dependencies resolve per namespace) and then fails it for this OperatorGroup.
        const refused = p.upstreamBundle !== undefined;
        const csv = await eventually(
          `CSV ${name} in ${OWN} ${refused ? 'Failed' : 'Succeeded'}`,
          async () => {
            const c = await getOrUndefined<Csv>(client, csvsPath(OWN, name));
            return c?.status?.phase === (refused ? 'Failed' : 'Succeeded') ? c : undefined;
          },
          120_000,
          500,
        );
        if (refused)
          expect(csv.status).toMatchObject({
            reason: 'UnsupportedOperatorGroup',
            message: expect.stringContaining('OwnNamespace InstallModeType not supported'),
          });
        world.say(
          `dependency ${name} in ${OWN}: ${csv.status?.phase} (${csv.status?.reason}: ${csv.status?.message})`,
        );
      }
    },
  );

  journey.step(
    `the CSV's permissions are Roles in ${OWN}; nothing namespaced is granted cluster-wide`,
    async (world) => {
      const { client } = world;
      const can = (a: Parameters<typeof serviceAccountCan>[3]) =>
        serviceAccountCan(client, OWN, SERVICE_ACCOUNT, a);
      const checks: [string, Parameters<typeof serviceAccountCan>[3], boolean][] = [
        [
          `watch Operations in ${OWN}`,
          { namespace: OWN, group: 'ops.vworkspace.io', resource: 'operations', verb: 'watch' },
          true,
        ],
        [
          `list Helm release Secrets in ${OWN}`,
          { namespace: OWN, group: '', resource: 'secrets', verb: 'list' },
          true,
        ],
        [
          `update its Lease in ${OWN}`,
          { namespace: OWN, group: 'coordination.k8s.io', resource: 'leases', verb: 'update' },
          true,
        ],
        [
          `watch Operations in ${OTHER}`,
          { namespace: OTHER, group: 'ops.vworkspace.io', resource: 'operations', verb: 'watch' },
          false,
        ],
        [
          'watch Operations cluster-wide',
          { group: 'ops.vworkspace.io', resource: 'operations', verb: 'watch' },
          false,
        ],
        [
          `list Secrets in ${OTHER}`,
          { namespace: OTHER, group: '', resource: 'secrets', verb: 'list' },
          false,
        ],
        [
          'create SubjectAccessReviews (cluster-wide: no Role can grant it)',
          { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' },
          true,
        ],
      ];
      for (const [what, a, want] of checks) {
        expect(await can(a), what).toBe(want);
        world.say(`  ${SERVICE_ACCOUNT} ${want ? 'may' : 'may not'} ${what}`);
      }
      const roles = await list<{ metadata: { name: string }; rules: unknown[] }>(
        client,
        `/apis/rbac.authorization.k8s.io/v1/namespaces/${OWN}/roles?labelSelector=olm.owner%3D${OUR_CSV}`,
      );
      expect(roles.length).toBeGreaterThan(0);
      world.say(
        `Roles OLM made in ${OWN} from the CSV's permissions: ${roles.map((r) => r.metadata.name).join(', ')}`,
      );
      const configs = await list<WebhookConfiguration>(
        client,
        `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?labelSelector=olm.owner%3D${OUR_CSV}`,
      );
      for (const h of configs.flatMap((c) => c.webhooks)) {
        const labels = Object.keys(h.namespaceSelector?.matchLabels ?? {});
        expect(
          labels.some((l) => l.startsWith('olm.operatorgroup.uid/')),
          `${h.name} namespaceSelector`,
        ).toBe(true);
      }
      world.say(
        'webhook configurations select the OperatorGroup’s namespaces only (olm.operatorgroup.uid/… label)',
      );
    },
  );

  journey.step(`the Pods run with WATCH_NAMESPACE=${OWN} and become ready on those Roles`, async (world) => {
    pods = await OperatorPods.start(world, { namespace: OWN });
    for (const p of pods.pods) {
      world.say(`operator pod ${p.name} at ${p.ip} → ${p.proc.logPath}`);
      expect(readFileSync(p.proc.logPath, 'utf8')).toContain(`"watchNamespaces":["${OWN}"]`);
    }
    expect(await pods.leader()).toBeDefined();
    expect(pods.serviceAccount).toBe(`system:serviceaccount:${OWN}:${SERVICE_ACCOUNT}`);
  });

  journey.step(
    `admits and runs a RunCommand in ${OWN}; an Operation in ${OTHER} is neither judged nor run`,
    async (world) => {
      const { client } = world;
      await createApp(world, OWN);
      await waitInstanceReady(world, OWN);
      const denied = await refusal(createOperation(client, OWN, 'bad-ttl', veleroBackup('forever')));
      expect(denied).toMatch(/admission webhook "voperation\.ops\.vworkspace\.io" denied the request/);
      // The same invalid request in an unwatched namespace: no webhook is called there (it was denied in
      // team-own just now), and while team-own's Operation runs to the end below nothing reconciles it.
      await createNamespace(client, OTHER);
      await createOperation(client, OTHER, 'bad-ttl', veleroBackup('forever'));
      await grantProfile(client, 'runCommand.job', OWN, { namespace: OWN, name: SERVICE_ACCOUNT });
      await createOperation(client, OWN, 'hello', {
        type: 'RunCommand',
        engine: 'job',
        parameters: { image: BUSYBOX, command: ['sh', '-c', `echo hello from ${APP}`] },
      });
      const ran = await watchToEnd(world, OWN, 'hello');
      expect(ran.status?.phase).toBe('Succeeded');
      expect(cond(ran, 'Succeeded')?.reason).toBe('JobSucceeded');
      const untouched = await getOperation(client, OTHER, 'bad-ttl');
      expect(untouched.status).toBeUndefined();
      world.say(
        `${OTHER}/bad-ttl: created without our webhook, no status: this install does not watch ${OTHER}`,
      );
    },
  );
});
