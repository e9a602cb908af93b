// What an ApplicationInstance's status says about the day-2 work on it: per Operation type, how many are
// unfinished, the current one and the last finished one (status.operations), and the next run a
// CronOperation has planned for it (status.nextScheduledRun). Pure functions of cached objects.

import {
  type ApplicationInstance,
  CONDITION_SUCCEEDED,
  type CronOperation,
  type NextScheduledRun,
  OPERATION_TYPES,
  type Operation,
  type OperationsOfType,
  TERMINAL_PHASES,
} from '../api/index.ts';
import { cronTargets } from '../schedule/targets.ts';

type Ref = NonNullable<OperationsOfType['last']>;

function ms(s: unknown): number {
  const t = typeof s === 'string' ? Date.parse(s) : s instanceof Date ? s.getTime() : Number.NaN;
  return Number.isNaN(t) ? Number.NEGATIVE_INFINITY : t;
}

const created = (o: Operation) => ms(o.metadata.creationTimestamp);
const finished = (o: Operation) => ms(o.status?.finishedAt);
const isFinished = (o: Operation) => TERMINAL_PHASES.includes(o.status?.phase ?? 'Pending');

function refOf(o: Operation, time: unknown): Ref {
  const reason = o.status?.conditions?.find((c) => c.type === CONDITION_SUCCEEDED)?.reason;
  const t = typeof time === 'string' ? time : time instanceof Date ? time.toISOString() : undefined;
  return {
    name: o.metadata.name ?? '',
    phase: o.status?.phase ?? 'Pending',
    ...(reason ? { reason } : {}),
    ...(t ? { time: t.replace(/\.\d{3}Z$/, 'Z') } : {}),
  };
}

/**
 * status.operations for the instance `name` from the Operations of its namespace. `previous` is the
 * current status.operations: a `last` newer than every finished Operation still listed is kept, so pruning
 * or a TTL never makes the instance forget (or move back) its last Backup.
 */
export function summarizeOperations(
  name: string,
  ops: readonly Operation[],
  previous: readonly OperationsOfType[] = [],
): OperationsOfType[] {
  const mine = ops.filter((o) => o.spec?.targetRef?.name === name);
  const out: OperationsOfType[] = [];
  for (const type of OPERATION_TYPES) {
    const ofType = mine.filter((o) => o.spec.type === type);
    const open = ofType.filter((o) => !isFinished(o)).sort((a, b) => created(a) - created(b));
    const done = ofType
      .filter(isFinished)
      .sort((a, b) => finished(b) - finished(a) || created(b) - created(a));
    const before = previous.find((p) => p.type === type)?.last;
    const newest = done[0];
    let last: Ref | undefined = newest ? refOf(newest, newest.status?.finishedAt) : undefined;
    if (before && (!last || ms(before.time) > ms(last.time))) last = before;
    const current = open[0];
    if (!current && !last) continue;
    out.push({
      type,
      ...(open.length ? { active: open.length } : {}),
      ...(current
        ? { current: refOf(current, current.status?.startedAt ?? current.metadata.creationTimestamp) }
        : {}),
      ...(last ? { last } : {}),
    });
  }
  return out;
}

/** The earliest status.nextScheduleTime of the (not suspended) CronOperations that target the instance. */
export function nextScheduledRun(
  instance: ApplicationInstance,
  crons: readonly CronOperation[],
): NextScheduledRun | undefined {
  let best: NextScheduledRun | undefined;
  for (const c of crons) {
    const next = c.status?.nextScheduleTime;
    if (!next || c.spec.suspend || !cronTargets(c, instance)) continue;
    if (
      !best ||
      ms(next) < ms(best.time) ||
      (ms(next) === ms(best.time) && (c.metadata.name ?? '') < best.cronOperation)
    )
      best = { time: next, cronOperation: c.metadata.name ?? '', type: c.spec.operationTemplate.spec.type };
  }
  return best;
}
