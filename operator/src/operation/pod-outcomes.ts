// How a finished child Job's pods ended, for adapters that ask (EngineAdapter.podOutcomeContainer: the
// job, helm and helmHookJob engines): the container's terminated state from the pod and the tail of its
// log, read once the deciding Job has finished (decisiveJob: the first failed child Job, else the last
// once all have finished) and handed to observe (decide.ts). The engine's RBAC profile grants pods and
// pods/log; without them, or when the pod is already gone (a deadline or a cancel deletes it), the
// Operation's message simply has no outcome. The log tail is never written to the operator's own log:
// it goes, bounded and cleaned (logTail), into the Operation's condition only.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '@vworkspace/runtime';
import { decisiveJob, logTail, podOutcome } from '../engines/runner-pod.ts';
import type { PodOutcome } from '../engines/types.ts';

/** Lines asked of the API server; logTail keeps the last few of them. */
const TAIL_LINES = 20;
const LIMIT_BYTES = 8192;

export async function readPodOutcomes(
  client: KubeClient,
  children: readonly KubernetesObject[],
  container: string,
  signal: AbortSignal,
): Promise<PodOutcome[] | undefined> {
  const job = decisiveJob(children);
  const ns = job?.metadata?.namespace;
  const uid = job?.metadata?.uid;
  if (!job || !ns || !uid) return undefined;
  const pods = await client
    .request<{ items?: KubernetesObject[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/pods`,
      query: { labelSelector: `batch.kubernetes.io/controller-uid=${uid}` },
      signal,
    })
    .catch(() => undefined);
  const items = [...(pods?.items ?? [])].sort((a, b) =>
    String(a.metadata?.creationTimestamp ?? '').localeCompare(String(b.metadata?.creationTimestamp ?? '')),
  );
  const out: PodOutcome[] = [];
  for (const pod of items) {
    const outcome = podOutcome(pod, container);
    if (!outcome) continue;
    const log = await client
      .request<unknown>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods/${outcome.pod}/log`,
        query: { container: outcome.container, tailLines: TAIL_LINES, limitBytes: LIMIT_BYTES },
        signal,
      })
      // The client parses a body that happens to be JSON ("3"); a log is text either way.
      .then((body) => (typeof body === 'string' ? body : body == null ? '' : JSON.stringify(body)))
      .catch(() => undefined);
    const tail = log === undefined ? '' : logTail(log);
    out.push(tail ? { ...outcome, logTail: tail } : outcome);
  }
  return out;
}
