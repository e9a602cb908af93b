// The hooks of a release for the helmHookJob engine (ADR 0017), read the way the instance controller
// reads release records (docs/security/threat-model.md, item 5): the release's Secrets are listed as
// metadata only (labels owner=helm, name=<release>; no data crosses the wire), and only the newest
// revision's Secret is read in full, by name, in the Operation's own namespace. What is kept is the
// hooks (ReleaseHook); the payload, rendered values and all, is dropped with the reconcile.
import type { KubernetesObject } from '@kubernetes/client-node';
import { type KubeClient, PARTIAL_OBJECT_METADATA_LIST, resourcePath, statusCode } from '@vworkspace/runtime';
import type { ReleaseHooks } from '../engines/types.ts';
import { decodeReleaseHooks, HELM_RELEASE_SECRET_TYPE, type SecretLike } from '../release/helm-release.ts';

/** The newest revision among release Secrets' metadata (Helm's `version` label). Pure. */
export function newestRevision(
  items: readonly KubernetesObject[],
): { name: string; revision: number } | undefined {
  let best: { name: string; revision: number } | undefined;
  for (const s of items) {
    const revision = Number(s.metadata?.labels?.version);
    const name = s.metadata?.name;
    if (!name || !Number.isInteger(revision)) continue;
    if (!best || revision > best.revision) best = { name, revision };
  }
  return best;
}

/** The release's Secrets (Helm's records) as metadata only: names and Helm's labels, no data. */
export async function listReleaseRecords(
  client: KubeClient,
  namespace: string,
  release: string,
  signal: AbortSignal,
): Promise<KubernetesObject[]> {
  const list = await client.request<{ items?: KubernetesObject[] }>({
    method: 'GET',
    path: resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace }),
    query: {
      labelSelector: `owner=helm,name=${release}`,
      fieldSelector: `type=${HELM_RELEASE_SECRET_TYPE}`,
    },
    accept: PARTIAL_OBJECT_METADATA_LIST,
    signal,
  });
  return list.items ?? [];
}

export async function readReleaseHooks(
  client: KubeClient,
  namespace: string,
  release: string,
  signal: AbortSignal,
): Promise<ReleaseHooks> {
  const path = resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace });
  try {
    const newest = newestRevision(await listReleaseRecords(client, namespace, release, signal));
    if (!newest) return { hooks: [] };
    // `list` by name: the operator's Secret rule is list and watch, no get.
    const full = await client.request<{ items?: SecretLike[] }>({
      method: 'GET',
      path,
      query: { fieldSelector: `metadata.name=${newest.name}` },
      signal,
    });
    const secret = full.items?.[0];
    if (!secret) return { hooks: [] };
    try {
      return { revision: newest.revision, hooks: decodeReleaseHooks(secret) };
    } catch (err) {
      return { revision: newest.revision, hooks: [], problem: (err as Error).message };
    }
  } catch (err) {
    if (statusCode(err) !== 403) throw err;
    return {
      hooks: [],
      problem: `the operator may not list Secrets in namespace ${namespace} (its ClusterRole grants list and watch on secrets; restore it)`,
    };
  }
}
