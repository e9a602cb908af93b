// helmHookJob engine (Migration): the chart's own Helm hook Jobs (ADR 0017). The Jobs a template
// annotated `helm.sh/hook: <event>` rendered into, as the newest release record stores them (values
// applied), for the event parameters.hook names (default pre-upgrade), in the order Helm runs them
// (helm.sh/hook-weight, then name), one after the other: the first Job starts at once, each later one is
// created suspended and resumed when the one before has completed; the first failure ends the sequence.
// parameters.configMapName instead names a ConfigMap holding one rendered Job (key job.yaml), the
// project's earlier convention. Either way whoever wrote it chooses what runs, so each pod template is
// UNTRUSTED: anything beyond the restricted Pod Security Standard is refused (Accepted=False/UnsafePodSpec
// naming the field), the restricted settings are forced, and the pod runs as a ServiceAccount the
// template allows (Accepted=False/NotAllowedByTemplate otherwise). The adapter makes each Job this
// Operation's child: deterministic name, namespace, labels, owner, backoffLimit 0.
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_HELM_HOOK, ANNOTATION_HELM_HOOK_STEP, LABEL_OPERATION } from '../api/annotations.ts';
import { allowedServiceAccounts, serviceAccountDenial } from '../catalog/grants.ts';
import { effectivePolicy } from '../catalog/policy.ts';
import { DEFAULT_MIGRATION_HOOK_EVENT } from '../catalog/templates/fragments.ts';
import type { ReleaseHook } from '../release/helm-release.ts';
import { childMetadata, childName, NAME_LIMITS, releaseOf } from './names.ts';
import { asManifest, at, isRecord, type Json, num, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { type PodSecurityProblem, sanitizeUntrustedPodTemplate } from './pod-security.ts';
import { redactSecretSourced } from './redact.ts';
import {
  ANY_CONTAINER,
  cancelJobs,
  jobFailed,
  jobFinished,
  mayMountToken,
  observeJob,
} from './runner-pod.ts';
import type {
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';
import { parseUntrustedYaml } from './untrusted-yaml.ts';

export const MIGRATION_CONFIGMAP_KEY = 'job.yaml';

const REASONS = {
  running: 'HelmHookJobRunning',
  succeeded: 'HelmHookJobSucceeded',
  failed: 'HelmHookJobFailed',
} as const;

/** The ConfigMap named by parameters.configMapName (the ConfigMap source), else undefined (the hooks). */
export function migrationConfigMapName(input: Pick<MaterializeInput, 'parameters'>): string | undefined {
  return str(input.parameters.configMapName);
}

/**
 * The Job hooks of `event` in the order Helm runs a hook event (pkg/action/hooks.go): a stable sort of
 * the record's hooks by weight, equal weights by name. Hooks of other kinds are left out: the operator
 * creates Jobs only. Pure.
 */
export function hookJobsFor(hooks: readonly ReleaseHook[], event: string): ReleaseHook[] {
  return hooks
    .filter((h) => h.kind === 'Job' && h.events.includes(event))
    .map((h, i) => ({ h, i }))
    .sort((a, b) => a.h.weight - b.h.weight || cmp(a.h.name, b.h.name) || a.i - b.i)
    .map(({ h }) => h);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `name (Kind, events)` of every hook, for a message saying what the record does hold. */
function describeHooks(hooks: readonly ReleaseHook[]): string {
  if (hooks.length === 0) return 'it has no hooks';
  return `its hooks: ${hooks.map((h) => `${h.name} (${h.kind}, ${h.events.join(',')})`).join('; ')}`;
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

/** One Job to run: the chart's manifest, where it came from (for messages) and, for a hook, its step. */
interface Source {
  job: Json;
  where: string;
  hook?: { name: string; step: number; of: number };
}

type Refusal = { ok: false; reason: string; message: string };

/** The Jobs to run, or why there are none. */
function sources(input: MaterializeInput): Source[] | Refusal {
  const { env, parameters, target, op } = input;
  const configMap = migrationConfigMapName(input);
  if (configMap) {
    const text = env.migrationJobYaml;
    const where = `the migration Job in ConfigMap ${configMap} (key ${MIGRATION_CONFIGMAP_KEY})`;
    if (!text) {
      return {
        ok: false,
        reason: 'CapabilityMissing',
        message: `no migration Job template: ConfigMap ${configMap} (key ${MIGRATION_CONFIGMAP_KEY}) is missing or empty in this namespace; unset parameters.configMapName to run the chart's Helm hook Jobs instead`,
      };
    }
    const job = parsedJob(text, where, 'fix the ConfigMap');
    return 'reason' in job ? job : [{ job: job.job, where }];
  }
  const release = releaseOf(target);
  const event = str(parameters.hook) ?? DEFAULT_MIGRATION_HOOK_EVENT;
  const record = env.releaseHooks;
  if (release.namespace !== op.metadata.namespace) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `the release ${release.namespace}/${release.name} is not in the Operation's namespace; Operations only run hooks of a release in their own namespace`,
    };
  }
  if (record?.problem) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `the Helm release record of ${release.name} cannot be read: ${record.problem}`,
    };
  }
  if (record?.revision === undefined) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `Helm release ${release.name} has no release record in namespace ${release.namespace} (no Secret of type helm.sh/release.v1 labelled name=${release.name}), so it has no hooks to run; install the chart first`,
    };
  }
  const jobs = hookJobsFor(record.hooks, event);
  if (jobs.length === 0) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `Helm release ${release.name} revision ${record.revision} has no Job hook for the event ${event} (${describeHooks(record.hooks)}); annotate the chart's migration Job helm.sh/hook: ${event}, choose another parameters.hook, or name a ConfigMap holding the Job in parameters.configMapName`,
    };
  }
  const out: Source[] = [];
  for (const [i, hook] of jobs.entries()) {
    const where = `hook ${hook.name} (${hook.path}, ${event}) of release ${release.name} revision ${record.revision}`;
    const job = parsedJob(hook.manifest, where, "fix the chart's template");
    if ('reason' in job) return job;
    out.push({ job: job.job, where, hook: { name: hook.name, step: i + 1, of: jobs.length } });
  }
  return out;
}

/** The Job `text` holds (untrusted: bounded in size and depth), or a refusal saying what is wrong. */
function parsedJob(text: string, where: string, fix: string): { job: Json } | Refusal {
  const parsed = parseUntrustedYaml(text);
  const retry = `; ${fix}, then create a new Operation (or set ops.vworkspace.io/reconcile)`;
  if (!parsed.ok)
    return { ok: false, reason: 'CapabilityMissing', message: `${where} ${parsed.problem}${retry}` };
  if (!isRecord(parsed.value)) {
    return { ok: false, reason: 'CapabilityMissing', message: `${where} is not a Kubernetes object${retry}` };
  }
  return { job: parsed.value };
}

/**
 * A migration runs once: parallelism or completions above 1 would start that many pods of the untrusted
 * template at once (ADR 0028).
 */
export function jobShapeProblems(spec: Json): PodSecurityProblem[] {
  const out: PodSecurityProblem[] = [];
  for (const f of ['parallelism', 'completions'] as const) {
    const n = num(spec[f]);
    if (n !== undefined && n > 1)
      out.push({ field: `spec.${f}`, message: `${f} ${n} is not allowed: a migration Job runs one pod` });
  }
  return out;
}

/** The child Job for one source: its pod template sanitized, run as an allowed ServiceAccount. */
function childJob(input: MaterializeInput, s: Source): { ok: true; child: ChildManifest } | Refusal {
  const { op, template, env, attempt } = input;
  const { job, where } = s;
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
      message: `${where} must be a batch/v1 Job with spec.template.spec.containers (found ${apiVersion} ${kind}); fix the chart's migration template`,
    };
  }
  const namespace = op.metadata.namespace ?? '';
  const meta = at(job, 'metadata');
  const spec = isRecord(job.spec) ? job.spec : {};
  const sanitized = sanitizeUntrustedPodTemplate(spec.template);
  const problems = [...(sanitized.ok ? [] : sanitized.problems), ...jobShapeProblems(spec)];
  if (!sanitized.ok || problems.length > 0) {
    return {
      ok: false,
      reason: 'UnsafePodSpec',
      message: `${where} asks for more than a migration Job may have (the restricted Pod Security Standard, one pod at a time, no chosen node or system priority): ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}. Remove it from the chart's Job template, then create a new Operation (or set ops.vworkspace.io/reconcile)`,
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
  // selector, the Operation's TTL (not the Job's) decides when the child goes, and the sequence (not the
  // chart) decides when it starts.
  const {
    selector: _s,
    manualSelector: _m,
    ttlSecondsAfterFinished: _t,
    activeDeadlineSeconds: _a,
    suspend: _u,
    ...rest
  } = spec;
  const later = (s.hook?.step ?? 1) > 1;
  const childSpec: Json = {
    ...rest,
    backoffLimit: 0,
    ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
    // A later hook waits, suspended, until the one before has completed (observe resumes it).
    ...(later ? { suspend: true } : {}),
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
    // The ConfigMap's single Job keeps the plain name; each hook's name is told apart by its step.
    name: childName(op, attempt, NAME_LIMITS.job, s.hook ? `hook:${s.hook.step}:${s.hook.name}` : ''),
    attempt,
    labels: withoutKeys(at(meta, 'labels'), (k) => CONTROLLER_LABELS.includes(k)),
    // Helm hook annotations mean nothing outside a Helm install (and Helm's delete policies would act on
    // a child only the Operation owns); dropped so no tool mistakes the child for a hook.
    annotations: {
      ...withoutKeys(at(meta, 'annotations'), (k) => k.startsWith('helm.sh/')),
      ...(s.hook
        ? {
            [ANNOTATION_HELM_HOOK]: s.hook.name,
            [ANNOTATION_HELM_HOOK_STEP]: `${s.hook.step}/${s.hook.of}`,
          }
        : {}),
    },
  });
  return { ok: true, child: { apiVersion: 'batch/v1', kind: 'Job', metadata, spec: childSpec } };
}

function materialize(input: MaterializeInput): MaterializeResult {
  const found = sources(input);
  if (!Array.isArray(found)) return found;
  const children: ChildManifest[] = [];
  for (const s of found) {
    const made = childJob(input, s);
    if (!made.ok) return made;
    children.push(made.child);
  }
  // Hooks come from the release record, a Secret: a dry run's plan shows their shape, not their values.
  const fromRecord = found.some((s) => s.hook !== undefined);
  return { ok: true, children, ...(fromRecord ? { plan: children.map(redactSecretSourced) } : {}) };
}

/** A hook child's step and step count from its annotation (`2/3`), undefined for the ConfigMap's Job. */
export function hookStep(job: KubernetesObject): { step: number; of: number } | undefined {
  const m = /^(\d+)\/(\d+)$/.exec(job.metadata?.annotations?.[ANNOTATION_HELM_HOOK_STEP] ?? '');
  if (!m) return undefined;
  return { step: Number(m[1]), of: Number(m[2]) };
}

/**
 * The hook Jobs in step order: done while each completes, the first failure fails the Operation, a
 * suspended step whose predecessors all completed is resumed (an action for the reconciler).
 */
function observeSteps(jobs: readonly KubernetesObject[], input: ObserveInput): Observation {
  const of = Math.max(...jobs.map((j) => hookStep(j)?.of ?? 0));
  const byStep = new Map(jobs.map((j) => [hookStep(j)?.step ?? 0, j]));
  const done: string[] = [];
  const label = (step: number, job?: KubernetesObject) =>
    `hook ${step}/${of} ${job?.metadata?.annotations?.[ANNOTATION_HELM_HOOK] ?? ''}`.trimEnd();
  for (let step = 1; step <= of; step++) {
    const job = byStep.get(step);
    if (!job) {
      return failed(
        REASONS.failed,
        `the Job of ${label(step)} was deleted by someone else before the sequence finished${done.length > 0 ? ` (completed: ${done.join(', ')})` : ''}`,
        true,
      );
    }
    const name = job.metadata?.name ?? '';
    const outputs = { jobName: name, ...(done.length > 0 ? { jobNames: [...done, name].join(',') } : {}) };
    if (jobFailed(job)) {
      const before = done.length > 0 ? ` (the hook Jobs before it completed: ${done.join(', ')})` : '';
      const obs = observeJob([job], REASONS, `migration ${label(step, job)}${before}`, input.pods);
      return { ...obs, outputs };
    }
    if (jobFinished(job)) {
      done.push(name);
      continue;
    }
    if (at(job, 'spec', 'suspend') === true) {
      return {
        ...running(REASONS.running, `migration ${label(step, job)}: starting Job ${name}`, outputs),
        actions: [{ kind: 'patch', child: asManifest(job), patch: { spec: { suspend: false } } }],
      };
    }
    const obs = observeJob([job], REASONS, `migration ${label(step, job)}`);
    return { ...obs, outputs };
  }
  const last = jobs.find((j) => hookStep(j)?.step === of);
  const obs = observeJob(last ? [last] : [], REASONS, `migration ${label(of, last)}`, input.pods);
  return succeeded(
    REASONS.succeeded,
    of > 1 ? `${of} hook Jobs completed in order (${done.join(', ')}); ${obs.message}` : obs.message,
    { jobName: done.at(-1) ?? '', jobNames: done.join(',') },
  );
}

function observe(children: readonly KubernetesObject[], input: ObserveInput): Observation {
  const jobs = ofKind(children, 'Job');
  if (jobs.length > 0 && jobs.every((j) => hookStep(j) !== undefined)) return observeSteps(jobs, input);
  return observeJob(children, REASONS, 'migration', input.pods);
}

export const helmHookJobAdapter: EngineAdapter = {
  engine: 'helmHookJob',
  types: ['Migration'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe,
  cancel: cancelJobs,
  podOutcomeContainer: ANY_CONTAINER,
};
