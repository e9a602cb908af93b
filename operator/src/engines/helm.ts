// helm engine (Upgrade): a batch/v1 Job running the helm CLI image: `helm upgrade --atomic --wait` to
// parameters.version, as the runner ServiceAccount the namespace admin binds (never the operator's).
// The release keeps the values set before (--reset-then-reuse-values: the new chart's defaults, then the
// release's own values, then parameters.values); the reconciler reads the helm container's exit code and
// log tail, so a failed upgrade's condition carries helm's own error. Beside it, a suspended rollback Job
// puts the release back when the runner is stopped or dies mid-upgrade (helm-rollback.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_HELM_ROLLBACK_REVISION } from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { DEFAULT_RUNNER_SERVICE_ACCOUNT, VALUES_KEY_PATTERN } from '../catalog/templates/fragments.ts';
import { parsePositiveDuration } from '../schedule/duration.ts';
import { refuseUngranted } from './grants.ts';
import {
  cancelRollback,
  isRollbackJob,
  observeRollback,
  ROLLBACK_JOB_SUFFIX,
  rollbackArgs,
  STOP_GRACE_MARGIN_SECONDS,
} from './helm-rollback.ts';
import { releaseOf } from './names.ts';
import { isRecord, str } from './object.ts';
import { cancelJobs, observeJob, runnerJob } from './runner-pod.ts';
import type {
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';

export const DEFAULT_HELM_TIMEOUT = '10m';

/** The helm CLI's container in the runner Job's pod (its exit code and log tail end up in the condition). */
export const HELM_CONTAINER = 'helm';

/**
 * parameters.values as helm arguments: one `--set-json <key>=<JSON>` per top-level key, sorted, so the
 * values are data (never a shell or a file) and the Job is the same for the same values. A key that is
 * not a plain name (helm would read `a.b` as a path) is refused.
 */
export function valuesArgs(values: unknown): { args: string[] } | { error: string } {
  if (values === undefined) return { args: [] };
  if (!isRecord(values)) return { error: 'parameters.values must be an object of chart values' };
  const keys = Object.keys(values).sort();
  const bad = keys.filter((k) => !new RegExp(VALUES_KEY_PATTERN).test(k));
  if (bad.length > 0) {
    return {
      error: `parameters.values keys must be plain names (${VALUES_KEY_PATTERN}); nest instead of using paths: ${bad.map((k) => JSON.stringify(k)).join(', ')}`,
    };
  }
  return { args: keys.flatMap((k) => ['--set-json', `${k}=${JSON.stringify(values[k])}`]) };
}

/** The chart arguments of `helm upgrade`: an OCI reference, or the chart name plus `--repo <url>`. */
export function chartArgs(target: ApplicationInstance): string[] | undefined {
  const chart = target.spec.appRef.chart;
  if (!chart) return undefined;
  if (chart.sourceType === 'oci') return [`${chart.url.replace(/\/+$/, '')}/${chart.name}`];
  return [chart.name, '--repo', chart.url];
}

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, target, template, parameters, env, attempt } = input;
  const refused = refuseUngranted(input);
  if (refused) return refused;
  if (!env.helmImage) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message:
        'the operator has no helm CLI image (environment variable RELATED_IMAGE_HELM is unset); the helm engine cannot run until the operator Deployment sets it',
    };
  }
  const chart = chartArgs(target);
  if (!chart) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `ApplicationInstance ${target.metadata.name} has no spec.appRef.chart, so there is no chart to upgrade from; add the chart's sourceType, url and name`,
    };
  }
  const version = str(parameters.version);
  if (!version)
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: 'parameters.version (the chart version to upgrade to) is required',
    };
  const values = valuesArgs(parameters.values);
  if ('error' in values) return { ok: false, reason: 'InvalidParameters', message: values.error };
  const release = releaseOf(target);
  const timeout = str(parameters.timeout) ?? DEFAULT_HELM_TIMEOUT;
  const args = [
    'upgrade',
    release.name,
    ...chart,
    '--version',
    version,
    '--atomic',
    '--wait',
    '--timeout',
    timeout,
    // Not --reuse-values: that renders the new chart with the OLD chart's defaults (helm replaces
    // chart.Values), so a value the new version adds or changes would be missing.
    '--reset-then-reuse-values',
    ...values.args,
    '--namespace',
    release.namespace,
  ];
  const runner = {
    op,
    template,
    env,
    attempt,
    containerName: HELM_CONTAINER,
    image: env.helmImage,
    command: ['helm'],
    serviceAccountName: str(parameters.serviceAccountName) ?? DEFAULT_RUNNER_SERVICE_ACCOUNT,
    // helm writes its cache, config and registry credentials under these; /tmp is the writable path.
    containerEnv: [
      { name: 'HELM_CACHE_HOME', value: '/tmp/helm/cache' },
      { name: 'HELM_CONFIG_HOME', value: '/tmp/helm/config' },
      { name: 'HELM_DATA_HOME', value: '/tmp/helm/data' },
    ],
  };
  // Stopped (cancel, deadline), helm rolls the release back before it exits: give it its --timeout.
  const waits = parsePositiveDuration(timeout);
  const grace = (waits.ok ? Math.ceil(waits.ms / 1000) : 0) + STOP_GRACE_MARGIN_SECONDS;
  const job = runnerJob({ ...runner, args, terminationGracePeriodSeconds: grace });
  // The rollback needs a revision to go back to: the newest deployed one (none: nothing to return to).
  const back = env.helmRelease?.lastDeployed;
  if (back === undefined) return { ok: true, children: [job] };
  const rollback = runnerJob({
    ...runner,
    args: rollbackArgs(release.name, back, timeout, release.namespace),
    nameSuffix: ROLLBACK_JOB_SUFFIX,
    suspend: true,
    annotations: { [ANNOTATION_HELM_ROLLBACK_REVISION]: String(back) },
  });
  return { ok: true, children: [job, rollback] };
}

export const helmAdapter: EngineAdapter = {
  engine: 'helm',
  types: ['Upgrade'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe: (children: readonly KubernetesObject[], input: ObserveInput): Observation => {
    const runner = (jobs: readonly KubernetesObject[]) =>
      observeJob(
        jobs,
        { running: 'HelmUpgradeInProgress', succeeded: 'HelmUpgradeSucceeded', failed: 'HelmUpgradeFailed' },
        'helm upgrade',
        input.pods,
      );
    return observeRollback(children, input, runner) ?? runner(children.filter((c) => !isRollbackJob(c)));
  },
  cancel: (children, input) =>
    children.some(isRollbackJob) ? cancelRollback(children, input) : cancelJobs(children),
  podOutcomeContainer: HELM_CONTAINER,
};
