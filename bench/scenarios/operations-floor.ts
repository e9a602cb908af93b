// The floor of the Operations → children measurement: the least API work any implementation of the
// contract must cause per Operation, done by the bench itself while the operator serves its webhooks but
// reconciles nothing (the bench holds its Lease, bench/lib/lease.ts). Per Operation: its create through
// both webhooks, its child Job's create (a POST, as the operator makes it), and one status apply under the
// operator's field manager (phase and child: what a user must be able to read). No Event, no instance
// summary, no second status write. The child and the status are copies of ones the operator wrote in the
// same run (bench/lib/floor.ts), so the bytes the API server handles are the operator's.
import { setTimeout as sleep } from 'node:timers/promises';
import { FIELD_MANAGER, PATCH_TYPES } from '@vworkspace/runtime';
import {
  FLOOR_LABEL,
  type FloorTemplate,
  floorJob,
  floorOperation,
  floorStatus,
  floorTemplate,
  type Meta,
} from '../lib/floor.ts';
import { collection, type World } from '../lib/world.ts';

interface Listed {
  items?: { metadata?: Meta; spec?: Record<string, unknown> }[];
}

const OPERATIONS = 'ops.vworkspace.io/v1alpha1';

/** The child Job and final status of Operation `opName` in `ns`, as the operator wrote them. */
export async function captureTemplate(world: World, ns: string, opName: string): Promise<FloorTemplate> {
  const op = await world.api.request<{ status?: unknown }>({
    method: 'GET',
    path: `${collection(OPERATIONS, 'operations', ns)}/${opName}`,
  });
  const jobs = await world.api.request<Listed>({ method: 'GET', path: collection('batch/v1', 'jobs', ns) });
  const child = (jobs.items ?? []).find((j) =>
    j.metadata?.ownerReferences?.some((r) => r.kind === 'Operation' && r.name === opName),
  );
  return floorTemplate(opName, child ?? {}, op.status);
}

/** One Operation's floor: create it (both webhooks), create its child, apply its status. */
export async function floorOne(world: World, t: FloorTemplate, ns: string, target: string): Promise<void> {
  const name = `fl-${target}`;
  const created = await world.api.request<{ metadata: Meta }>({
    method: 'POST',
    path: collection(OPERATIONS, 'operations', ns),
    body: floorOperation(name, ns, target),
  });
  await world.api.request({
    method: 'POST',
    path: collection('batch/v1', 'jobs', ns),
    query: { fieldManager: FIELD_MANAGER },
    body: floorJob(t, name, ns, created.metadata.uid ?? ''),
  });
  await world.api.request({
    method: 'PATCH',
    path: `${collection(OPERATIONS, 'operations', ns)}/${name}/status`,
    query: { fieldManager: FIELD_MANAGER, force: true },
    contentType: PATCH_TYPES.apply,
    body: floorStatus(t, name, ns),
  });
}

/** Deletes what the floor created in `ns` and waits until it is gone, so the next phase starts quiet. */
export async function removeFloor(world: World, ns: string): Promise<void> {
  const sel = { labelSelector: `${FLOOR_LABEL}=true` };
  const paths = [
    collection(OPERATIONS, 'operations', ns),
    collection('batch/v1', 'jobs', ns),
    collection('v1', 'pods', ns),
  ];
  for (const path of paths)
    await world.api.request({
      method: 'DELETE',
      path,
      query: sel,
      body: { propagationPolicy: 'Background' },
    });
  const deadline = Date.now() + 10 * 60_000;
  while (Date.now() < deadline) {
    let left = 0;
    for (const path of paths)
      left += (await world.api.request<Listed>({ method: 'GET', path, query: sel })).items?.length ?? 0;
    if (left === 0) {
      await sleep(5_000);
      return;
    }
    await sleep(2_000);
  }
  throw new Error(`what the floor created in ${ns} was not deleted in time`);
}
