// Helpers for the scheduling controllers' integration tests: polling, REST paths, Operation status.
import {
  APPLICATION_INSTANCE,
  CRON_OPERATION,
  OPERATION,
  type Operation,
  type ResourceId,
  WATCH_OPERATION,
} from '../../../operator/src/api/index.ts';
import {
  type KubeClient,
  type KubeRequest,
  PATCH_TYPES,
  type RestClient,
  resourcePath,
} from '../../../operator/src/runtime/index.ts';

export { eventually } from '../../support/eventually.ts';

export function pathOf(r: ResourceId, namespace: string, name?: string, sub?: string): string {
  return resourcePath({ group: r.group, version: r.version, plural: r.plural, namespace }, name, sub);
}

export const kinds = {
  op: OPERATION,
  cron: CRON_OPERATION,
  watch: WATCH_OPERATION,
  instance: APPLICATION_INSTANCE,
};

export async function listOperations(client: RestClient, ns: string): Promise<Operation[]> {
  const list = await client.request<{ items: Operation[] }>({ method: 'GET', path: pathOf(OPERATION, ns) });
  return list.items.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
}

/** What the Operation reconciler would do at the end: phase and finishedAt on the status subresource. */
export async function finishOperation(
  client: RestClient,
  ns: string,
  name: string,
  phase: string,
): Promise<void> {
  await client.request({
    method: 'PATCH',
    path: pathOf(OPERATION, ns, name, 'status'),
    body: { status: { phase, finishedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') } },
    contentType: PATCH_TYPES.merge,
  });
}

export async function mergePatch(client: RestClient, path: string, body: unknown): Promise<void> {
  await client.request({ method: 'PATCH', path, body, contentType: PATCH_TYPES.merge });
}

export interface EventItem {
  type?: string;
  reason?: string;
  note?: string;
  regarding?: { name?: string; kind?: string };
}

export async function eventsAbout(
  client: RestClient,
  ns: string,
  kind: string,
  name: string,
): Promise<EventItem[]> {
  const list = await client.request<{ items: EventItem[] }>({
    method: 'GET',
    path: resourcePath({ group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: ns }),
  });
  return list.items.filter((e) => e.regarding?.kind === kind && e.regarding.name === name);
}

/** Passes requests through; `failStatusOf` makes status writes of that resource path fail (a crash). */
export class FaultyClient implements KubeClient {
  failStatusOf: string | undefined;
  readonly #inner: KubeClient;
  constructor(inner: KubeClient) {
    this.#inner = inner;
  }
  request<T>(req: KubeRequest): Promise<T> {
    if (
      this.failStatusOf &&
      req.method === 'PATCH' &&
      req.path.startsWith(this.failStatusOf) &&
      req.path.endsWith('/status')
    )
      return Promise.reject(new Error('injected: status write lost'));
    return this.#inner.request<T>(req);
  }
}
