// helm engine (Upgrade): a batch/v1 Job running the helm CLI image: `helm upgrade --atomic --wait` to
// parameters.version, as the runner ServiceAccount the namespace admin binds (never the operator's).
// The release keeps the values set before (--reset-then-reuse-values: the new chart's defaults, then the
// release's own values, then parameters.values); the reconciler reads the helm container's exit code and
// log tail, so a failed upgrade's condition carries helm's own error. The chart comes from where the release
// was installed from (upgradeChart, ADR 0027), and nothing a tenant writes can become a helm flag. Beside the
// runner, a suspended rollback Job puts the release back when the runner is stopped or dies mid-upgrade
// (helm-rollback.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_HELM_ROLLBACK_REVISION } from '../api/annotations.ts';
import {
  type ApplicationInstance,
  CHART_NAME_PATTERN,
  type ChartSource,
} from '../api/applicationinstance.ts';
import type { Safety, Template } from '../catalog/template.ts';
import { DEFAULT_RUNNER_SERVICE_ACCOUNT, VALUES_KEY_PATTERN } from '../catalog/templates/fragments.ts';
import { parsePositiveDuration } from '../time/duration.ts';
import { refuseUngranted } from './grants.ts';
import {
  cancelRollback,
  isRollbackJob,
  observeRollback,
  ROLLBACK_JOB_SUFFIX,
  rollbackArgs,
  STOP_GRACE_MARGIN_SECONDS,
} from './helm-rollback.ts';
import {
  cancelSafe,
  isSafeUpgrade,
  observeSafe,
  postCheckJob,
  SAFE_UPGRADE_PROFILE,
  safeRollbackAnnotations,
} from './helm-safe.ts';
import { releaseOf } from './names.ts';
import { isRecord, type Json, str } from './object.ts';
import { ANY_CONTAINER, cancelJobs, observeJob, runnerJob } from './runner-pod.ts';
import { snapshotBackup } from './snapshot.ts';
import type {
  ChildManifest,
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
 * parameters.values as helm arguments: one `--set-json=<key>=<JSON>` per top-level key, sorted, so the
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
  return { args: keys.map((k) => `--set-json=${k}=${JSON.stringify(values[k])}`) };
}

/** The chart arguments of `helm upgrade`: an OCI reference, or the chart name and `--repo=<url>`. */
export function chartArgs(chart: ChartSource): { ref: string; flags: string[] } {
  if (chart.sourceType === 'oci') return { ref: `${chart.url.replace(/\/+$/, '')}/${chart.name}`, flags: [] };
  return { ref: chart.name, flags: [`--repo=${chart.url}`] };
}

/** Whether `url` is one of the template's allowedChartSources or under one (a prefix ending at a `/`). */
export function chartSourceAllowed(template: Pick<Template, 'allowedChartSources'>, url: string): boolean {
  return (template.allowedChartSources ?? []).some((allowed) => {
    const base = allowed.replace(/\/+$/, '');
    return url === base || url.startsWith(`${base}/`);
  });
}

const sameSource = (a: ChartSource, b: ChartSource) =>
  a.sourceType === b.sourceType &&
  a.name === b.name &&
  a.url.replace(/\/+$/, '') === b.url.replace(/\/+$/, '');

const describeSource = (c: ChartSource) => `${c.sourceType} ${c.url} chart ${c.name}`;

/**
 * The chart an Upgrade installs (ADR 0027): the instance's spec.appRef.chart when it is where the release
 * was installed from (status.release.chartSource, which only the operator writes), or a source the
 * template's allowedChartSources lists. Anyone who may patch the instance can change spec.appRef.chart;
 * that alone must not make the owner's next Upgrade install from elsewhere.
 */
export function upgradeChart(
  target: ApplicationInstance,
  template: Pick<Template, 'name' | 'allowedChartSources'>,
): { ok: true; chart: ChartSource } | { ok: false; reason: string; message: string } {
  const spec = target.spec.appRef.chart;
  const name = target.metadata.name;
  if (!spec) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `ApplicationInstance ${name} has no spec.appRef.chart, so there is no chart to upgrade from; add the chart's sourceType, url and name`,
    };
  }
  const chart: ChartSource = { sourceType: spec.sourceType, url: spec.url, name: spec.name };
  // The CRD's pattern; an instance stored before it had one is judged here.
  if (!new RegExp(CHART_NAME_PATTERN).test(chart.name)) {
    return {
      ok: false,
      reason: 'ChartSourceNotAllowed',
      message: `spec.appRef.chart.name of ApplicationInstance ${name} is ${JSON.stringify(chart.name)}, which is not a chart name (${CHART_NAME_PATTERN}); helm would read it as a flag or a path. Fix the instance's chart name, then create a new Operation`,
    };
  }
  const recorded = target.status?.release?.chartSource;
  if ((recorded && sameSource(recorded, chart)) || chartSourceAllowed(template, chart.url)) {
    return { ok: true, chart };
  }
  const allow = `or, if the chart really moved, have a platform admin list ${chart.url} in allowedChartSources of template ${template.name} (catalog), then create a new Operation`;
  if (!recorded) {
    return {
      ok: false,
      reason: 'ChartSourceNotAllowed',
      message: `the operator has not recorded where release ${releaseOf(target).name} was installed from (status.release.chartSource of ApplicationInstance ${name} is set once the release record shows chart ${chart.name} deployed while spec.appRef.chart names it), so it does not upgrade from ${describeSource(chart)}: wait until the instance is Ready, make spec.appRef.chart name the release's chart, ${allow}`,
    };
  }
  return {
    ok: false,
    reason: 'ChartSourceNotAllowed',
    message: `spec.appRef.chart of ApplicationInstance ${name} (${describeSource(chart)}) is not where release ${releaseOf(target).name} was installed from (${describeSource(recorded)}, status.release.chartSource); an Upgrade installs only from the release's own source, whoever edited the instance. Set spec.appRef.chart back to ${recorded.url} (${recorded.sourceType}, chart ${recorded.name}), ${allow}`,
  };
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
  const source = upgradeChart(target, template);
  if (!source.ok) return source;
  const chart = chartArgs(source.chart);
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
  // Every value rides in its flag (`--flag=value`) and the positional arguments come after `--`, so no
  // value, whatever it holds, is ever read as another flag (e.g. `--post-renderer=<program>`).
  const timeout = str(parameters.timeout) ?? DEFAULT_HELM_TIMEOUT;
  const args = [
    'upgrade',
    `--version=${version}`,
    '--atomic',
    '--wait',
    `--timeout=${timeout}`,
    // Not --reuse-values: that renders the new chart with the OLD chart's defaults (helm replaces
    // chart.Values), so a value the new version adds or changes would be missing.
    '--reset-then-reuse-values',
    ...values.args,
    `--namespace=${release.namespace}`,
    ...chart.flags,
    '--',
    release.name,
    chart.ref,
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
  const safety = template.safety;
  if (back === undefined) {
    if (!safety) return { ok: true, children: [job] };
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `template ${template.name} is a Safe Upgrade, which puts the release back to the revision it started from, and release ${release.name} has no deployed revision to return to; make it deployed (helm status), then create a new Operation`,
    };
  }
  const rollbackJob = (annotations: Record<string, string> = {}) =>
    runnerJob({
      ...runner,
      args: rollbackArgs(release.name, back, timeout, release.namespace),
      nameSuffix: ROLLBACK_JOB_SUFFIX,
      suspend: true,
      annotations: { [ANNOTATION_HELM_ROLLBACK_REVISION]: String(back), ...annotations },
    });
  if (!safety) return { ok: true, children: [job, rollbackJob()] };
  return materializeSafe(input, safety, { job, rollbackJob, revision: back, release: release.name });
}

/** A Safe Upgrade's children (helm-safe.ts): [runner, post-check?, rollback, VolumeSnapshot…]. */
function materializeSafe(
  input: MaterializeInput,
  safety: Safety,
  o: {
    job: ChildManifest;
    rollbackJob: (a: Record<string, string>) => ChildManifest;
    revision: number;
    release: string;
  },
): MaterializeResult {
  const { template } = input;
  const restores = safety.restoreOnFailure === true;
  if (restores && !safety.backup) {
    return {
      ok: false,
      reason: 'NotAllowedByTemplate',
      message: `template ${template.name} sets safety.restoreOnFailure without safety.backup: there would be nothing to restore from; a platform admin fixes the template`,
    };
  }
  if (safety.backup && template.rbacProfile !== SAFE_UPGRADE_PROFILE) {
    return {
      ok: false,
      reason: 'NotAllowedByTemplate',
      message: `template ${template.name} takes a pre-upgrade backup (safety.backup) but names rbacProfile ${template.rbacProfile}, which does not let the operator snapshot and restore the release's claims; a platform admin sets rbacProfile ${SAFE_UPGRADE_PROFILE} (and binds it)`,
    };
  }
  const rollback = o.rollbackJob(safeRollbackAnnotations(restores));
  const probe = safety.postCheck ? [postCheckJob(input, safety.postCheck, o.revision, o.release)] : [];
  // The post-check before the rollback Job: when both failed, its pod's outcome (the reason the release is
  // being put back) is the one the condition quotes (decisiveJob: the first failed Job).
  if (!safety.backup) return { ok: true, children: [o.job, ...probe, rollback] };
  const snapshots = snapshotBackup(input, safety.backup.volumeSnapshotClassName);
  if (!snapshots.ok) return snapshots;
  // The runner waits for the backup (observeSafe resumes it).
  const runner = { ...o.job, spec: { ...(o.job.spec as Json), suspend: true } };
  return { ok: true, children: [runner, ...probe, rollback, ...snapshots.children] };
}

/** A plain Upgrade's state: the runner, and the rollback Job once it is needed (helm-rollback.ts). */
function observePlain(children: readonly KubernetesObject[], input: ObserveInput): Observation {
  const runner = (jobs: readonly KubernetesObject[]) =>
    observeJob(
      jobs,
      { running: 'HelmUpgradeInProgress', succeeded: 'HelmUpgradeSucceeded', failed: 'HelmUpgradeFailed' },
      'helm upgrade',
      input.pods,
    );
  return observeRollback(children, input, runner) ?? runner(children.filter((c) => !isRollbackJob(c)));
}

export const helmAdapter: EngineAdapter = {
  engine: 'helm',
  types: ['Upgrade'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe: (children: readonly KubernetesObject[], input: ObserveInput): Observation =>
    isSafeUpgrade(children)
      ? observeSafe(children, input, (jobs) => observePlain(jobs, input), input.op.spec.cancel === true)
      : observePlain(children, input),
  cancel: (children, input) => {
    if (input && isSafeUpgrade(children)) {
      return cancelSafe(
        children,
        input,
        (jobs) => observePlain(jobs, input),
        (jobs) => cancelRollback(jobs, input),
      );
    }
    return children.some(isRollbackJob) ? cancelRollback(children, input) : cancelJobs(children);
  },
  // The runner's helm container, or a Safe Upgrade's post-check container (the one that decided).
  podOutcomeContainer: ANY_CONTAINER,
};
