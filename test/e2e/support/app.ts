// The application side of the journeys, as a platform team sets it up (docs/install.md, the demo): a
// namespace with a real Helm release of the tiny chart, the runner ServiceAccount, and an
// ApplicationInstance advertising Velero backups and Job RunCommands; Operations on it.

import { type KubeClient, type KubeStatus, resourcePath } from '@vworkspace/runtime';
import { ensure } from '../../../hack/lib/olm.ts';
import { APPLICATION_INSTANCE, CRON_OPERATION, OPERATION } from '../../../operator/src/api/constants.ts';
import type { Operation, OperationPolicy, OperationSpec } from '../../../operator/src/api/operation.ts';
import { profileClusterRoleName } from '../../../operator/src/rbac/profiles.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART, tinyInstance } from '../../support/helm.ts';
import type { World } from './world.ts';

export const APP = 'web';
export const RUNNER_SA = 'vworkspace-runner';
export const BUSYBOX = 'docker.io/library/busybox:1.37.0';

export const opPath = (ns: string, name?: string) => resourcePath({ ...OPERATION, namespace: ns }, name);
export const cronPath = (ns: string, name?: string) =>
  resourcePath({ ...CRON_OPERATION, namespace: ns }, name);

export async function createNamespace(client: KubeClient, name: string): Promise<void> {
  await ensure(client, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** Namespace, Helm release `web` of the tiny chart, runner ServiceAccount, ApplicationInstance Ready. */
export async function createApp(world: World, ns: string): Promise<void> {
  const { client } = world;
  await createNamespace(client, ns);
  await helm(world.cluster.kubeconfigPath, ['install', APP, TINY_CHART, '-n', ns]);
  await client.request({
    method: 'POST',
    path: resourcePath({ group: '', version: 'v1', plural: 'serviceaccounts', namespace: ns }),
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: RUNNER_SA } },
  });
  await client.request({
    method: 'POST',
    path: resourcePath({ ...APPLICATION_INSTANCE, namespace: ns }),
    body: tinyInstance(APP, ns),
  });
  world.say(
    `${ns}: Helm release ${APP} (tiny chart, real helm CLI), ServiceAccount ${RUNNER_SA}, ApplicationInstance ${APP}`,
  );
}

export async function waitInstanceReady(world: World, ns: string): Promise<void> {
  const c = await eventually(
    `ApplicationInstance ${ns}/${APP} Ready`,
    async () => {
      const ai = await world.client.request<{
        status?: { conditions?: { type: string; status: string; reason: string }[] };
      }>({
        method: 'GET',
        path: resourcePath({ ...APPLICATION_INSTANCE, namespace: ns }, APP),
      });
      return ai.status?.conditions?.find((x) => x.type === 'Ready' && x.status === 'True');
    },
    120_000,
    500,
  );
  world.say(`${ns}/${APP}: Ready=True ${c.reason} (the operator read the Helm release record)`);
}

export async function createOperation(
  client: KubeClient,
  ns: string,
  name: string,
  spec: Partial<OperationSpec> & Pick<OperationSpec, 'type' | 'engine'>,
  annotations?: Record<string, string>,
): Promise<void> {
  await client.request({
    method: 'POST',
    path: opPath(ns),
    body: {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: { name, ...(annotations ? { annotations } : {}) },
      spec: { targetRef: { name: APP }, ...spec },
    },
  });
}

/** The spec of a velero Backup of the app (the template's ttl parameter). */
export function veleroBackup(
  ttl: string,
  policy?: OperationPolicy,
): Pick<OperationSpec, 'type' | 'engine' | 'parameters' | 'policy'> {
  return { type: 'Backup', engine: 'velero', parameters: { ttl }, ...(policy ? { policy } : {}) };
}

export function getOperation(client: KubeClient, ns: string, name: string): Promise<Operation> {
  return client.request<Operation>({ method: 'GET', path: opPath(ns, name) });
}

export const cond = (op: Operation, type: string) => op.status?.conditions?.find((c) => c.type === type);

const TERMINAL = ['Succeeded', 'Failed', 'Cancelled'];

/** Waits until the Operation has ended (Succeeded, Failed or Cancelled), printing its progress. */
export function watchToEnd(world: World, ns: string, name: string): Promise<Operation> {
  return watchOperation(world, ns, name, (op) => TERMINAL.includes(op.status?.phase ?? ''));
}

/**
 * Waits until the Operation stops at Accepted=False/RbacProfileMissing and checks the message names
 * the profile's ClusterRole (what a namespace owner must bind).
 */
export async function waitRbacProfileMissing(
  world: World,
  ns: string,
  name: string,
  profile: string,
): Promise<Operation> {
  const op = await watchOperation(
    world,
    ns,
    name,
    (o) => cond(o, 'Accepted')?.reason === 'RbacProfileMissing',
  );
  const accepted = cond(op, 'Accepted');
  if (accepted?.status !== 'False' || !accepted.message.includes(profileClusterRoleName(profile)))
    throw new Error(
      `${ns}/${name}: expected Accepted=False naming ${profileClusterRoleName(profile)}, got ${JSON.stringify(accepted)}`,
    );
  world.say(`  ${ns}/${name} Accepted=False RbacProfileMissing: ${accepted.message}`);
  return op;
}

/** Waits until `accept` holds for the Operation, printing each phase/reason change on the way. */
export async function watchOperation(
  world: World,
  ns: string,
  name: string,
  accept: (op: Operation) => boolean,
  timeoutMs = 180_000,
): Promise<Operation> {
  let last = '';
  return eventually(
    `Operation ${ns}/${name}`,
    async () => {
      const op = await getOperation(world.client, ns, name);
      const reason =
        cond(op, 'Succeeded')?.reason ?? cond(op, 'Blocked')?.reason ?? cond(op, 'Accepted')?.reason ?? '';
      const line = `${op.status?.phase ?? '(no status)'} ${reason}${op.status?.childRef ? ` child ${op.status.childRef.kind}/${op.status.childRef.name}` : ''}`;
      if (line !== last) {
        last = line;
        world.say(`  Operation ${ns}/${name}: ${line}`);
      }
      return accept(op) ? op : undefined;
    },
    timeoutMs,
    500,
  );
}

/** The message the API server returns for a refused request, or 'admitted'. */
export async function refusal(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'admitted',
    (err: unknown) => {
      const body = (err as { body?: KubeStatus | string }).body;
      if (typeof body === 'object' && body.message) return body.message;
      if (typeof body === 'string') {
        try {
          return (JSON.parse(body) as KubeStatus).message ?? body;
        } catch {
          return body;
        }
      }
      return err instanceof Error ? err.message : String(err);
    },
  );
}
