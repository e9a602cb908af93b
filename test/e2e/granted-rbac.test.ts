// Journey 2 (issue 7): the operator runs with exactly the RBAC OLM created, and its webhooks are
// reached the way the API server reaches them on a real cluster.
//
// OLM installs the current version (as in journey 1). kwok runs no containers, so each Pod of the
// Deployment OLM created is played by `node operator/src/main.ts` on this machine
// (test/e2e/support/operator-pods.ts): the container's env, the serving certificate from the Secret
// OLM mounts, and a token of the ServiceAccount OLM created (TokenRequest bound to the Pod, what the
// kubelet projects) — never the admin kubeconfig. Pod IPs come from a range routed to this machine and
// the API server runs with --enable-aggregator-routing, so an admission call goes: webhook
// configuration (OLM's) → Service `vworkspace-operator-service` (OLM's) → EndpointSlice → pod IP:9443
// → the process. Before the processes start, the same request fails to reach the webhook: the
// negative control that the path really goes through the Pods.
//
// Then least privilege end to end: a velero Backup waits at Accepted=False/RbacProfileMissing until
// the backup.velero profile is granted (bound in the Velero namespace, where its rules apply), then
// runs to Succeeded (Velero is not running: test/support/simulator.ts moves the real velero.io Backup
// through Velero's phases); a RunCommand runs a real Job (kwok completes it) in the namespace where
// runCommand.job is granted and stops at Accepted=False/RbacProfileMissing, creating nothing, in the
// namespace where it is not. Last, a CronOperation's Operation — created by the operator's ServiceAccount,
// which holds no type verb — is admitted on the CronOperation's authority (ADR 0011) and succeeds.
import { KubeConfig } from '@kubernetes/client-node';
import { type KubeClient, resourcePath } from '@vworkspace/runtime';
import { describe, expect } from 'vitest';
import { OPERATORS_NAMESPACE } from '../../hack/lib/olm.ts';
import { PORTS, SERVICE_ACCOUNT } from '../../hack/packaging/csv.ts';
import {
  ANNOTATION_CREATED_BY,
  ANNOTATION_RUN_NOW,
  LABEL_CRON_OPERATION,
  LABEL_OPERATION,
} from '../../operator/src/api/annotations.ts';
import { CRON_OPERATION } from '../../operator/src/api/constants.ts';
import type { CronOperation } from '../../operator/src/api/cronoperation.ts';
import type { Operation } from '../../operator/src/api/operation.ts';
import { testClient } from '../support/clients.ts';
import { eventually } from '../support/eventually.ts';
import { EngineSimulator } from '../support/simulator.ts';
import {
  APP,
  BUSYBOX,
  cond,
  createApp,
  createNamespace,
  createOperation,
  cronPath,
  opPath,
  refusal,
  veleroBackup,
  waitInstanceReady,
  waitRbacProfileMissing,
  watchToEnd,
} from './support/app.ts';
import { CURRENT_VERSION, installOperator } from './support/install.ts';
import { list } from './support/olm-api.ts';
import { OperatorPods, reportAndStopPods } from './support/operator-pods.ts';
import { grantProfile } from './support/rbac.ts';
import { Journey } from './support/world.ts';

const TEAM_A = 'team-a';
const TEAM_B = 'team-b';
const VELERO = 'velero';
const OPERATOR_SA = { namespace: OPERATORS_NAMESPACE, name: SERVICE_ACCOUNT };

function clientFor(kubeconfigPath: string): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return testClient(kc);
}

const children = async (client: KubeClient, ns: string, group: string, version: string, plural: string) =>
  list<{ metadata: { name: string; labels?: Record<string, string> } }>(
    client,
    `${resourcePath({ group, version, plural, namespace: ns })}?labelSelector=${encodeURIComponent(LABEL_OPERATION)}`,
  );

describe('journey 2: the operator with the RBAC OLM granted, webhooks through OLM’s Service', () => {
  let pods: OperatorPods | undefined;
  const journey = new Journey('granted-rbac', {
    onStart: (world) => reportAndStopPods(world, () => pods),
  });

  journey.step(
    'OLM installs the operator; with no Pod serving, admission cannot reach the webhook',
    async (world) => {
      const { client } = world;
      await installOperator(world, CURRENT_VERSION);
      // The bundle's PodDisruptionBudget, created by OLM beside the Deployment (the NetworkPolicy ships
      // beside the bundle: docs/security/network.md).
      const pdbs = await list<{ metadata: { name: string } }>(
        client,
        resourcePath({
          group: 'policy',
          version: 'v1',
          plural: 'poddisruptionbudgets',
          namespace: OPERATORS_NAMESPACE,
        }),
      );
      expect(pdbs.map((o) => o.metadata.name)).toContain('vworkspace-operator');
      world.say('OLM created the bundle’s PodDisruptionBudget');
      for (const ns of [TEAM_A, TEAM_B]) await createApp(world, ns);
      await createNamespace(client, VELERO);
      const msg = await refusal(createOperation(client, TEAM_A, 'too-early', veleroBackup('1h')));
      world.say(`create an Operation before any operator process runs: ${msg}`);
      expect(msg).toMatch(/failed calling webhook .*vworkspace-operator-service\.operators\.svc/);
    },
  );

  journey.step(
    'each Pod runs as a process with the Deployment’s env, OLM’s certificate and the ServiceAccount token',
    async (world) => {
      pods = await OperatorPods.start(world);
      for (const p of pods.pods)
        world.say(`operator pod ${p.name} at ${p.ip}:${PORTS.webhook} → ${p.proc.logPath}`);
      expect(pods.pods.length).toBe(2);
      const leader = await pods.leader();
      expect(leader).toBeDefined();
      world.say(
        `leader: ${leader?.name}; identity ${pods.serviceAccount}; serving certificate from Secret ${pods.certSecret}`,
      );
      expect(pods.serviceAccount).toBe(`system:serviceaccount:${OPERATORS_NAMESPACE}:${SERVICE_ACCOUNT}`);
      // The processes' credentials are the ServiceAccount's, as the API server sees them.
      for (const p of pods.pods) {
        const asPod = clientFor(p.kubeconfigPath);
        const review = await asPod.request<{ status: { userInfo: { username: string } } }>({
          method: 'POST',
          path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        });
        expect(review.status.userInfo.username).toBe(pods.serviceAccount);
        const denied = await refusal(
          asPod.request({
            method: 'GET',
            path: resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace: TEAM_A }, 'x'),
          }),
        );
        expect(denied).toMatch(/forbidden/);
      }
    },
  );

  journey.step(
    'the API server calls the webhook through OLM’s Service: an invalid Operation is denied by the operator',
    async (world) => {
      const { client } = world;
      await waitInstanceReady(world, TEAM_A);
      await waitInstanceReady(world, TEAM_B);
      const msg = await refusal(createOperation(client, TEAM_A, 'bad-ttl', veleroBackup('forever')));
      world.say(`invalid parameter: ${msg}`);
      expect(msg).toMatch(/admission webhook "voperation\.ops\.vworkspace\.io" denied the request/);
      expect(msg).toMatch(/ttl/);
    },
  );

  journey.step(
    'a velero Backup waits at RbacProfileMissing until backup.velero is granted, then runs to Succeeded',
    async (world) => {
      const { client } = world;
      const simulator = new EngineSimulator(client, { namespaces: [VELERO], intervalMs: 500 });
      simulator.start();
      world.cleanup('engine simulator', () => simulator.stop());
      world.say(
        'Velero does not run here: the simulator moves the real velero.io Backup through Velero’s phases',
      );
      await createOperation(client, TEAM_A, 'nightly', veleroBackup('72h'));
      const waiting = await waitRbacProfileMissing(world, TEAM_A, 'nightly', 'backup.velero');
      expect(cond(waiting, 'Accepted')?.message).toContain(VELERO);
      expect(await children(client, VELERO, 'velero.io', 'v1', 'backups')).toEqual([]);

      const role = await grantProfile(client, 'backup.velero', VELERO, OPERATOR_SA);
      world.say(
        `granted: RoleBinding ${VELERO}/${role} → ServiceAccount ${OPERATORS_NAMESPACE}/${SERVICE_ACCOUNT}`,
      );
      const done = await watchToEnd(world, TEAM_A, 'nightly');
      expect(done.status?.phase).toBe('Succeeded');
      expect(cond(done, 'Accepted')).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
      expect(cond(done, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VeleroBackupCompleted' });
      const backups = await children(client, VELERO, 'velero.io', 'v1', 'backups');
      expect(backups.map((b) => b.metadata.name)).toEqual([done.status?.outputs?.backupName]);
    },
  );

  journey.step(
    'RunCommand: a real Job where runCommand.job is granted; RbacProfileMissing and no Job where it is not',
    async (world) => {
      const { client } = world;
      await grantProfile(client, 'runCommand.job', TEAM_A, OPERATOR_SA);
      world.say(`granted runCommand.job in ${TEAM_A} only`);
      const spec = {
        type: 'RunCommand',
        engine: 'job',
        parameters: { image: BUSYBOX, command: ['sh', '-c', `echo hello from ${APP}`] },
      } as const;
      await createOperation(client, TEAM_A, 'hello', spec);
      await createOperation(client, TEAM_B, 'hello', spec);
      const ran = await watchToEnd(world, TEAM_A, 'hello');
      expect(ran.status?.phase).toBe('Succeeded');
      expect(cond(ran, 'Succeeded')?.reason).toBe('JobSucceeded');
      const stopped = await waitRbacProfileMissing(world, TEAM_B, 'hello', 'runCommand.job');
      expect(stopped.status?.phase).toBe('Pending');
      expect((await children(client, TEAM_A, 'batch', 'v1', 'jobs')).length).toBe(1);
      expect(await children(client, TEAM_B, 'batch', 'v1', 'jobs')).toEqual([]);
    },
  );

  journey.step(
    'a CronOperation runs on the OLM-granted ServiceAccount: its Operation is admitted on the CronOperation’s authority and succeeds',
    async (world) => {
      const { client } = world;
      await client.request({
        method: 'POST',
        path: cronPath(TEAM_A),
        body: {
          apiVersion: CRON_OPERATION.apiVersion,
          kind: CRON_OPERATION.kind,
          // run-now: the first run is created at once instead of at the next minute (the same controller
          // and identity create scheduled and requested runs), which saves the journey up to a minute.
          metadata: { name: 'every-minute', annotations: { [ANNOTATION_RUN_NOW]: 'e2e' } },
          spec: {
            schedule: '* * * * *',
            concurrencyPolicy: 'Forbid',
            operationTemplate: {
              spec: {
                type: 'RunCommand',
                engine: 'job',
                targetRef: { name: APP },
                parameters: { image: BUSYBOX, command: ['sh', '-c', 'echo scheduled'] },
              },
            },
          },
        },
      });
      world.say(
        `CronOperation ${TEAM_A}/every-minute created by the admin; its Operations are created by ${pods?.serviceAccount}, which holds no runcommand verb`,
      );
      const created = await eventually(
        'every-minute to create its first Operation',
        async () => {
          const list = await client.request<{ items: Operation[] }>({
            method: 'GET',
            path: `${opPath(TEAM_A)}?labelSelector=${encodeURIComponent(`${LABEL_CRON_OPERATION}=every-minute`)}`,
          });
          return list.items[0];
        },
        150_000,
        1_000,
      );
      expect(created.metadata.annotations?.[ANNOTATION_CREATED_BY]).toBe(pods?.serviceAccount);
      const done = await watchToEnd(world, TEAM_A, created.metadata.name ?? '');
      expect(done.status?.phase).toBe('Succeeded');
      expect(cond(done, 'Succeeded')?.reason).toBe('JobSucceeded');
      const cron = await eventually(
        'every-minute to record the success',
        async () => {
          const c = await client.request<CronOperation>({
            method: 'GET',
            path: cronPath(TEAM_A, 'every-minute'),
          });
          return c.status?.lastSuccessfulTime ? c : undefined;
        },
        60_000,
        1_000,
      );
      expect(cron.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'True',
        reason: 'ScheduleActive',
      });
      world.say(`  CronOperation every-minute: lastSuccessfulTime ${cron.status?.lastSuccessfulTime}`);
      await client.request({ method: 'DELETE', path: cronPath(TEAM_A, 'every-minute') });
    },
  );
});
