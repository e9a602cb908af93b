// Journey 3 (issue 7): upgrade through a channel edge, with live objects, as docs/upgrade.md describes.
//
// The catalog is first served as it looked when the previous version (0.0.9) was the newest: only its
// bundle and channel entries (test/e2e/support/catalog.ts). A Subscription on the default channel
// installs it. Under it, with the operator's Pods played by host processes on the ServiceAccount's
// token (as in journey 2; webhooks reached through OLM's Service), a Backup runs to Succeeded, a
// second Backup waits for approval, and a CronOperation is scheduled. Then the current version is
// published with its `replaces` edge (a new `opm serve` on the full committed catalog, the
// CatalogSource re-pointed at it, as a catalog image update does), OLM upgrades on its own (Automatic
// approval): the Subscription's currentCSV moves, a new InstallPlan completes, the new CSV replaces the
// old one and reaches Succeeded, the old CSV is deleted. Afterwards every Operation and CronOperation
// is still there with the same uid, spec and status, the CRDs still store only v1alpha1, and the
// upgraded Pods admit, approve and finish the waiting Operation.
//
// The rollout replaces the Deployment's Pods: the old processes' Pod-bound tokens stop working when
// kwok deletes their Pods (at once; a kubelet would first let them end gracefully), so they cannot
// release the Lease and a new Pod leads once it expires (15 s), as after a crash.
//
// Both bundles run the same operator code here (this checkout's operator/src, as host processes):
// what this journey tests is OLM's handling of our bundles across versions (CRDs, CSV replacement,
// RBAC, webhooks, Deployment) and that no stored object is lost or changed, not a code migration.

import { PATCH_TYPES } from '@vworkspace/runtime';
import { describe, expect } from 'vitest';
import { OPERATORS_NAMESPACE } from '../../hack/lib/olm.ts';
import { SERVICE_ACCOUNT } from '../../hack/packaging/csv.ts';
import { DEFAULT_CHANNEL } from '../../hack/packaging/manifests.ts';
import { ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY } from '../../operator/src/api/annotations.ts';
import { ALL_KINDS } from '../../operator/src/api/index.ts';
import type { Operation } from '../../operator/src/api/operation.ts';
import { eventually } from '../support/eventually.ts';
import { EngineSimulator } from '../support/simulator.ts';
import {
  cond,
  createApp,
  createNamespace,
  createOperation,
  cronPath,
  getOperation,
  opPath,
  refusal,
  veleroBackup,
  waitInstanceReady,
  watchOperation,
  watchToEnd,
} from './support/app.ts';
import { catalogVersions } from './support/catalog.ts';
import {
  CURRENT_VERSION,
  csvName,
  getSubscription,
  installOperator,
  waitCsvSucceeded,
  waitInstallPlanFor,
  waitSubscriptionAtLatest,
} from './support/install.ts';
import { type Csv, csvsPath, getOrUndefined, type InstallPlan } from './support/olm-api.ts';
import { OperatorPods, reportAndStopPods } from './support/operator-pods.ts';
import { grantProfile } from './support/rbac.ts';
import { Journey, type World } from './support/world.ts';

const NS = 'team-a';
const VELERO = 'velero';
const versions = catalogVersions();
const previous = versions[versions.indexOf(CURRENT_VERSION) - 1];
if (!previous) throw new Error(`catalog/ has no version before ${CURRENT_VERSION} (${versions.join(', ')})`);
const PREVIOUS: string = previous;

interface Stored {
  metadata: { uid: string; name: string; generation?: number; annotations?: Record<string, string> };
  spec: unknown;
  status?: Record<string, unknown>;
}
interface Crd {
  status?: { storedVersions?: string[] };
}

const CRON = {
  apiVersion: 'ops.vworkspace.io/v1alpha1',
  kind: 'CronOperation',
  metadata: { name: 'nightly' },
  spec: {
    schedule: '30 2 * * *',
    timeZone: 'Europe/Berlin',
    concurrencyPolicy: 'Forbid',
    successfulHistoryLimit: 7,
    operationTemplate: {
      spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'web' }, parameters: { ttl: '168h' } },
    },
  },
};

describe(`journey 3: upgrade ${PREVIOUS} → ${CURRENT_VERSION} through the channel, objects intact`, () => {
  let pods: OperatorPods | undefined;
  let firstPlan: InstallPlan;
  const before = new Map<string, Stored>();
  const journey = new Journey('upgrade', {
    catalogUpTo: PREVIOUS,
    onStart: (world) => reportAndStopPods(world, () => pods),
  });

  const stored = async (world: World): Promise<Map<string, Stored>> => {
    const out = new Map<string, Stored>();
    for (const [kind, path] of [
      ['Operation', opPath(NS)],
      ['CronOperation', cronPath(NS)],
    ] as const) {
      const items = (await world.client.request<{ items: Stored[] }>({ method: 'GET', path })).items;
      for (const o of items) out.set(`${kind} ${o.metadata.name}`, o);
    }
    return out;
  };

  journey.step(
    `with only ${PREVIOUS} published, a Subscription on ${DEFAULT_CHANNEL} installs it`,
    async (world) => {
      const { plan, csv } = await installOperator(world, PREVIOUS, { channel: DEFAULT_CHANNEL });
      firstPlan = plan;
      expect(csv.spec.version).toBe(PREVIOUS);
      expect((await getSubscription(world)).status?.installedCSV).toBe(csvName(PREVIOUS));
    },
  );

  journey.step(
    `under ${PREVIOUS}: a Backup runs to Succeeded, one waits for approval, a CronOperation is scheduled`,
    async (world) => {
      const { client } = world;
      pods = await OperatorPods.start(world, { label: `v${PREVIOUS}` });
      world.say(`operator pods of ${PREVIOUS}: ${pods.pods.map((p) => `${p.name}@${p.ip}`).join(', ')}`);
      await createNamespace(client, VELERO);
      await createApp(world, NS);
      await waitInstanceReady(world, NS);
      await grantProfile(client, 'backup.velero', VELERO, {
        namespace: OPERATORS_NAMESPACE,
        name: SERVICE_ACCOUNT,
      });
      const simulator = new EngineSimulator(client, { namespaces: [VELERO], intervalMs: 500 });
      simulator.start();
      world.cleanup('engine simulator', () => simulator.stop());

      await createOperation(client, NS, 'before-upgrade', veleroBackup('72h'));
      const done = await watchToEnd(world, NS, 'before-upgrade');
      expect(done.status?.phase).toBe('Succeeded');
      await createOperation(client, NS, 'needs-approval', veleroBackup('24h', { requiresApproval: true }));
      await watchOperation(
        world,
        NS,
        'needs-approval',
        (op) => cond(op, 'Blocked')?.reason === 'AwaitingApproval',
      );
      await client.request({ method: 'POST', path: cronPath(NS), body: CRON });
      const cron = await eventually(
        'CronOperation nightly scheduled',
        async () => {
          const c = await client.request<Stored>({ method: 'GET', path: cronPath(NS, 'nightly') });
          return c.status?.nextScheduleTime ? c : undefined;
        },
        120_000,
        500,
      );
      world.say(`CronOperation ${NS}/nightly: next run ${String(cron.status?.nextScheduleTime)}`);
      for (const [k, v] of await stored(world)) before.set(k, v);
      world.say(`recorded ${[...before.keys()].join(', ')}`);
    },
  );

  journey.step(
    `publishing ${CURRENT_VERSION}: OLM upgrades along the replaces edge on its own`,
    async (world) => {
      const { client } = world;
      const published = await world.publish();
      expect(published).toContain(CURRENT_VERSION);
      const plan = await waitInstallPlanFor(world, csvName(CURRENT_VERSION));
      expect(plan.metadata.name).not.toBe(firstPlan.metadata.name);
      expect(plan.spec.approval).toBe('Automatic');
      expect(plan.spec.clusterServiceVersionNames).toEqual([csvName(CURRENT_VERSION)]);
      const csv = await waitCsvSucceeded(world, csvName(CURRENT_VERSION));
      expect(csv.spec.replaces).toBe(csvName(PREVIOUS));
      await eventually(
        `the replaced CSV ${csvName(PREVIOUS)} to be deleted`,
        async () =>
          (await getOrUndefined<Csv>(client, csvsPath(OPERATORS_NAMESPACE, csvName(PREVIOUS)))) === undefined,
        180_000,
        1000,
      );
      world.say(`${csvName(PREVIOUS)} deleted by OLM after the replacement`);
      const sub = await waitSubscriptionAtLatest(world);
      expect(sub.status).toMatchObject({
        currentCSV: csvName(CURRENT_VERSION),
        installedCSV: csvName(CURRENT_VERSION),
      });
    },
  );

  journey.step(
    'every Operation and CronOperation is still there with uid, spec and status intact; CRDs store v1alpha1',
    async (world) => {
      const { client } = world;
      const after = await stored(world);
      expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
      for (const [k, b] of before) {
        const a = after.get(k)!;
        expect(a.metadata.uid, k).toBe(b.metadata.uid);
        expect(a.spec, k).toEqual(b.spec);
        expect(a.status?.phase, k).toEqual(b.status?.phase);
        expect(a.status?.conditions, k).toEqual(b.status?.conditions);
      }
      world.say(`${after.size} objects compared: uid, spec, phase and conditions unchanged`);
      for (const kind of ALL_KINDS) {
        const crd = await client.request<Crd>({
          method: 'GET',
          path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${kind.resource.plural}.${kind.resource.group}`,
        });
        expect(crd.status?.storedVersions, kind.resource.kind).toEqual([kind.resource.version]);
      }
    },
  );

  journey.step(
    `the ${CURRENT_VERSION} Pods take over: the Backup waiting since ${PREVIOUS} is refused (its record names the old key), created again it is approved and runs, the webhook still guards`,
    async (world) => {
      const { client } = world;
      await pods?.stop();
      pods = await OperatorPods.start(world, { label: `v${CURRENT_VERSION}` });
      world.say(
        `operator pods of ${CURRENT_VERSION}: ${pods.pods.map((p) => `${p.name}@${p.ip}`).join(', ')}`,
      );
      const approve = (name: string) =>
        client.request({
          method: 'PATCH',
          path: opPath(NS, name),
          contentType: PATCH_TYPES.merge,
          body: { metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } } },
        });
      // OLM gave the new CSV its own serving certificate, from which the signing key of admission records
      // derives (ADR 0029): the Operation admitted by the old pods and not started cannot be told from a
      // forgery, so it is refused with what to do (docs/upgrade.md), and runs once created again.
      await approve('needs-approval');
      const stale = await watchToEnd(world, NS, 'needs-approval');
      expect(stale.status?.phase).toBe('Failed');
      expect(cond(stale, 'Accepted')?.reason).toBe('NotAdmitted');
      expect(cond(stale, 'Accepted')?.message).toContain('create it again');
      world.say(`needs-approval: ${cond(stale, 'Accepted')?.message}`);
      await createOperation(
        client,
        NS,
        'needs-approval-again',
        veleroBackup('24h', { requiresApproval: true }),
      );
      await approve('needs-approval-again');
      const approved: Operation = await getOperation(client, NS, 'needs-approval-again');
      expect(approved.metadata?.annotations?.[ANNOTATION_APPROVED_BY]).toBeTruthy();
      world.say(
        `approved by ${approved.metadata?.annotations?.[ANNOTATION_APPROVED_BY]} (recorded by the mutating webhook)`,
      );
      const done = await watchToEnd(world, NS, 'needs-approval-again');
      expect(done.status?.phase).toBe('Succeeded');
      const msg = await refusal(createOperation(client, NS, 'bad-ttl', veleroBackup('forever')));
      expect(msg).toMatch(/admission webhook "voperation\.ops\.vworkspace\.io" denied the request/);
      const cron = await client.request<Stored>({ method: 'GET', path: cronPath(NS, 'nightly') });
      expect(cron.spec).toEqual(before.get('CronOperation nightly')?.spec);
      expect(cron.status?.nextScheduleTime).toBeTruthy();
    },
  );
});
