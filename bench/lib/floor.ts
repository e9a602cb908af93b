// The floor's objects (bench/scenarios/operations-floor.ts), built from what the operator wrote: pure.
// A child Job and a status of one of the operator's Operations become the same objects for another
// Operation, so the API server handles the operator's bytes.
import { runCommand } from './objects.ts';

type Obj = Record<string, unknown>;

export interface Meta {
  name?: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  ownerReferences?: {
    apiVersion?: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }[];
}

/** Labels what the floor creates (Operations, Jobs, their Pods), so it is removed by three calls. */
export const FLOOR_LABEL = 'bench-floor';

/** What one Operation of the operator left behind, to be copied. */
export interface FloorTemplate {
  opName: string;
  job: { metadata: Meta; spec: Obj & { template: { metadata?: Meta } } };
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

/** The template from Operation `opName`'s child Job (as read back) and its status. */
export function floorTemplate(
  opName: string,
  child: { metadata?: Meta; spec?: Obj },
  status: unknown,
): FloorTemplate {
  if (!child.spec || status === undefined) throw new Error(`bench: no child Job or status of ${opName}`);
  const { selector: _generated, ...spec } = child.spec as Obj & { template: { metadata?: Meta } };
  const template = spec.template;
  return {
    opName,
    status,
    job: {
      metadata: {
        labels: withoutGenerated(child.metadata?.labels),
        ...(child.metadata?.ownerReferences ? { ownerReferences: child.metadata.ownerReferences } : {}),
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

/** The floor's Operation on `target`: the bench's RunCommand, labelled. */
export function floorOperation(name: string, ns: string, target: string): Obj {
  const op = runCommand(name, ns, target);
  return { ...op, metadata: { ...(op.metadata as Meta), labels: { [FLOOR_LABEL]: 'true' } } };
}

/** Its child: the template's Job, renamed, owned by the Operation of `opUid`, labelled down to its Pods. */
export function floorJob(t: FloorTemplate, name: string, ns: string, opUid: string): Obj {
  const job = renamed(t, t.job, name);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...job.metadata,
      name,
      namespace: ns,
      labels: { ...job.metadata.labels, [FLOOR_LABEL]: 'true' },
      ownerReferences: (job.metadata.ownerReferences ?? []).map((r) =>
        r.kind === 'Operation' ? { ...r, uid: opUid } : r,
      ),
    },
    spec: {
      ...job.spec,
      template: {
        ...job.spec.template,
        metadata: {
          ...job.spec.template.metadata,
          labels: { ...job.spec.template.metadata?.labels, [FLOOR_LABEL]: 'true' },
        },
      },
    },
  };
}

/** Its status apply body: the template's status, renamed. */
export function floorStatus(t: FloorTemplate, name: string, ns: string): Obj {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, namespace: ns },
    status: renamed(t, t.status, name),
  };
}
