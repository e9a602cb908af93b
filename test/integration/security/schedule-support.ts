// Steps the scheduling tests of the security world share: CronOperations, WatchOperations and
// instances as a tenant writes them, the Operations a scheduler really owns, and the Events it records.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RestClient } from '@vworkspace/runtime';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { TINY_APP_REF } from '../../support/helm.ts';
import type { World } from './harness.ts';

export const OPS = '/apis/ops.vworkspace.io/v1alpha1';
export const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const MERGE = 'application/merge-patch+json';

export type SchedulerPlural = 'cronoperations' | 'watchoperations';

export interface Scheduler {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  status?: {
    conditions?: { type: string; status: string; reason: string; message: string }[];
    lastScheduleTime?: string;
    lastSuccessfulTime?: string;
    nextScheduleTime?: string;
    nextRuns?: { utc: string }[];
    missedSlots?: { scheduledTime: string; reason?: string }[];
    active?: { name: string; target?: string }[];
    manualRun?: { request: string; phase: string; operation?: string; message?: string };
  };
}

export function createScheduler(
  client: RestClient,
  namespace: string,
  plural: SchedulerPlural,
  name: string,
  spec: Record<string, unknown>,
): Promise<Scheduler> {
  return client.request<Scheduler>({
    method: 'POST',
    path: `${OPS}/namespaces/${namespace}/${plural}`,
    body: {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: plural === 'cronoperations' ? 'CronOperation' : 'WatchOperation',
      metadata: { name },
      spec,
    },
  });
}

export function getScheduler(w: World, namespace: string, plural: SchedulerPlural, name: string) {
  return w.admin.request<Scheduler>({
    method: 'GET',
    path: `${OPS}/namespaces/${namespace}/${plural}/${name}`,
  });
}

/** A JSON merge patch of `path` (e.g. `${OPS}/namespaces/ns/operations/x`) as `client`. */
export function mergePatch(client: RestClient, path: string, body: Record<string, unknown>) {
  return client.request({ method: 'PATCH', path, contentType: MERGE, body });
}

export const annotate = (client: RestClient, path: string, annotations: Record<string, string | null>) =>
  mergePatch(client, path, { metadata: { annotations } });

/** An ApplicationInstance with labels and annotations (created by the admin, like the world's own). */
export async function labelledInstance(
  w: World,
  namespace: string,
  name: string,
  labels: Record<string, string>,
  annotations: Record<string, string>,
): Promise<ApplicationInstance> {
  return w.admin.request<ApplicationInstance>({
    method: 'POST',
    path: `${APPS}/namespaces/${namespace}/applicationinstances`,
    body: {
      apiVersion: 'apps.vworkspace.io/v1alpha1',
      kind: 'ApplicationInstance',
      metadata: { name, labels, annotations },
      spec: { appRef: TINY_APP_REF, release: { name } },
    },
  });
}

/** Operations whose controller owner reference is the scheduler (what it really created). */
export async function ownedOperations(w: World, namespace: string, owner: Scheduler): Promise<Operation[]> {
  const list = await w.admin.request<{ items: Operation[] }>({
    method: 'GET',
    path: `${OPS}/namespaces/${namespace}/operations`,
  });
  return list.items.filter((o) =>
    o.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === owner.metadata.uid),
  );
}

export function readyOf(s: Scheduler) {
  return s.status?.conditions?.find((c) => c.type === 'Ready');
}

interface EventList {
  items: { reason?: string; type?: string; note?: string; regarding?: { name?: string; kind?: string } }[];
}

/** Waits for an Event of `reason` about `name` (Events are written behind the status, in the background). */
export function eventAbout(w: World, namespace: string, name: string, reason: string) {
  return w.waitFor(`the ${reason} Event about ${name}`, async () => {
    const events = await w.admin.request<EventList>({
      method: 'GET',
      path: `/apis/events.k8s.io/v1/namespaces/${namespace}/events`,
    });
    return events.items.find((e) => e.regarding?.name === name && e.reason === reason);
  });
}

/**
 * Waits until the wall clock is early in a minute, so objects set up now exist before the next
 * minute's slot of a `* * * * *` schedule (the operator is its own process: its clock is the real one).
 */
export async function earlyInMinute(latestSecond = 30): Promise<void> {
  const s = new Date().getUTCSeconds();
  if (s <= latestSecond) return;
  await sleep((61 - s) * 1000);
}

/** Waits until `name` handled a slot at or after `since` (status.lastScheduleTime), within two minutes. */
export function slotHandled(
  w: World,
  namespace: string,
  name: string,
  since: number,
  also: (s: Scheduler) => boolean = () => true,
): Promise<Scheduler> {
  return w.waitFor(
    `CronOperation ${name} to handle a slot`,
    async () => {
      const s = await getScheduler(w, namespace, 'cronoperations', name);
      const at = Date.parse(s.status?.lastScheduleTime ?? '');
      return at >= since && also(s) ? s : undefined;
    },
    150_000,
  );
}

/** POSTs an Operation as `client` naming `owner` (a CronOperation or WatchOperation) as its controller. */
export function ownedOperation(
  client: RestClient,
  namespace: string,
  name: string,
  owner: { kind: 'CronOperation' | 'WatchOperation'; name: string; uid: string },
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
) {
  return client.request({
    method: 'POST',
    path: `${OPS}/namespaces/${namespace}/operations`,
    body: {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: {
        name,
        ...(annotations ? { annotations } : {}),
        ownerReferences: [{ apiVersion: 'ops.vworkspace.io/v1alpha1', ...owner, controller: true }],
      },
      spec,
    },
  });
}
