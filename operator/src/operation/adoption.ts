// Which existing object is this Operation's child. Child names are deterministic (a function of the
// Operation's uid, which anyone who can read the Operation knows), so an object of that name may have
// been made by someone else to fake the outcome. The operator adopts only what carries proof that it is
// this Operation's child, and afterwards only the very object it created (the uid it recorded):
//   - in the Operation's namespace: the controller owner reference is this Operation (its uid), with
//     blockOwnerDeletion as the operator writes it;
//   - elsewhere (velero.io objects in the Velero namespace, where owner references cannot point): the
//     ops.vworkspace.io/operation-uid label holds this Operation's uid. Tenants cannot write there.
// Anything else ends the Operation with ChildConflict, never with the foreign object's outcome. Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import { type Condition, findCondition, formatTime, setCondition } from '@vworkspace/runtime';
import { LABEL_OPERATION_UID } from '../api/annotations.ts';
import { OPERATION } from '../api/constants.ts';
import type { ChildRef, Operation, OperationStatus } from '../api/operation.ts';
import { CONDITION_RUNNING, CONDITION_SUCCEEDED, Reason } from '../api/reasons.ts';

function describe(o: KubernetesObject): string {
  return `${o.kind ?? 'object'} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** Whether `existing` proves to be a child of `op` (see the header). */
export function isChildOf(op: Operation, existing: KubernetesObject): boolean {
  const uid = op.metadata.uid;
  if (!uid) return false;
  if ((existing.metadata?.namespace ?? '') === (op.metadata.namespace ?? '')) {
    const owner = existing.metadata?.ownerReferences?.find((r) => r.controller === true);
    // blockOwnerDeletion as the operator sets it: where OwnerReferencesPermissionEnforcement runs, only
    // someone who may update operations/finalizers can set it, which tenants may not.
    return (
      owner?.uid === uid &&
      owner.kind === OPERATION.kind &&
      owner.apiVersion.startsWith(`${OPERATION.group}/`) &&
      owner.blockOwnerDeletion === true
    );
  }
  return existing.metadata?.labels?.[LABEL_OPERATION_UID] === uid;
}

/**
 * Why `existing` (found under a child's name) is not this Operation's child; undefined when it is.
 * `recorded` is the child as the Operation's status names it, once the operator created it.
 */
export function childConflict(
  op: Operation,
  existing: KubernetesObject,
  recorded?: Pick<ChildRef, 'uid'>,
): string | undefined {
  const what = describe(existing);
  if (recorded?.uid) {
    if (existing.metadata?.uid === recorded.uid) return undefined;
    return `${what} was replaced after the operator created it (uid ${recorded.uid}, now ${existing.metadata?.uid ?? 'unknown'}); its outcome says nothing about this Operation. Find out who replaced it, then create a new Operation`;
  }
  if (isChildOf(op, existing)) return undefined;
  const proof =
    (existing.metadata?.namespace ?? '') === (op.metadata.namespace ?? '')
      ? `its controller owner reference is not Operation ${op.metadata.name} (uid ${op.metadata.uid})`
      : `it does not carry ${LABEL_OPERATION_UID}=${op.metadata.uid}`;
  return `${what} already exists and was not created for this Operation (${proof}); the operator never adopts an object it did not create. Find out who made it; set ops.vworkspace.io/reconcile to run again (the next attempt uses a new name), or create a new Operation`;
}

/**
 * The Operation ended with ChildConflict: Failed, Running (if present) and Succeeded False. The
 * conflicting object is not recorded as a child, so nothing (TTL clean-up, cancel) ever acts on it.
 */
export function childConflictStatus(
  op: Operation,
  base: OperationStatus,
  message: string,
  now: number,
): OperationStatus {
  const at = formatTime(now);
  const gen = op.metadata.generation;
  const { childRef: _r, childRefs: _rs, outputs: _o, ...status } = structuredClone(base);
  let conditions = status.conditions as Condition[] | undefined;
  const set = (type: string) => {
    conditions = setCondition(
      conditions,
      {
        type,
        status: 'False',
        reason: Reason.ChildConflict,
        message,
        ...(gen !== undefined ? { observedGeneration: gen } : {}),
      },
      at,
    );
  };
  if (findCondition(conditions, CONDITION_RUNNING)) set(CONDITION_RUNNING);
  set(CONDITION_SUCCEEDED);
  return {
    ...status,
    phase: 'Failed',
    finishedAt: status.finishedAt ?? at,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
    conditions: conditions as OperationStatus['conditions'],
  };
}
