// One ListerWatcher over a list of namespaces, for an operator installed to watch only some namespaces
// (OLM's OwnNamespace/SingleNamespace/MultiNamespace install modes: WATCH_NAMESPACE). It lists and
// watches each namespace through its own path, so it needs only Roles there, never a cluster-wide grant;
// the informer on top sees one stream, as controller-runtime's multi-namespace cache does.
//
// resourceVersions are per watch stream, so this keeps one per namespace: each list records its
// namespace's, each event (bookmarks too) advances its namespace's, and a watch resumes every namespace
// from its own. The resourceVersion the informer passes back is therefore ignored; a 410 Gone or any
// other failure in one namespace ends the whole watch, and the informer's relist starts all afresh.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceRef } from './kube-client.ts';
import type { ListerWatcher, ListResult } from './lister-watcher.ts';

/** createInformer's `namespaces` option, left out when every namespace is watched. */
export function scopedTo(namespaces: readonly string[] | undefined): { namespaces?: readonly string[] } {
  return namespaces?.length ? { namespaces } : {};
}

/**
 * `make(resource)` for a namespaced resource left unscoped, or one stream per namespace of `namespaces`
 * (WATCH_NAMESPACE): what every informer constructor uses to honour the install mode.
 */
export function scopedListerWatcher<T extends KubernetesObject>(
  resource: ResourceRef,
  namespaces: readonly string[] | undefined,
  make: (resource: ResourceRef) => ListerWatcher<T>,
): ListerWatcher<T> {
  return namespaces?.length && !resource.namespace
    ? multiNamespaceListerWatcher<T>(namespaces, (namespace) => make({ ...resource, namespace }))
    : make(resource);
}

export function multiNamespaceListerWatcher<T extends KubernetesObject>(
  namespaces: readonly string[],
  perNamespace: (namespace: string) => ListerWatcher<T>,
): ListerWatcher<T> {
  const unique = [...new Set(namespaces)];
  const lws = new Map(unique.map((ns) => [ns, perNamespace(ns)]));
  const versions = new Map<string, string>();
  return {
    async list(opts, signal): Promise<ListResult<T>> {
      const results = await Promise.all(
        [...lws].map(async ([ns, lw]) => [ns, await lw.list(opts, signal)] as const),
      );
      versions.clear();
      for (const [ns, r] of results) versions.set(ns, r.resourceVersion);
      return {
        items: results.flatMap(([, r]) => r.items),
        resourceVersion: JSON.stringify(Object.fromEntries(versions)),
      };
    },

    async watch(opts, onEvent, signal): Promise<void> {
      const ac = new AbortController();
      const stop = () => ac.abort();
      signal.addEventListener('abort', stop, { once: true });
      try {
        // The first stream to end (cleanly or not) ends them all; the informer then watches again.
        const streams = [...lws].map(([ns, lw]) =>
          lw.watch(
            { ...opts, resourceVersion: versions.get(ns) ?? '' },
            (type, obj) => {
              const rv = (obj as KubernetesObject | undefined)?.metadata?.resourceVersion;
              if (type !== 'ERROR' && rv) versions.set(ns, rv);
              onEvent(type, obj);
            },
            ac.signal,
          ),
        );
        // The others end when aborted below; what they say then is not news.
        for (const s of streams) s.catch(() => {});
        await Promise.race(streams);
      } finally {
        signal.removeEventListener('abort', stop);
        ac.abort();
      }
    },
  };
}
