// The Operations that already ran on a target: what parametersFrom `latest` and template dependencies
// read. Pure. Only Operations still stored count: ttlSecondsAfter* and the CronOperation/WatchOperation
// history limits delete older ones.
import type { Operation } from '../api/operation.ts';
import { CONDITION_SUCCEEDED } from '../api/reasons.ts';
import type { OperationFilter } from '../catalog/flow.ts';

/** A dry run ends Succeeded without having done anything: it has no outputs and proves nothing. */
export function isDryRun(op: Operation): boolean {
  const c = op.status?.conditions?.find((x) => x.type === CONDITION_SUCCEEDED);
  return c?.reason === 'DryRunCompleted' || op.spec.policy?.dryRun === true;
}

/** Succeeded for real (not a dry run). */
export function succeededForReal(op: Operation): boolean {
  return op.status?.phase === 'Succeeded' && !isDryRun(op);
}

/** When it started (the oldest data a backup may hold), else when it finished; NaN if neither. */
export function startedAtMs(op: Operation): number {
  return Date.parse(op.status?.startedAt ?? op.status?.finishedAt ?? '');
}

export function matchesFilter(op: Operation, f: OperationFilter): boolean {
  return (
    op.spec.type === f.type &&
    (f.engine === undefined || op.spec.engine === f.engine) &&
    (f.template === undefined || op.status?.template === f.template)
  );
}

const ms = (t: unknown) => Date.parse(String(t ?? '')) || 0;

/**
 * Latest first: by startedAt, finishedAt, creationTimestamp (all second precision), then the greater name
 * (CronOperation names end in the scheduled minute, so within one second that is the later slot). A
 * total order, so every replica agrees.
 */
function latestFirst(a: Operation, b: Operation): number {
  return (
    (startedAtMs(b) || 0) - (startedAtMs(a) || 0) ||
    ms(b.status?.finishedAt) - ms(a.status?.finishedAt) ||
    ms(b.metadata.creationTimestamp) - ms(a.metadata.creationTimestamp) ||
    (b.metadata.name ?? '').localeCompare(a.metadata.name ?? '')
  );
}

/** Operations of `op`'s namespace and target (not `op`) matching `f`, latest first. */
export function onSameTarget(op: Operation, all: readonly Operation[], f: OperationFilter): Operation[] {
  return all
    .filter(
      (o) =>
        o.metadata.namespace === op.metadata.namespace &&
        o.metadata.name !== op.metadata.name &&
        o.spec.targetRef.name === op.spec.targetRef.name &&
        matchesFilter(o, f),
    )
    .sort(latestFirst);
}

/** The latest real success among `onSameTarget`. */
export function latestSucceeded(
  op: Operation,
  all: readonly Operation[],
  f: OperationFilter,
): Operation | undefined {
  return onSameTarget(op, all, f).find(succeededForReal);
}

/** Those not finished yet (they may still become the one that counts). */
export function unfinished(ops: readonly Operation[]): Operation[] {
  return ops.filter((o) => !['Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? ''));
}
