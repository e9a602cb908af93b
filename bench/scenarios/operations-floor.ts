// The floor of the Operations → children measurement: the least API work any implementation of the
// contract must cause per Operation, done by the bench itself while the operator serves its webhooks but
// reconciles nothing (the bench holds its Lease, bench/lib/lease.ts). Per Operation: its create through
// both webhooks, its child Job's create (a POST, as the operator makes it), and one status apply under the
// operator's field manager (phase and child: what a user must be able to read). No Event, no instance
// summary, no second status write. The child and the status are copies of ones the operator wrote in the
// same run, so the bytes the API server handles are the operator's.
import { setTimeout as sleep } from 'node:timers/promises';
import { FIELD_MANAGER, PATCH_TYPES } from '../../operator/src/runtime/index.ts';
import { runCommand } from '../lib/objects.ts';
import { collection, type World } from '../lib/world.ts';

type Obj = Record<string, unknown>;

interface Meta {
  name?: string;
  uid?: string;
  labels?: Record<string, string>;
  ownerReferences?: { kind: string; name: string; uid: string }[];
}

interface Listed {
  items?: { metadata?: Meta; spec?: Obj; apiVersion?: string; kind?: string }[];
}

/** Labels what the floor creates (Operations, Jobs, their Pods), so it is removed by three calls. */
export const FLOOR_LABEL = 'bench-floor';

/** What one Operation of the operator left behind, to be copied. */
export interface FloorTemplate {
  opName: string;
  job: Obj;
  status: unknown;
}

/** Labels the API server puts on a Job's selector and Pods; a create must not carry them. */
const GENERATED_LABELS = [
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
];

function withoutGenerated(labels: Record<string, string> | undefined): Record<string, string> {
  const out = { ...labels };
  for (const k of GENERATED_LABELS) delete out[k];
  return out;
}

/** The child Job and final status of Operation `opName` in `ns`, as the operator wrote them. */
export async function captureTemplate(world: World, ns: string, opName: string): Promise<FloorTemplate> {
  const op = await world.api.request<{ status?: unknown }>({
    method: 'GET',
    path: `${collection('ops.vworkspace.io/v1alpha1', 'operations', ns)}/${opName}`,
  });
  const jobs = await world.api.request<Listed>({ method: 'GET', path: collection('batch/v1', 'jobs', ns) });
  const child = (jobs.items ?? []).find((j) =>
    j.metadata?.ownerReferences?.some((r) => r.kind === 'Operation' && r.name === opName),
  );
  if (!child?.spec || !op.status) throw new Error(`bench: no child Job or status of Operation ${opName}`);
  const { selector: _generated, ...spec } = child.spec as {
    selector?: unknown;
    template: { metadata?: Meta };
  };
  const template = spec.template;
  return {
    opName,
    status: op.status,
    job: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        labels: withoutGenerated(child.metadata?.labels),
        ownerReferences: child.metadata?.ownerReferences,
      },
      spec: {
        ...spec,
        template: {
          ...template,
          metadata: { ...template.metadata, labels: withoutGenerated(template.metadata?.labels) },
        },
      },
    },
  };
}

/** `value` with every occurrence of the template's Operation name replaced by `name`. */
function renamed<T>(t: FloorTemplate, value: T, name: string): T {
  return JSON.parse(JSON.stringify(value).replaceAll(t.opName, name)) as T;
}

/** One Operation's floor: create it (both webhooks), create its child, apply its status. */
export async function floorOne(world: World, t: FloorTemplate, ns: string, target: string): Promise<void> {
  const name = `fl-${target}`;
  const op = runCommand(name, ns, target);
  const created = await world.api.request<{ metadata: Meta }>({
    method: 'POST',
    path: collection('ops.vworkspace.io/v1alpha1', 'operations', ns),
    body: { ...op, metadata: { ...(op.metadata as Meta), labels: { [FLOOR_LABEL]: 'true' } } },
  });
  const job = renamed(t, t.job, name) as { metadata: Meta; spec: { template: { metadata: Meta } } };
  job.metadata = {
    ...job.metadata,
    name,
    labels: { ...job.metadata.labels, [FLOOR_LABEL]: 'true' },
    ownerReferences: (job.metadata.ownerReferences ?? []).map((r) =>
      r.kind === 'Operation' ? { ...r, uid: created.metadata.uid ?? '' } : r,
    ),
  };
  job.spec.template.metadata.labels = { ...job.spec.template.metadata.labels, [FLOOR_LABEL]: 'true' };
  await world.api.request({
    method: 'POST',
    path: collection('batch/v1', 'jobs', ns),
    query: { fieldManager: FIELD_MANAGER },
    body: { ...job, metadata: { ...job.metadata, namespace: ns } },
  });
  await world.api.request({
    method: 'PATCH',
    path: `${collection('ops.vworkspace.io/v1alpha1', 'operations', ns)}/${name}/status`,
    query: { fieldManager: FIELD_MANAGER, force: true },
    contentType: PATCH_TYPES.apply,
    body: {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: { name, namespace: ns },
      status: renamed(t, t.status, name),
    },
  });
}

/** Deletes what the floor created in `ns` and waits until it is gone, so the next phase starts quiet. */
export async function removeFloor(world: World, ns: string): Promise<void> {
  const sel = { labelSelector: `${FLOOR_LABEL}=true` };
  const paths = [
    collection('ops.vworkspace.io/v1alpha1', 'operations', ns),
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
