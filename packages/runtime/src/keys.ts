// Object keys in client-go's format (cache.MetaNamespaceKeyFunc): `namespace/name`, or `name` for
// cluster-scoped objects. Work queues, caches and logs all use this one format.

import type { KubernetesObject } from '@kubernetes/client-node';

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function objectKey(obj: KubernetesObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  return keyOf(obj.metadata?.namespace, name);
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
