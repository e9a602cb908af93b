// What every engine installer does on a running RealNode: push its images, apply its objects, and wait
// until its Deployments and DaemonSets have ready pods (with the pods' own words when they do not).
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '@vworkspace/runtime';
import type { BuiltImage } from '../../images/build.ts';
import { pushBuilt } from '../../images/build.ts';
import { apply, type RealNode } from '../real-node.ts';

export type Obj = Record<string, unknown>;

/** Pushes images to the node's loopback registry (idempotent: same content, same digest). */
export function pushImages(node: RealNode, images: readonly BuiltImage[]): void {
  for (const b of images) pushBuilt(b, node.workdir);
}

/** Server-side applies each object in order, as `manager`. */
export async function applyAll(client: KubeClient, objects: readonly Obj[], manager: string): Promise<void> {
  for (const obj of objects) await apply(client, obj, manager);
}

interface PodList {
  items: {
    metadata?: { name?: string };
    status?: {
      phase?: string;
      initContainerStatuses?: ContainerStatus[];
      containerStatuses?: ContainerStatus[];
      conditions?: { type: string; status: string; message?: string }[];
    };
  }[];
}
interface ContainerStatus {
  name: string;
  state?: {
    waiting?: { reason?: string; message?: string };
    terminated?: { reason?: string; exitCode?: number };
  };
  lastState?: { terminated?: { reason?: string; exitCode?: number } };
}

/** One line per pod matching `selector`: phase, and why a container waits or last ended. */
export async function podSummary(client: KubeClient, namespace: string, selector: string): Promise<string> {
  const pods = await client.request<PodList>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`,
    query: { labelSelector: selector },
  });
  if (pods.items.length === 0) return `no pods in ${namespace} match ${selector}`;
  return pods.items
    .map((p) => {
      const why = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]
        .map((c) => {
          const w = c.state?.waiting;
          const t = c.state?.terminated ?? c.lastState?.terminated;
          if (w)
            return `${c.name}: ${w.reason ?? 'waiting'}${w.message ? ` (${w.message.slice(0, 300)})` : ''}`;
          if (t) return `${c.name}: ${t.reason ?? 'terminated'} exit ${t.exitCode}`;
          return '';
        })
        .filter(Boolean);
      const unscheduled = p.status?.conditions?.find(
        (c) => c.type === 'PodScheduled' && c.status === 'False',
      );
      if (unscheduled?.message) why.push(`unschedulable: ${unscheduled.message}`);
      return `${namespace}/${p.metadata?.name}: ${p.status?.phase}${why.length ? ` — ${why.join('; ')}` : ''}`;
    })
    .join('\n');
}

/**
 * Waits until the Deployment or DaemonSet `name` has all its desired pods ready; on timeout the error
 * carries the pods' states (selector: the workload's own matchLabels).
 */
export async function waitReady(
  client: KubeClient,
  kind: 'Deployment' | 'DaemonSet',
  namespace: string,
  name: string,
  timeoutMs = 180_000,
): Promise<void> {
  const path = `/apis/apps/v1/namespaces/${namespace}/${kind === 'Deployment' ? 'deployments' : 'daemonsets'}/${name}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const w = await client
      .request<{
        spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
        status?: {
          readyReplicas?: number;
          updatedReplicas?: number;
          desiredNumberScheduled?: number;
          numberReady?: number;
          updatedNumberScheduled?: number;
          observedGeneration?: number;
        };
        metadata?: { generation?: number };
      }>({ method: 'GET', path })
      .catch(() => undefined);
    const s = w?.status;
    const current = (s?.observedGeneration ?? -1) >= (w?.metadata?.generation ?? 0);
    const ready =
      kind === 'Deployment'
        ? (s?.readyReplicas ?? 0) >= (w?.spec?.replicas ?? 1) &&
          (s?.updatedReplicas ?? 0) >= (w?.spec?.replicas ?? 1)
        : (s?.desiredNumberScheduled ?? 0) > 0 &&
          s?.numberReady === s?.desiredNumberScheduled &&
          s?.updatedNumberScheduled === s?.desiredNumberScheduled;
    if (w && current && ready) return;
    if (Date.now() > deadline) {
      const selector = Object.entries(w?.spec?.selector?.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      throw new Error(
        `${kind} ${namespace}/${name} not ready within ${timeoutMs / 1000} s:\n${selector ? await podSummary(client, namespace, selector) : 'no such workload'}`,
      );
    }
    await sleep(500);
  }
}

/**
 * Memoizes `install` per node; a failed install is forgotten, so the next caller tries again. `log`
 * hears the progress of the call that installs (later callers share its result).
 */
export function perNode<T>(
  install: (node: RealNode, log: (m: string) => void) => Promise<T>,
): (node: RealNode, log?: (m: string) => void) => Promise<T> {
  const done = new WeakMap<RealNode, Promise<T>>();
  return (node, log = () => {}) => {
    let p = done.get(node);
    if (!p) {
      p = install(node, log);
      done.set(node, p);
      p.catch(() => done.delete(node));
    }
    return p;
  };
}
