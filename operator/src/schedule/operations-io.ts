// The few writes CronOperation and WatchOperation make to Operations: create with adopt-on-conflict,
// graceful cancel (spec.cancel; never a delete of a running Operation) and history pruning.

import { OPERATION, type Operation } from '../api/index.ts';
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeClient,
  PATCH_TYPES,
  resourcePath,
} from '../runtime/index.ts';
import { isControlledBy, type SchedulerKind } from './owner.ts';

function path(namespace: string, name?: string): string {
  return resourcePath(
    { group: OPERATION.group, version: OPERATION.version, plural: OPERATION.plural, namespace },
    name,
  );
}

/**
 * What createOrAdopt did: created `op`; adopted the Operation of that name because its controller is this
 * scheduler (a restart or a stale cache re-decided the same run); or found the name `taken` by an
 * Operation this scheduler did not create (someone pre-created it: never adopted, never counted).
 */
export type CreateOutcome =
  | { op: Operation; adopted: boolean; taken?: false }
  | { op: Operation; taken: true };

/**
 * Creates `op`. If the name exists, the existing Operation is adopted when its controller ownerReference
 * is `owner` (the deterministic name is what makes a run happen once), and reported `taken` otherwise.
 */
export async function createOrAdopt(
  client: KubeClient,
  op: Operation,
  owner: { kind: SchedulerKind; uid: string | undefined },
  signal?: AbortSignal,
): Promise<CreateOutcome> {
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
    return isControlledBy(existing, owner.kind, owner.uid)
      ? { op: existing, adopted: true }
      : { op: existing, taken: true };
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

/**
 * Deletes a finished Operation (history limit); its children go with it (owner references). `uid`: only
 * that object (a precondition), never one created under the same name since the decision.
 */
export async function deleteOperation(
  client: KubeClient,
  namespace: string,
  name: string,
  uid: string | undefined,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await client.request({
      method: 'DELETE',
      path: path(namespace, name),
      query: { propagationPolicy: 'Background' },
      ...(uid ? { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } } } : {}),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    // Gone, or replaced by another object of that name (the uid precondition): not ours to delete.
    if (!isNotFound(err) && !isConflict(err)) throw err;
  }
}
