// Which Operations on the same target may not run together, and the first-in-first-out queue of those
// waiting. Pure.
//
// The relation is symmetric:
//   - a destructive verb (Restore, Upgrade, Migration) conflicts with every other Operation;
//   - Backup conflicts with Backup (two backups of one release at once only cost twice);
//   - RunCommand and Runbook conflict only with destructive verbs: they may run beside a Backup or each
//     other (ADR 0003). A catalog template that must run alone can be written as a destructive type.
//
// Queue: Operations on one target are ordered by creationTimestamp, then name. An Operation may start
// when no conflicting Operation is running AND no conflicting Operation ahead of it is still waiting for
// its turn. "Waiting for its turn" = not yet evaluated (Pending with no reason yet) or
// Blocked/ConflictingOperation. Operations waiting for something else (approval, a window, a Secret, the
// target becoming Ready) do not hold the queue: otherwise one unapproved Restore would stall every later
// Backup indefinitely. Since the order is total, nobody ever waits for someone behind them: no deadlock.
import { DESTRUCTIVE_TYPES, type OperationType, TERMINAL_PHASES } from '../api/enums.ts';
import type { Operation } from '../api/operation.ts';
import { CONDITION_BLOCKED, CONDITION_SUCCEEDED } from '../api/reasons.ts';

export function isDestructive(type: OperationType): boolean {
  return DESTRUCTIVE_TYPES.includes(type);
}

export function typesConflict(a: OperationType, b: OperationType): boolean {
  if (isDestructive(a) || isDestructive(b)) return true;
  return a === 'Backup' && b === 'Backup';
}

/** (creationTimestamp, name): the queue order. */
export function queueOrder(a: Operation, b: Operation): number {
  // Raw API JSON: the timestamp is a string, whatever V1ObjectMeta's type says.
  const ta = Date.parse(String(a.metadata.creationTimestamp ?? '')) || 0;
  const tb = Date.parse(String(b.metadata.creationTimestamp ?? '')) || 0;
  if (ta !== tb) return ta - tb;
  return (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

function isTerminal(op: Operation): boolean {
  return op.status?.phase !== undefined && TERMINAL_PHASES.includes(op.status.phase);
}

/** Has a child, or is about to create it: Running. */
export function isRunning(op: Operation): boolean {
  return op.status?.phase === 'Running';
}

/** Competes for the target: not evaluated yet, or waiting only because of a conflict. */
export function isWaitingForTurn(op: Operation): boolean {
  const phase = op.status?.phase;
  if (phase === undefined) return true;
  if (phase === 'Pending') {
    // Pending with a reason is waiting for something else (TargetNotFound, RbacProfileMissing).
    const reason = op.status?.conditions?.find((c) => c.type === CONDITION_SUCCEEDED)?.reason;
    return reason === undefined;
  }
  if (phase !== 'Blocked') return false;
  const blocked = op.status?.conditions?.find((c) => c.type === CONDITION_BLOCKED);
  return blocked?.status === 'True' && blocked.reason === 'ConflictingOperation';
}

export interface ConflictResult {
  /** Running Operations it conflicts with (names, queue order). */
  running: string[];
  /** Conflicting Operations ahead of it in the queue, still waiting for their turn. */
  ahead: string[];
  /** 1-based place among the conflicting Operations waiting for this target (1 = runs next). */
  queuePosition: number;
}

/**
 * Conflicts of `op` with `others` (any Operations; those on other targets or namespaces, terminal ones
 * and `op` itself are ignored).
 */
export function findConflicts(op: Operation, others: readonly Operation[]): ConflictResult {
  const ns = op.metadata.namespace;
  const target = op.spec.targetRef.name;
  const same = others.filter(
    (o) =>
      o.metadata.namespace === ns &&
      o.spec.targetRef.name === target &&
      o.metadata.name !== op.metadata.name &&
      !isTerminal(o) &&
      typesConflict(op.spec.type, o.spec.type),
  );
  same.sort(queueOrder);
  const running = same.filter(isRunning).map((o) => o.metadata.name ?? '');
  const ahead = same
    .filter((o) => !isRunning(o) && isWaitingForTurn(o) && queueOrder(o, op) < 0)
    .map((o) => o.metadata.name ?? '');
  return { running, ahead, queuePosition: ahead.length + 1 };
}

/**
 * The Operations of `namespace`/`target` waiting for their turn, in queue order: when one finishes,
 * these are the ones worth re-evaluating (the head may start; the others' queuePosition moves).
 */
export function waitingQueue(ops: readonly Operation[], namespace: string, target: string): Operation[] {
  return ops
    .filter(
      (o) =>
        o.metadata.namespace === namespace &&
        o.spec.targetRef.name === target &&
        !isTerminal(o) &&
        !isRunning(o),
    )
    .sort(queueOrder);
}
