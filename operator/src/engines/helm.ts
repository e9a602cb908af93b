// helm engine (Upgrade): a batch/v1 Job running the helm CLI image: `helm upgrade --atomic --wait` to
// parameters.version, as the runner ServiceAccount the namespace admin binds (never the operator's).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { DEFAULT_RUNNER_SERVICE_ACCOUNT } from '../catalog/templates/fragments.ts';
import { refuseUngranted } from './grants.ts';
import { releaseOf } from './names.ts';
import { str } from './object.ts';
import { cancelJobs, observeJob, runnerJob } from './runner-pod.ts';
import type { EngineAdapter, MaterializeInput, MaterializeResult, Observation } from './types.ts';

export const DEFAULT_HELM_TIMEOUT = '10m';

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
  const release = releaseOf(target);
  const args = [
    'upgrade',
    release.name,
    ...chart,
    '--version',
    version,
    '--atomic',
    '--wait',
    '--timeout',
    str(parameters.timeout) ?? DEFAULT_HELM_TIMEOUT,
    '--reuse-values',
    '--namespace',
    release.namespace,
  ];
  const job = runnerJob({
    op,
    template,
    env,
    attempt,
    containerName: 'helm',
    image: env.helmImage,
    command: ['helm'],
    args,
    serviceAccountName: str(parameters.serviceAccountName) ?? DEFAULT_RUNNER_SERVICE_ACCOUNT,
    // helm writes its cache, config and registry credentials under these; /tmp is the writable path.
    containerEnv: [
      { name: 'HELM_CACHE_HOME', value: '/tmp/helm/cache' },
      { name: 'HELM_CONFIG_HOME', value: '/tmp/helm/config' },
      { name: 'HELM_DATA_HOME', value: '/tmp/helm/data' },
    ],
  });
  return { ok: true, children: [job] };
}

export const helmAdapter: EngineAdapter = {
  engine: 'helm',
  types: ['Upgrade'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe: (children: readonly KubernetesObject[]): Observation =>
    observeJob(
      children,
      { running: 'HelmUpgradeInProgress', succeeded: 'HelmUpgradeSucceeded', failed: 'HelmUpgradeFailed' },
      'helm upgrade',
    ),
  cancel: cancelJobs,
};
