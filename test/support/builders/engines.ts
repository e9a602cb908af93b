// Test-object builders for engine tests (unit and integration): Operations, ApplicationInstances,
// the built-in templates, materialize inputs, and children with a given status.
import type { KubernetesObject } from '@kubernetes/client-node';
import YAML from 'yaml';
import { LABEL_INSTANCE, LABEL_OPERATION_NAMESPACE } from '../../../operator/src/api/annotations.ts';
import type { ApplicationInstance, ChartSource } from '../../../operator/src/api/applicationinstance.ts';
import { APPLICATION_INSTANCE, OPERATION } from '../../../operator/src/api/constants.ts';
import type { Engine, OperationType } from '../../../operator/src/api/enums.ts';
import type { Operation, OperationSpec } from '../../../operator/src/api/operation.ts';
import { validateParameters } from '../../../operator/src/catalog/parameters.ts';
import type { EffectiveTemplate, Template } from '../../../operator/src/catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../../../operator/src/catalog/templates/index.ts';
import type {
  ChildManifest,
  EngineEnvironment,
  MaterializeInput,
} from '../../../operator/src/engines/types.ts';
import type { ReleaseHook } from '../../../operator/src/release/helm-release.ts';

export interface OperationOptions {
  name?: string;
  namespace?: string;
  /** null: an Operation not created yet (no uid). */
  uid?: string | null;
  type?: OperationType;
  engine?: Engine;
  parameters?: Record<string, unknown>;
  policy?: OperationSpec['policy'];
  target?: string;
  annotations?: Record<string, string>;
}

export function anOperation(o: OperationOptions = {}): Operation {
  const uid = o.uid === undefined ? '0a1b2c3d-0000-4000-8000-000000000001' : o.uid;
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: {
      name: o.name ?? 'nightly-backup',
      namespace: o.namespace ?? 'team-a',
      ...(uid === null ? {} : { uid }),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      type: o.type ?? 'Backup',
      engine: o.engine ?? 'velero',
      targetRef: { name: o.target ?? 'nextcloud' },
      ...(o.parameters ? { parameters: o.parameters } : {}),
      ...(o.policy ? { policy: o.policy } : {}),
    },
  };
}

export interface InstanceOptions {
  name?: string;
  namespace?: string;
  release?: string;
  chart?: NonNullable<ApplicationInstance['spec']['appRef']['chart']> | null;
  annotations?: Record<string, string>;
  /**
   * status.release.chartSource: where the release was installed from, as the instance controller records
   * it. Default: the chart's source (the instance as the controller leaves it once Ready); null: none yet.
   */
  chartSource?: ChartSource | null;
}

export function anInstance(o: InstanceOptions = {}): ApplicationInstance {
  const chart =
    o.chart === null
      ? undefined
      : (o.chart ?? {
          sourceType: 'oci' as const,
          url: 'oci://registry.example.com/charts',
          name: 'nextcloud',
          version: '6.6.0',
        });
  const recorded =
    o.chartSource === undefined
      ? chart && { sourceType: chart.sourceType, url: chart.url, name: chart.name }
      : o.chartSource;
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: {
      name: o.name ?? 'nextcloud',
      namespace: o.namespace ?? 'team-a',
      annotations: o.annotations ?? {},
    },
    spec: {
      appRef: { catalogId: 'nextcloud', ...(chart ? { chart } : {}) },
      release: { name: o.release ?? 'nextcloud-team-a' },
    },
    ...(recorded ? { status: { release: { chartSource: recorded } } } : {}),
  };
}

/** The built-in template for (type, engine), as the catalog resolves it. */
export function builtinTemplate(type: OperationType, engine: Engine): EffectiveTemplate {
  const t = BUILTIN_TEMPLATES.find((x) => x.type === type && x.engine === engine);
  if (!t) throw new Error(`no built-in template for ${type}/${engine}`);
  return { ...t, source: 'builtin' };
}

export interface InputOptions extends OperationOptions {
  instance?: InstanceOptions;
  template?: EffectiveTemplate;
  env?: Partial<EngineEnvironment>;
  attempt?: number;
}

/** A materialize input whose parameters went through the template's schema (defaults applied), like the reconciler's. */
export function anInput(o: InputOptions = {}): MaterializeInput {
  const op = anOperation(o);
  const template = o.template ?? builtinTemplate(op.spec.type, op.spec.engine);
  const checked = validateParameters(template, structuredClone(op.spec.parameters ?? {}));
  if (!checked.ok) throw new Error(checked.message);
  const target = anInstance({ namespace: op.metadata.namespace, ...o.instance });
  return {
    op,
    target,
    template,
    parameters: checked.parameters,
    env: { veleroNamespace: 'velero', ...o.env },
    attempt: o.attempt ?? 1,
  };
}

/** The children of a materialize that must succeed. */
export function materialized(
  result: { ok: true; children: ChildManifest[] } | { ok: false; message: string },
): ChildManifest[] {
  if (!result.ok) throw new Error(`materialize failed: ${result.message}`);
  return result.children;
}

/** A child as the API server would return it after the engine's controller wrote `status`. */
export function withStatus(
  child: ChildManifest,
  status: Record<string, unknown>,
  uid = 'child-uid',
): KubernetesObject {
  return {
    ...structuredClone(child),
    metadata: { ...structuredClone(child.metadata), uid },
    status,
  } as KubernetesObject;
}

/** A batch/v1 Job condition. */
export function jobCondition(type: string, reason?: string, message?: string): Record<string, unknown> {
  return { type, status: 'True', ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}

/** One entry of an Argo Workflow's status.nodes. */
export function workflowNode(
  id: string,
  o: { type?: string; phase?: string; displayName?: string; message?: string; startedAt?: string } = {},
): Record<string, unknown> {
  return {
    id,
    name: id,
    displayName: o.displayName ?? id,
    type: o.type ?? 'Pod',
    phase: o.phase ?? 'Succeeded',
    ...(o.message ? { message: o.message } : {}),
    ...(o.startedAt ? { startedAt: o.startedAt } : {}),
  };
}

/** The RunCommand template with its image allowlist removed (a catalog mistake the job engine refuses). */
export function aTemplateWithoutAllowlist(): EffectiveTemplate {
  const t = builtinTemplate('RunCommand', 'job');
  const schema = structuredClone(t.inputSchema) as { properties: Record<string, unknown> };
  schema.properties.image = { type: 'string' };
  return { ...t, name: 'open-runcommand', inputSchema: schema, source: 'test' };
}

/** A Job's pod whose `container` terminated with `exitCode` (as the kubelet reports it). */
export function aTerminatedPod(
  name: string,
  container: string,
  exitCode: number,
  reason = exitCode === 0 ? 'Completed' : 'Error',
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'team-a' },
    status: { containerStatuses: [{ name: container, state: { terminated: { exitCode, reason } } }] },
  } as KubernetesObject;
}

/** The velero.io Backup a Restore names, as the reconciler reads it: made for `namespace` by a Backup Operation there. */
export function aVeleroBackup(name: string, namespace = 'team-a'): EngineEnvironment['veleroBackup'] {
  return {
    name,
    labels: { [LABEL_OPERATION_NAMESPACE]: namespace, [LABEL_INSTANCE]: 'nextcloud' },
    phase: 'Completed',
  };
}

/** The built-in template for (type, engine) with template fields of a platform admin's catalog entry. */
export function builtinWith(
  type: OperationType,
  engine: Engine,
  fields: Partial<Template>,
): EffectiveTemplate {
  return { ...builtinTemplate(type, engine), ...fields, name: `custom-${engine}`, source: 'test' };
}

/** A batch/v1 Job as a chart renders a migration hook, with `pod` merged into its pod spec. */
export function aHookJob(name: string, pod: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations: { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-weight': '0' } },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'migrate', image: 'app:1', command: ['migrate'] }],
          ...pod,
        },
      },
    },
  };
}

/** A hook as the release record stores it (Helm's release.Hook), its manifest rendered from `object`. */
export function aReleaseHook(
  object: Record<string, unknown>,
  o: { events?: string[]; weight?: number; deletePolicies?: string[]; path?: string } = {},
): ReleaseHook {
  const meta = (object.metadata ?? {}) as { name?: string };
  return {
    name: meta.name ?? '',
    kind: String(object.kind ?? ''),
    path: o.path ?? 'app/templates/hooks.yaml',
    manifest: YAML.stringify(object),
    events: o.events ?? ['pre-upgrade'],
    weight: o.weight ?? 0,
    deletePolicies: o.deletePolicies ?? [],
  };
}

/** A release's PersistentVolumeClaim as the API server returns it (Helm's labels and annotations, Bound). */
export function aClaim(
  name: string,
  o: { uid?: string; deleting?: boolean; fromSnapshot?: string; phase?: string; release?: string } = {},
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: 'team-a',
      uid: o.uid ?? `uid-${name}`,
      labels: {
        'app.kubernetes.io/instance': o.release ?? 'nextcloud-team-a',
        'app.kubernetes.io/managed-by': 'Helm',
      },
      annotations: {
        'meta.helm.sh/release-name': o.release ?? 'nextcloud-team-a',
        'pv.kubernetes.io/bind-completed': 'yes',
        'volume.kubernetes.io/storage-provisioner': 'hostpath.csi.vworkspace.io',
      },
      ...(o.deleting ? { deletionTimestamp: '2026-11-27T10:00:00Z' as unknown as Date } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'csi-hostpath',
      volumeMode: 'Filesystem',
      volumeName: `pv-${name}`,
      resources: { requests: { storage: '1Gi' } },
      ...(o.fromSnapshot
        ? {
            dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: o.fromSnapshot },
          }
        : {}),
    },
    status: { phase: o.phase ?? 'Bound', capacity: { storage: '2Gi' } },
  } as KubernetesObject;
}

/** A Deployment or StatefulSet of the release with its replicas (spec) and ready replicas (status). */
export function aWorkload(
  kind: 'Deployment' | 'StatefulSet',
  name: string,
  replicas: number,
  readyReplicas = replicas,
): KubernetesObject {
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: { name, namespace: 'team-a' },
    spec: { replicas },
    status: { readyReplicas },
  } as KubernetesObject;
}

/** A pod that mounts `claim` (and is in `phase`). */
export function aPodMounting(name: string, claim: string, phase = 'Running'): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'team-a' },
    spec: { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] },
    status: { phase },
  } as KubernetesObject;
}

/** A VolumeSnapshot the snapshot engine made (labels, pvc annotation) of `claim`, for Operation `op`. */
export function aSnapshotOf(
  name: string,
  claim: string,
  o: { op?: string; attempt?: number; ready?: boolean; created?: string; instance?: string } = {},
): KubernetesObject {
  return {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshot',
    metadata: {
      name,
      namespace: 'team-a',
      creationTimestamp: (o.created ?? '2026-11-27T10:00:00Z') as unknown as Date,
      labels: {
        'app.kubernetes.io/managed-by': 'vworkspace-operator',
        'ops.vworkspace.io/instance': o.instance ?? 'nextcloud',
        'ops.vworkspace.io/operation-uid': `uid-${o.op ?? 'nightly'}`,
      },
      annotations: { 'ops.vworkspace.io/pvc': claim, 'ops.vworkspace.io/attempt': String(o.attempt ?? 1) },
    },
    spec: { source: { persistentVolumeClaimName: claim } },
    status: { readyToUse: o.ready ?? true },
  } as KubernetesObject;
}
