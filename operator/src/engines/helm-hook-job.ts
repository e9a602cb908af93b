// helmHookJob engine (Migration): the migration Job the chart ships, already rendered by Helm into
// ConfigMap `<release>-vworkspace-migration` (or parameters.configMapName; key job.yaml). Whoever can
// write that ConfigMap chooses what runs, so its pod template is UNTRUSTED: anything beyond the restricted
// Pod Security Standard is refused (Accepted=False/UnsafePodSpec naming the field), the restricted settings
// are forced, and the pod runs as a ServiceAccount the template allows (Accepted=False/NotAllowedByTemplate
// otherwise). The adapter then makes it this Operation's child: deterministic name, namespace, labels,
// owner, backoffLimit 0.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_OPERATION } from '../api/annotations.ts';
import { allowedServiceAccounts, serviceAccountDenial } from '../catalog/grants.ts';
import { effectivePolicy } from '../catalog/policy.ts';
import { childMetadata, childName, NAME_LIMITS, releaseOf } from './names.ts';
import { at, isRecord, type Json, num, str } from './object.ts';
import { sanitizeUntrustedPodTemplate } from './pod-security.ts';
import { cancelJobs, mayMountToken, observeJob } from './runner-pod.ts';
import type { EngineAdapter, MaterializeInput, MaterializeResult, Observation } from './types.ts';

export const MIGRATION_CONFIGMAP_SUFFIX = '-vworkspace-migration';
export const MIGRATION_CONFIGMAP_KEY = 'job.yaml';

/** The ConfigMap holding the rendered Job: parameters.configMapName, else `<release>-vworkspace-migration`. */
export function migrationConfigMapName(input: Pick<MaterializeInput, 'target' | 'parameters'>): string {
  return (
    str(input.parameters.configMapName) ?? `${releaseOf(input.target).name}${MIGRATION_CONFIGMAP_SUFFIX}`
  );
}

/** Labels the Job controller owns; a copy from the chart's Job would select the wrong pods. */
const CONTROLLER_LABELS = [
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
];

function withoutKeys(o: unknown, drop: (k: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (isRecord(o)) for (const [k, v] of Object.entries(o)) if (!drop(k) && typeof v === 'string') out[k] = v;
  return out;
}

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, template, env, attempt } = input;
  const source = migrationConfigMapName(input);
  const job = env.migrationJob;
  if (!job) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `no migration Job template: ConfigMap ${source} (key ${MIGRATION_CONFIGMAP_KEY}) is missing or empty in this namespace; the chart must ship it for the helmHookJob engine`,
    };
  }
  const kind = str(job.kind) ?? 'Job';
  const apiVersion = str(job.apiVersion) ?? 'batch/v1';
  const podSpec = at(job, 'spec', 'template', 'spec');
  if (
    kind !== 'Job' ||
    apiVersion !== 'batch/v1' ||
    !isRecord(podSpec) ||
    !Array.isArray(podSpec.containers)
  ) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `ConfigMap ${source} key ${MIGRATION_CONFIGMAP_KEY} must hold a batch/v1 Job with spec.template.spec.containers (found ${apiVersion} ${kind}); fix the chart's migration template`,
    };
  }
  const namespace = op.metadata.namespace ?? '';
  const meta = at(job, 'metadata');
  const spec = isRecord(job.spec) ? job.spec : {};
  const where = `the migration Job in ConfigMap ${source} (key ${MIGRATION_CONFIGMAP_KEY})`;
  const sanitized = sanitizeUntrustedPodTemplate(spec.template);
  if (!sanitized.ok) {
    return {
      ok: false,
      reason: 'UnsafePodSpec',
      message: `${where} asks for more than the restricted Pod Security Standard: ${sanitized.problems.map((p) => `${p.field}: ${p.message}`).join('; ')}. Remove it from the chart's Job template, then create a new Operation (or set ops.vworkspace.io/reconcile)`,
    };
  }
  const tplMeta = sanitized.template.metadata;
  const hardened = sanitized.template.spec;
  // Unset runs as the template's first allowed ServiceAccount; `serviceAccount` is the deprecated alias.
  const named = str(podSpec.serviceAccountName);
  const alias = str(podSpec.serviceAccount);
  const field = `spec.template.spec.${named || !alias ? 'serviceAccountName' : 'serviceAccount'}`;
  const serviceAccountName = named ?? alias ?? allowedServiceAccounts(template)[0] ?? '';
  const denied =
    named && alias && named !== alias
      ? `serviceAccountName "${named}" and its deprecated alias serviceAccount "${alias}" differ; name one ServiceAccount`
      : serviceAccountDenial(template, serviceAccountName)?.message;
  if (denied) {
    return { ok: false, reason: 'NotAllowedByTemplate', message: `${where}, ${field}: ${denied}` };
  }
  delete hardened.serviceAccount;
  hardened.serviceAccountName = serviceAccountName;
  if (!mayMountToken(env, namespace, serviceAccountName)) hardened.automountServiceAccountToken = false;
  hardened.restartPolicy ??= 'Never';
  const policyDeadline = effectivePolicy(
    op.spec.type,
    op.spec.policy,
    template.defaults,
  ).activeDeadlineSeconds;
  const chartDeadline = num(spec.activeDeadlineSeconds);
  const deadline =
    policyDeadline === undefined ? chartDeadline : Math.min(policyDeadline, chartDeadline ?? policyDeadline);
  // Generated or lifecycle fields of the chart's Job that must not carry over: the controller makes the
  // selector, and the Operation's TTL (not the Job's) decides when the child goes.
  const {
    selector: _s,
    manualSelector: _m,
    ttlSecondsAfterFinished: _t,
    activeDeadlineSeconds: _a,
    ...rest
  } = spec;
  const childSpec: Json = {
    ...rest,
    backoffLimit: 0,
    ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
    template: {
      metadata: {
        ...tplMeta,
        labels: {
          ...withoutKeys(tplMeta.labels, (k) => CONTROLLER_LABELS.includes(k)),
          [LABEL_OPERATION]: op.metadata.name ?? '',
        },
      },
      spec: hardened,
    },
  };
  const metadata = childMetadata(op, {
    name: childName(op, attempt, NAME_LIMITS.job),
    attempt,
    labels: withoutKeys(at(meta, 'labels'), (k) => CONTROLLER_LABELS.includes(k)),
    // Helm hook annotations mean nothing outside a Helm install; drop them so no tool mistakes the child for one.
    annotations: withoutKeys(at(meta, 'annotations'), (k) => k.startsWith('helm.sh/')),
  });
  return { ok: true, children: [{ apiVersion: 'batch/v1', kind: 'Job', metadata, spec: childSpec }] };
}

export const helmHookJobAdapter: EngineAdapter = {
  engine: 'helmHookJob',
  types: ['Migration'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe: (children: readonly KubernetesObject[]): Observation =>
    observeJob(
      children,
      { running: 'HelmHookJobRunning', succeeded: 'HelmHookJobSucceeded', failed: 'HelmHookJobFailed' },
      'migration',
    ),
  cancel: cancelJobs,
};
