// The few writes CronOperation and WatchOperation make to Operations: create with adopt-on-conflict,
// graceful cancel (spec.cancel; never a delete of a running Operation) and history pruning.

import { OPERATION, type Operation } from '../api/index.ts';
import { isAlreadyExists, isNotFound, type KubeClient, PATCH_TYPES, resourcePath } from '../runtime/index.ts';

function path(namespace: string, name?: string): string {
  return resourcePath(
    { group: OPERATION.group, version: OPERATION.version, plural: OPERATION.plural, namespace },
    name,
  );
}

/**
 * Creates `op`. If the name is taken (a restart or a stale cache re-decided the same run) the existing
 * Operation is returned instead: the deterministic name is what makes a run happen once.
 */
export async function createOrAdopt(
  client: KubeClient,
  op: Operation,
  signal?: AbortSignal,
): Promise<{ op: Operation; adopted: boolean }> {
  const ns = op.metadata.namespace ?? '';
  try {
    const created = await client.request<Operation>({
      method: 'POST',
      path: path(ns),
      body: op,
      ...(signal ? { signal } : {}),
    });
    return { op: created, adopted: false };
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await client.request<Operation>({
      method: 'GET',
      path: path(ns, op.metadata.name),
      ...(signal ? { signal } : {}),
    });
    return { op: existing, adopted: true };
  }
}

/** Asks a running Operation to stop (the Operation controller stops its engine child; it ends Cancelled). */
export async function cancelOperation(
  client: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await client.request({
      method: 'PATCH',
      path: path(namespace, name),
      body: { spec: { cancel: true } },
      contentType: PATCH_TYPES.merge,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Deletes a finished Operation (history limit); its children go with it (owner references). */
export async function deleteOperation(
  client: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await client.request({
      method: 'DELETE',
      path: path(namespace, name),
      query: { propagationPolicy: 'Background' },
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
