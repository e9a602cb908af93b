// A helm Upgrade's release as Helm's record describes it now (EngineEnvironment.helmRelease): the newest
// revision, its status and the newest deployed one, from the labels Helm writes on its release Secrets
// (version, status), listed as metadata only: no payload crosses the wire. Read on every reconcile of an
// Upgrade that has not finished, so a stopped runner is judged on the record as it is after the stop.
import type { KubernetesObject } from '@kubernetes/client-node';
import { type KubeClient, resourcePath, statusCode } from '@vworkspace/runtime';
import { LABEL_HELM_INSTANCE } from '../api/annotations.ts';
import type { HelmReleaseState } from '../engines/types.ts';
import { listReleaseRecords } from './release-hooks.ts';

/** Statuses after which Helm's atomic rollback (and `helm rollback`) counts a revision as good. */
const DEPLOYED = new Set(['deployed', 'superseded']);

/** The state the records' labels describe; undefined when there is no record. Pure. */
export function releaseState(items: readonly KubernetesObject[]): HelmReleaseState | undefined {
  let state: HelmReleaseState | undefined;
  let lastDeployed: number | undefined;
  for (const s of items) {
    const revision = Number(s.metadata?.labels?.version);
    const status = s.metadata?.labels?.status ?? '';
    if (!Number.isInteger(revision)) continue;
    if (!state || revision > state.revision) state = { revision, status };
    if (DEPLOYED.has(status) && (lastDeployed === undefined || revision > lastDeployed))
      lastDeployed = revision;
  }
  return state && (lastDeployed === undefined ? state : { ...state, lastDeployed });
}

/** Reads it; undefined when the release has no record or the operator may not list Secrets there. */
export async function readReleaseState(
  client: KubeClient,
  namespace: string,
  release: string,
  signal: AbortSignal,
): Promise<HelmReleaseState | undefined> {
  try {
    return releaseState(await listReleaseRecords(client, namespace, release, signal));
  } catch (err) {
    if (statusCode(err) === 403) return undefined;
    throw err;
  }
}

/**
 * The namespace's Jobs labelled app.kubernetes.io/instance=<release> (EngineEnvironment.helmHookJobs):
 * the chart's hook Jobs are among them. undefined when the operator may not list Jobs there.
 */
export async function readHookJobs(
  client: KubeClient,
  namespace: string,
  release: string,
  signal: AbortSignal,
): Promise<KubernetesObject[] | undefined> {
  try {
    const list = await client.request<{ items?: KubernetesObject[] }>({
      method: 'GET',
      path: resourcePath({ group: 'batch', version: 'v1', plural: 'jobs', namespace }),
      query: { labelSelector: `${LABEL_HELM_INSTANCE}=${release}` },
      signal,
    });
    return (list.items ?? []).map((j) => ({ ...j, apiVersion: 'batch/v1', kind: 'Job' }));
  } catch (err) {
    if (statusCode(err) === 403) return undefined;
    throw err;
  }
}
