// Metadata-only list and watch: the API server sends each object as a PartialObjectMetadata (apiVersion,
// kind, metadata; no spec, data or status) when asked with these Accept types. For objects whose content
// the operator must not hold (Secrets) or does not need, this keeps the content off the wire, out of the
// process and out of the cache; only existence, labels and resourceVersion arrive.
//
// RBAC cannot tell the two apart: a metadata-only list or watch needs the same `list`/`watch` verbs as a
// full one, so this narrows what the operator does, not what its credentials allow.
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import { Informer, type KubeInformerOptions, kubeListerWatcher } from './informer.ts';
import { type KubeClient, type ResourceRef, RestClient } from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import { scopedListerWatcher } from './multi-namespace.ts';

/** Accept of a metadata-only list (meta.k8s.io/v1 PartialObjectMetadataList). */
export const PARTIAL_OBJECT_METADATA_LIST =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
/** Accept of a metadata-only watch (each event's object is a PartialObjectMetadata). */
export const PARTIAL_OBJECT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** meta.k8s.io/v1 PartialObjectMetadata. */
export interface PartialObjectMetadata extends KubernetesObject {
  apiVersion: 'meta.k8s.io/v1';
  kind: 'PartialObjectMetadata';
  metadata: V1ObjectMeta;
}

function partial(o: unknown): PartialObjectMetadata {
  const metadata = (o as { metadata?: V1ObjectMeta } | null)?.metadata ?? {};
  return { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata };
}

/**
 * Reduces what `lw` delivers to PartialObjectMetadata. Over kubeMetadataListerWatcher it only unifies
 * apiVersion/kind; over any other source (tests, a server that ignored the Accept type) it is what keeps
 * the content out of the cache.
 */
export function metadataOnly(lw: ListerWatcher<KubernetesObject>): ListerWatcher<PartialObjectMetadata> {
  return {
    async list(opts, signal) {
      const r = await lw.list(opts, signal);
      return { resourceVersion: r.resourceVersion, items: r.items.map(partial) };
    },
    watch(opts, onEvent, signal) {
      return lw.watch(
        opts,
        (type, obj) => onEvent(type, type === 'ERROR' || type === 'BOOKMARK' ? obj : partial(obj)),
        signal,
      );
    },
  };
}

/** List and watch `resource` as PartialObjectMetadata (same paging, selectors and errors as kubeListerWatcher). */
export function kubeMetadataListerWatcher(
  kc: KubeConfigLike,
  resource: ResourceRef,
  client: KubeClient,
): ListerWatcher<PartialObjectMetadata> {
  return metadataOnly(
    kubeListerWatcher(kc, resource, client, {
      list: PARTIAL_OBJECT_METADATA_LIST,
      watch: PARTIAL_OBJECT_METADATA,
    }),
  );
}

/**
 * An Informer of `resource` as PartialObjectMetadata: for kinds where only existence, labels or
 * resourceVersion matter, and whose content the operator must not hold (Secrets).
 */
export function createMetadataInformer(
  kc: KubeConfigLike,
  resource: ResourceRef,
  opts: KubeInformerOptions<PartialObjectMetadata> = {},
): Informer<PartialObjectMetadata> {
  const { client, name, namespaces, ...rest } = opts;
  const c = client ?? new RestClient(kc);
  return new Informer<PartialObjectMetadata>({
    ...rest,
    name: name ?? `${resource.plural}${resource.group ? `.${resource.group}` : ''}.metadata`,
    listerWatcher: scopedListerWatcher(resource, namespaces, (r) => kubeMetadataListerWatcher(kc, r, c)),
  });
}
