// What every Job child (job, helm, helmHookJob) shares: the restricted pod security profile, the
// token rule for runner ServiceAccounts, and the reading of batch/v1 Job conditions.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_OPERATION } from '../api/annotations.ts';
import type { Reason } from '../api/reasons.ts';
import { effectivePolicy } from '../catalog/policy.ts';
import { childMetadata, childName, NAME_LIMITS } from './names.ts';
import { arr, asManifest, at, isRecord, type Json, num, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import type { ChildManifest, EngineEnvironment, MaterializeInput, Observation, PodOutcome } from './types.ts';

/** A non-root uid/gid most images accept (distroless "nonroot"); images that run as root by default
 * (busybox, alpine) would otherwise be refused by the kubelet under runAsNonRoot. */
export const RUNNER_UID = 65532;

/** Pod-level fields of the Kubernetes "restricted" Pod Security Standard. */
export function restrictedPodSecurityContext(): Json {
  return {
    runAsNonRoot: true,
    runAsUser: RUNNER_UID,
    runAsGroup: RUNNER_UID,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** Container-level fields of the "restricted" standard, plus a read-only root filesystem. */
export function restrictedContainerSecurityContext(): Json {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** With a read-only root filesystem, /tmp is the one writable place (an emptyDir). */
export const TMP_VOLUME = { name: 'tmp', emptyDir: {} };
export const TMP_MOUNT = { name: 'tmp', mountPath: '/tmp' };

/**
 * Whether the runner pod may mount its ServiceAccount token: only when the ServiceAccount is not the
 * operator's own (same namespace and name), so the operator's token never reaches a runner.
 */
export function mayMountToken(env: EngineEnvironment, namespace: string, serviceAccount: string): boolean {
  const op = env.operatorServiceAccount;
  return !(op && op.namespace === namespace && op.name === serviceAccount);
}

/**
 * Fills the restricted defaults where a (chart-provided) pod spec leaves them unset; fields the chart
 * set are kept, so a chart that needs e.g. a specific uid keeps it.
 */
export function applyRestrictedDefaults(podSpec: Json): Json {
  const psc = isRecord(podSpec.securityContext) ? { ...podSpec.securityContext } : {};
  psc.runAsNonRoot ??= true;
  psc.seccompProfile ??= { type: 'RuntimeDefault' };
  const harden = (c: unknown): unknown => {
    if (!isRecord(c)) return c;
    const sc = isRecord(c.securityContext) ? { ...c.securityContext } : {};
    sc.allowPrivilegeEscalation ??= false;
    sc.readOnlyRootFilesystem ??= true;
    sc.capabilities ??= { drop: ['ALL'] };
    return { ...c, securityContext: sc };
  };
  return {
    ...podSpec,
    securityContext: psc,
    containers: arr(podSpec.containers).map(harden),
    ...(podSpec.initContainers === undefined
      ? {}
      : { initContainers: arr(podSpec.initContainers).map(harden) }),
  };
}

export interface JobReasons {
  running: Reason;
  succeeded: Reason;
  failed: Reason;
}

function conditionTrue(job: KubernetesObject, type: string): Json | undefined {
  const c = arr(at(job, 'status', 'conditions')).find(
    (x) => isRecord(x) && x.type === type && x.status === 'True',
  );
  return isRecord(c) ? c : undefined;
}

/** The log tail a message carries: at most this many lines and characters (the end is kept). */
export const LOG_TAIL_LINES = 5;
export const LOG_TAIL_CHARS = 512;

/**
 * The last non-empty lines of a container log, bounded for a condition message: control characters
 * (terminal escapes) removed, at most LOG_TAIL_LINES lines and LOG_TAIL_CHARS characters, the end kept.
 */
export function logTail(log: string): string {
  const lines = log
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
  const tail = lines.slice(-LOG_TAIL_LINES).join(' | ');
  return tail.length > LOG_TAIL_CHARS ? `…${tail.slice(-LOG_TAIL_CHARS + 1)}` : tail;
}

/**
 * podOutcomeContainer for Jobs whose containers the engine does not name (a chart's hook Job): the
 * container that exited non-zero, else the first that terminated.
 */
export const ANY_CONTAINER = '*';

function terminatedOf(status: unknown): Json | undefined {
  const t = at(status, 'state', 'terminated') ?? at(status, 'lastState', 'terminated');
  return isRecord(t) ? t : undefined;
}

/** A pod's container status ⇒ its outcome, when the container (or, for ANY_CONTAINER, one) has terminated. Pure. */
export function podOutcome(pod: KubernetesObject, container: string): PodOutcome | undefined {
  const statuses = arr(at(pod, 'status', 'containerStatuses')).filter(isRecord);
  const ended = statuses.filter((c) => terminatedOf(c) !== undefined);
  const status =
    container === ANY_CONTAINER
      ? (ended.find((c) => num(terminatedOf(c)?.exitCode) !== 0) ?? ended[0])
      : statuses.find((c) => c.name === container);
  const terminated = terminatedOf(status);
  if (!terminated) return undefined;
  const exitCode = num(terminated.exitCode);
  const reason = str(terminated.reason);
  return {
    pod: pod.metadata?.name ?? '',
    container: str(status?.name) ?? container,
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(reason ? { reason } : {}),
  };
}

/** "container run of pod p exited with code 3 (Error); last log lines: …", or '' without outcomes. */
export function describeOutcomes(pods: readonly PodOutcome[] | undefined): string {
  const last = pods?.at(-1);
  if (!last) return '';
  const code = last.exitCode === undefined ? 'ended' : `exited with code ${last.exitCode}`;
  const why = last.reason ? ` (${last.reason})` : '';
  const tail = last.logTail ? `; last log lines: ${last.logTail}` : '';
  return `container ${last.container} of pod ${last.pod} ${code}${why}${tail}`;
}

/**
 * batch/v1 Job status ⇒ observation. Since Kubernetes 1.31 the Job controller first sets
 * SuccessCriteriaMet / FailureTarget and only adds Complete / Failed once the pods are gone; either
 * one decides the outcome. A Job that ran out of its activeDeadlineSeconds is not retried (the
 * Operation's own deadline has passed too); any other failure may be.
 */
export function observeJob(
  jobs: readonly KubernetesObject[],
  reasons: JobReasons,
  what: string,
  pods?: readonly PodOutcome[],
): Observation {
  const job = ofKind(jobs, 'Job')[0];
  if (!job) return running(reasons.running, `waiting for the ${what} Job to appear`);
  const name = job.metadata?.name ?? '';
  const outputs = { jobName: name };
  const fail = conditionTrue(job, 'Failed') ?? conditionTrue(job, 'FailureTarget');
  if (fail) {
    const why = str(fail.reason) ?? 'Failed';
    const detail = str(fail.message);
    const outcome = describeOutcomes(pods);
    return failed(
      reasons.failed,
      `${what} Job ${name} failed (${why}${detail ? `: ${detail}` : ''})${outcome ? `: ${outcome}` : ''}; see the logs of its pod (kubectl logs job/${name})`,
      why !== 'DeadlineExceeded',
      outputs,
    );
  }
  if (conditionTrue(job, 'Complete') ?? conditionTrue(job, 'SuccessCriteriaMet')) {
    const outcome = describeOutcomes(pods);
    return succeeded(
      reasons.succeeded,
      `${what} Job ${name} completed${outcome ? `: ${outcome}` : ''}`,
      outputs,
    );
  }
  const active = num(at(job, 'status', 'active')) ?? 0;
  const failedPods = num(at(job, 'status', 'failed')) ?? 0;
  const state = active > 0 ? `${active} pod(s) active` : 'waiting for its pod to start';
  return running(
    reasons.running,
    `${what} Job ${name}: ${state}${failedPods > 0 ? `, ${failedPods} failed` : ''}`,
    outputs,
  );
}

/** Whether a Job has finished either way (the reconciler reads its pods' outcomes then). Pure. */
export function jobFinished(job: KubernetesObject): boolean {
  return ['Complete', 'Failed', 'SuccessCriteriaMet', 'FailureTarget'].some((t) => conditionTrue(job, t));
}

/** Whether a Job has failed (Failed, or FailureTarget before the pods are gone). Pure. */
export function jobFailed(job: KubernetesObject): boolean {
  return ['Failed', 'FailureTarget'].some((t) => conditionTrue(job, t));
}

/**
 * The child Job whose pods tell how the Operation ended, in the children's order (a helmHookJob
 * sequence: their step order): the first that failed, else the last once every one has finished; none
 * while any still runs. For a single Job: that Job once it has finished. Pure.
 */
export function decisiveJob(children: readonly KubernetesObject[]): KubernetesObject | undefined {
  // A Job created suspended that never ran (a helm Upgrade's rollback nobody needed) decides nothing.
  const jobs = children.filter((c) => (c.kind ?? 'Job') === 'Job' && !neverRan(c));
  const failedJob = jobs.find(jobFailed);
  if (failedJob) return failedJob;
  return jobs.length > 0 && jobs.every(jobFinished) ? jobs.at(-1) : undefined;
}

/** A Job still suspended that never started (no status.startTime). Pure. */
export function neverRan(job: KubernetesObject): boolean {
  return at(job, 'spec', 'suspend') === true && at(job, 'status', 'startTime') === undefined;
}

/** Cancel for Job children: delete in the foreground so the pods go first and nothing keeps running. */
export function cancelJobs(children: readonly KubernetesObject[]) {
  return children
    .filter((c) => (c.kind ?? 'Job') === 'Job')
    .map((child) => ({
      kind: 'delete' as const,
      child: asManifest(child),
      propagationPolicy: 'Foreground' as const,
    }));
}

export interface RunnerJobOptions {
  op: MaterializeInput['op'];
  template: MaterializeInput['template'];
  env: EngineEnvironment;
  attempt: number;
  containerName: string;
  image: string;
  command: string[];
  args?: string[];
  serviceAccountName: string;
  containerEnv?: { name: string; value: string }[];
  /** Secrets whose keys become environment variables (a Verify's probeSecret): by name, never by value. */
  envFrom?: { secretRef: { name: string } }[];
  /** A second Job of the same Operation and attempt: part of its name (childName's suffix). */
  nameSuffix?: string;
  /** Created suspended: it runs only once an observation resumes it (spec.suspend: false). */
  suspend?: boolean;
  /** The pod's grace period after SIGTERM, for a runner that cleans up when stopped (helm). */
  terminationGracePeriodSeconds?: number;
  annotations?: Record<string, string>;
}

/**
 * A batch/v1 Job for a runner we fully define (job, helm): restricted pod security, /tmp as the only
 * writable path, backoffLimit 0 (retries are the Operation's retryLimit, each a new child), the
 * policy's deadline, no ttlSecondsAfterFinished (the Operation's TTL deletes it with the Operation).
 */
export function runnerJob(o: RunnerJobOptions): ChildManifest {
  const namespace = o.op.metadata.namespace ?? '';
  const deadline = effectivePolicy(
    o.op.spec.type,
    o.op.spec.policy,
    o.template.defaults,
  ).activeDeadlineSeconds;
  const container: Json = {
    name: o.containerName,
    image: o.image,
    command: o.command,
    ...(o.args && o.args.length > 0 ? { args: o.args } : {}),
    // `env` wins over `envFrom` for the same name, so a Secret cannot override HOME or the VWS_* variables.
    ...(o.envFrom && o.envFrom.length > 0 ? { envFrom: o.envFrom } : {}),
    env: [{ name: 'HOME', value: '/tmp' }, ...(o.containerEnv ?? [])],
    securityContext: restrictedContainerSecurityContext(),
    volumeMounts: [TMP_MOUNT],
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: childMetadata(o.op, {
      name: childName(o.op, o.attempt, NAME_LIMITS.job, o.nameSuffix),
      attempt: o.attempt,
      ...(o.annotations ? { annotations: o.annotations } : {}),
    }),
    spec: {
      backoffLimit: 0,
      ...(o.suspend ? { suspend: true } : {}),
      ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
      template: {
        metadata: { labels: { [LABEL_OPERATION]: o.op.metadata.name ?? '' } },
        spec: {
          restartPolicy: 'Never',
          ...(o.terminationGracePeriodSeconds === undefined
            ? {}
            : { terminationGracePeriodSeconds: o.terminationGracePeriodSeconds }),
          serviceAccountName: o.serviceAccountName,
          automountServiceAccountToken: mayMountToken(o.env, namespace, o.serviceAccountName),
          securityContext: restrictedPodSecurityContext(),
          containers: [container],
          volumes: [TMP_VOLUME],
        },
      },
    },
  };
}
