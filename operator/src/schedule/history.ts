// What CronOperation and WatchOperation share about the Operations they created: which are still
// running (status.active), when one last succeeded, and which finished ones the history limits drop.
// Pure functions of Operation objects.

import type { ActiveRef, Operation, OperationPhase } from '../api/index.ts';
import { TERMINAL_PHASES } from '../api/index.ts';

/** Schema defaults of successfulHistoryLimit / failedHistoryLimit (objects may predate defaulting). */
export const DEFAULT_SUCCESSFUL_HISTORY_LIMIT = 3;
export const DEFAULT_FAILED_HISTORY_LIMIT = 1;

export function isFinished(op: Operation): boolean {
  const phase = op.status?.phase;
  return phase !== undefined && TERMINAL_PHASES.includes(phase as OperationPhase);
}

/** Operations that have not finished (a missing phase is a new Operation: running). */
export function activeOperations(ops: readonly Operation[]): Operation[] {
  return ops.filter((o) => !isFinished(o));
}

/** status.active: refs of the running Operations, sorted by name (stable status, no needless writes). */
export function activeRefs(ops: readonly Operation[]): ActiveRef[] {
  return activeOperations(ops)
    .map((o) => ({ name: o.metadata.name ?? '', target: o.spec?.targetRef?.name }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((r) => (r.target ? { name: r.name, target: r.target } : { name: r.name }));
}

function ms(s: string | undefined): number | undefined {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

/** When an Operation finished: status.finishedAt, else its creation time (an object written by hand). */
export function finishedAtMs(op: Operation): number {
  return ms(op.status?.finishedAt) ?? ms(String(op.metadata.creationTimestamp ?? '')) ?? 0;
}

/**
 * status.lastSuccessfulTime: the latest finishedAt of a Succeeded Operation, never moving back (pruned
 * Operations are gone from the list, so the previous value is kept when it is later).
 */
export function lastSuccessfulTime(
  ops: readonly Operation[],
  previous: string | undefined,
): string | undefined {
  let best = previous;
  let bestMs = ms(previous) ?? Number.NEGATIVE_INFINITY;
  for (const o of ops) {
    if (o.status?.phase !== 'Succeeded') continue;
    const t = finishedAtMs(o);
    if (t > bestMs) {
      bestMs = t;
      best = o.status.finishedAt ?? new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
    }
  }
  return best;
}

export interface HistoryLimits {
  successfulHistoryLimit?: number;
  failedHistoryLimit?: number;
}

/**
 * Names of the finished Operations to delete: beyond successfulHistoryLimit Succeeded ones and beyond
 * failedHistoryLimit Failed or Cancelled ones, oldest (by finishedAt, then name) first. Running
 * Operations are never pruned.
 */
export function operationsToPrune(ops: readonly Operation[], limits: HistoryLimits): string[] {
  const succeeded = ops.filter((o) => o.status?.phase === 'Succeeded');
  const failed = ops.filter((o) => o.status?.phase === 'Failed' || o.status?.phase === 'Cancelled');
  const newestFirst = (a: Operation, b: Operation) =>
    finishedAtMs(b) - finishedAtMs(a) || ((b.metadata.name ?? '') < (a.metadata.name ?? '') ? -1 : 1);
  const beyond = (list: Operation[], limit: number) =>
    [...list]
      .sort(newestFirst)
      .slice(Math.max(0, limit))
      .reverse()
      .map((o) => o.metadata.name ?? '');
  return [
    ...beyond(succeeded, limits.successfulHistoryLimit ?? DEFAULT_SUCCESSFUL_HISTORY_LIMIT),
    ...beyond(failed, limits.failedHistoryLimit ?? DEFAULT_FAILED_HISTORY_LIMIT),
  ];
}
