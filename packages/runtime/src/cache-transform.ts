// What an informer keeps of each object. managedFields are the API server's field-ownership
// bookkeeping: on a status-heavy object they are a third to a half of its size, and the cache holds
// every object for the life of the process (controller-runtime offers TransformStripManagedFields for
// the same reason). The only ownership the operator reads is who set which annotation (capability
// annotations: instance/capabilities.ts), so entries keep their manager, operation and annotation
// keys; entries that own no annotation go, and so does everything else in fieldsV1.
//
// Objects read from the cache are never sent back whole with PUT, and an update that omits
// managedFields leaves the server's record unchanged anyway: the projection cannot erase ownership.

import type { KubernetesObject, V1ManagedFieldsEntry } from '@kubernetes/client-node';

type Fields = Record<string, unknown>;

function annotationFields(entry: V1ManagedFieldsEntry): Fields | undefined {
  const meta = (entry.fieldsV1 as Fields | undefined)?.['f:metadata'] as Fields | undefined;
  const annotations = meta?.['f:annotations'] as Fields | undefined;
  if (!annotations || typeof annotations !== 'object') return undefined;
  return Object.keys(annotations).some((k) => k.startsWith('f:')) ? annotations : undefined;
}

/**
 * Reduces `obj.metadata.managedFields` IN PLACE to who owns which annotation (see above) and returns
 * `obj`: for objects the informer owns outright (just parsed, not yet frozen).
 */
export function leanManagedFields<T extends KubernetesObject>(obj: T): T {
  const meta = obj.metadata;
  const entries = meta?.managedFields;
  if (!meta || !entries) return obj;
  const kept: V1ManagedFieldsEntry[] = [];
  for (const e of entries) {
    const annotations = annotationFields(e);
    if (!annotations) continue;
    const lean: V1ManagedFieldsEntry = {
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:annotations': annotations } },
    };
    if (e.manager !== undefined) lean.manager = e.manager;
    if (e.operation !== undefined) lean.operation = e.operation;
    if (e.subresource !== undefined) lean.subresource = e.subresource;
    kept.push(lean);
  }
  if (kept.length > 0) meta.managedFields = kept;
  else delete meta.managedFields;
  return obj;
}
