// The status the instance controller owns, computed from the instance and its latest Helm release
// record. Pure: the controller reads the caches, this decides, the controller writes.
//
// The operator writes an instance's status as one server-side apply under one field manager, so
// the computed status is COMPLETE: a field left out would be removed. Fields this function does
// not decide (status.capabilities, which the controller sets from the capability plan, conditions
// other than Ready) are carried over unchanged.

import type { ApplicationInstance, ApplicationInstanceStatus } from '../api/index.ts';
import { type Condition, findCondition, setCondition } from '../runtime/conditions.ts';
import { type ReadyReason, type ReadyState, type ReleaseRecord, readyFromRelease } from './helm-release.ts';

export const READY = 'Ready';

/** Where the instance's release lives: spec.release.namespace, defaulting to the instance's own. */
export function releaseRef(instance: ApplicationInstance): { name: string; namespace: string } {
  return {
    name: instance.spec.release.name,
    namespace: instance.spec.release.namespace || (instance.metadata.namespace ?? ''),
  };
}

/**
 * Why the instance's release may not be read, or undefined when it may. An instance describes a release
 * of its OWN namespace: reading another namespace's record would hand whoever may create instances here
 * that namespace's release status, chart and (through the capabilities) its operations. The webhook
 * refuses such an instance; this covers one admitted without it.
 */
export function releaseNamespaceForbidden(instance: ApplicationInstance): string | undefined {
  const own = instance.metadata.namespace ?? '';
  const asked = instance.spec.release.namespace;
  if (!asked || asked === own) return undefined;
  return `spec.release.namespace is ${asked}, but an ApplicationInstance describes a release in its own namespace ${own}; the release record is not read. Remove spec.release.namespace (or set it to ${own}) and create the instance in the release's namespace.`;
}

function releaseStatus(record: ReleaseRecord): NonNullable<ApplicationInstanceStatus['release']> {
  // Empty strings (a chart without appVersion) are left out rather than shown as "".
  return {
    revision: record.revision,
    ...(record.status ? { status: record.status } : {}),
    ...(record.chartVersion ? { chartVersion: record.chartVersion } : {}),
    ...(record.appVersion ? { appVersion: record.appVersion } : {}),
  };
}

/**
 * The complete status for `instance` given the latest readable release record (undefined: none).
 * `now` is only used when Ready changes status (lastTransitionTime), so recomputing an unchanged
 * situation yields a status equal to the current one and the writer can skip the write.
 */
export function computeInstanceStatus(
  instance: ApplicationInstance,
  latest: ReleaseRecord | undefined,
  now: Date | number | string,
): ApplicationInstanceStatus {
  const { name, namespace } = releaseRef(instance);
  const forbidden = releaseNamespaceForbidden(instance);
  const ready: ReadyState = forbidden
    ? { status: 'False', reason: 'ReleaseNamespaceForbidden', message: forbidden }
    : readyFromRelease(name, namespace, latest);
  const generation = instance.metadata.generation;
  const current = instance.status ?? {};
  const conditions = setCondition(
    current.conditions as Condition[] | undefined,
    {
      type: READY,
      status: ready.status,
      reason: ready.reason,
      message: ready.message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    },
    now,
  );
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    // No record at all ⇒ no release block: a stale one would describe a release that is gone.
    ...(latest && !forbidden ? { release: releaseStatus(latest) } : {}),
    ...(current.capabilities !== undefined ? { capabilities: current.capabilities } : {}),
  };
}

/** The Ready reason recorded in a status, if any. */
export function readyReason(status: ApplicationInstanceStatus | undefined): string | undefined {
  return findCondition(status?.conditions as Condition[] | undefined, READY)?.reason;
}

/** Event type for a Ready reason: failures and a missing release are Warnings. */
export function eventTypeFor(reason: ReadyReason): 'Normal' | 'Warning' {
  return reason === 'ReleaseDeployed' || reason === 'ReleasePending' ? 'Normal' : 'Warning';
}
