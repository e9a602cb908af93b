// metav1.Condition helpers with apimachinery's meta.SetStatusCondition semantics:
// lastTransitionTime changes ONLY when status changes, so re-running a reconcile that reaches the
// same conclusion writes an identical status (and the status patcher can skip the write).
// Pure functions: they return new arrays and never mutate their input.

import { formatTime } from './normalize.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  /** UpperCamelCase, machine-readable. */
  reason: string;
  /** Human-readable; says what to do. */
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'message'> & { message?: string };

// metav1.Condition's validation patterns and limits (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const TYPE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const MAX_REASON = 1024;
const MAX_MESSAGE = 32_768;
const MAX_TYPE = 316;

export function findCondition(conds: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

export function isTrue(conds: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conds, type)?.status === 'True';
}

export function isFalse(conds: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conds, type)?.status === 'False';
}

/** Throws on a condition the API server would reject (a programming error, not user input). */
export function validateCondition(c: ConditionInput): void {
  if (!TYPE.test(c.type) || c.type.length > MAX_TYPE)
    throw new Error(`invalid condition type ${JSON.stringify(c.type)}`);
  if (!['True', 'False', 'Unknown'].includes(c.status))
    throw new Error(`invalid condition status ${c.status}`);
  if (!REASON.test(c.reason) || c.reason.length > MAX_REASON) {
    throw new Error(`invalid condition reason ${JSON.stringify(c.reason)}: must be UpperCamelCase`);
  }
  if (
    c.observedGeneration !== undefined &&
    (!Number.isInteger(c.observedGeneration) || c.observedGeneration < 0)
  ) {
    throw new Error(`invalid observedGeneration ${c.observedGeneration}`);
  }
}

function truncateMessage(m: string): string {
  return m.length <= MAX_MESSAGE ? m : `${m.slice(0, MAX_MESSAGE - 3)}...`;
}

/**
 * Returns `conds` with `input` set: appended if absent; otherwise updated in place (order kept),
 * with lastTransitionTime = `now` only if the status changed.
 */
export function setCondition(
  conds: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date | number | string,
): Condition[] {
  validateCondition(input);
  const at = typeof now === 'string' ? now : formatTime(now);
  const list = conds ? [...conds] : [];
  const i = list.findIndex((c) => c.type === input.type);
  const existing = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: truncateMessage(input.message ?? ''),
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
    lastTransitionTime:
      existing && existing.status === input.status && existing.lastTransitionTime
        ? existing.lastTransitionTime
        : at,
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function removeCondition(conds: readonly Condition[] | undefined, type: string): Condition[] {
  return (conds ?? []).filter((c) => c.type !== type);
}
