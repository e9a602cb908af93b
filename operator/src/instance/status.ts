// The status the instance controller owns, computed from the instance and its latest Helm release
// record. Pure: the controller reads the caches, this decides, the controller writes.
//
// The operator writes an instance's status as one server-side apply under one field manager, so
// the computed status is COMPLETE: a field left out would be removed. Fields this function does
// not decide (status.capabilities, which the controller sets from the capability plan, conditions
// other than Ready) are carried over unchanged.

import { type Condition, findCondition, setCondition } from '@vworkspace/runtime';
import type { ChartSource } from '../api/applicationinstance.ts';
import type { ApplicationInstance, ApplicationInstanceStatus } from '../api/index.ts';
import {
  type ReadyReason,
  type ReadyState,
  type ReleaseRecord,
  readyFromRelease,
} from '../release/helm-release.ts';
import { releaseRef } from '../release/ref.ts';

export const READY = 'Ready';

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

type ReleaseStatus = NonNullable<ApplicationInstanceStatus['release']>;

/**
 * Where the release was installed from, as status.release.chartSource records it (ADR 0027). Helm's record
 * holds the chart (its name and contents) but not the repository it came from, so the operator records the
 * instance's spec.appRef.chart the first time the record shows that chart deployed, and keeps it: a later
 * edit of spec.appRef.chart (by anyone who may patch the instance) does not move it, and an Upgrade installs
 * from it (engines/helm.ts). Only the status subresource, which only the operator writes, holds it.
 */
export function recordedChartSource(
  instance: ApplicationInstance,
  latest: ReleaseRecord,
): ChartSource | undefined {
  const kept = instance.status?.release?.chartSource;
  if (kept) return kept;
  const chart = instance.spec.appRef.chart;
  if (!chart || latest.status !== 'deployed' || chart.name !== latest.chartName) return undefined;
  return { sourceType: chart.sourceType, url: chart.url, name: chart.name };
}

function releaseStatus(instance: ApplicationInstance, record: ReleaseRecord): ReleaseStatus {
  const chartSource = recordedChartSource(instance, record);
  // Empty strings (a chart without appVersion) are left out rather than shown as "".
  return {
    revision: record.revision,
    ...(record.status ? { status: record.status } : {}),
    ...(record.chartVersion ? { chartVersion: record.chartVersion } : {}),
    ...(record.appVersion ? { appVersion: record.appVersion } : {}),
    ...(chartSource ? { chartSource } : {}),
  };
}

/** What the controller found besides the latest readable record. */
export interface ReleaseFacts {
  /** Why records of the release could not be decoded (each names the Secret, never its content). */
  problems?: readonly string[];
  /** The older instance that describes the same release (release-claim.ts): this one reads nothing of it. */
  claimedBy?: { name: string; message: string };
}

function readyState(
  instance: ApplicationInstance,
  latest: ReleaseRecord | undefined,
  facts: ReleaseFacts,
): ReadyState {
  const { name, namespace } = releaseRef(instance);
  const forbidden = releaseNamespaceForbidden(instance);
  if (forbidden) return { status: 'False', reason: 'ReleaseNamespaceForbidden', message: forbidden };
  if (facts.claimedBy) return { status: 'False', reason: 'ReleaseClaimed', message: facts.claimedBy.message };
  const problems = facts.problems ?? [];
  if (!latest && problems.length > 0) {
    return {
      status: 'False',
      reason: 'ReleaseRecordUnreadable',
      message: `No revision of Helm release ${namespace}/${name} can be read: ${problems.join('; ')}. Inspect the records with \`helm history ${name} -n ${namespace}\`.`,
    };
  }
  return readyFromRelease(name, namespace, latest);
}

/**
 * The complete status for `instance` given the latest readable release record (undefined: none) and what
 * else the controller found (facts).
 * `now` is only used when Ready changes status (lastTransitionTime), so recomputing an unchanged
 * situation yields a status equal to the current one and the writer can skip the write.
 */
export function computeInstanceStatus(
  instance: ApplicationInstance,
  latest: ReleaseRecord | undefined,
  now: Date | number | string,
  facts: ReleaseFacts = {},
): ApplicationInstanceStatus {
  const ready = readyState(instance, latest, facts);
  const described = latest && !releaseNamespaceForbidden(instance) && !facts.claimedBy;
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
    ...(described ? { release: releaseStatus(instance, latest) } : {}),
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
