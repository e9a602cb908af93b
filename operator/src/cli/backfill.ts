// kubectl vws backfill cronoperation/<name> --from --to: the Operations of a CronOperation's slots in a
// past time range (docs/adr/0047-catch-up-policy-and-backfill.md). Pure: the slots and the Operations; the
// plugin creates them as the user (kubectl-vws.ts), so RBAC and the admission webhook judge each one as any
// Operation of that user's, and the names are the scheduled runs' own, so a slot that ran (or was
// backfilled) before is AlreadyExists and is never run twice.

import { formatTime } from '@vworkspace/runtime';
import {
  ANNOTATION_ACTS_FOR,
  type ApplicationInstance,
  type CronOperation,
  type Operation,
} from '../api/index.ts';
import { matchesLabelSelector } from '../catalog/selectors.ts';
import { operationForRun } from '../schedule/cron-decide.ts';
import { parseSchedule, validateSchedule } from '../time/cron.ts';

/** The most slots one backfill creates: a larger range is refused and has to be split. */
export const MAX_BACKFILL_SLOTS = 50;

export type Slots = { ok: true; slots: Date[] } | { ok: false; message: string };

/** The CronOperation's slots in [from, to], oldest first; refused when the range is not in the past or too large. */
export function backfillSlots(cron: CronOperation, from: Date, to: Date, now: Date): Slots {
  const zone = cron.spec.timeZone ?? 'UTC';
  const valid = validateSchedule(cron.spec.schedule, zone);
  if (!valid.ok) return { ok: false, message: `spec.${valid.field} of the CronOperation: ${valid.message}` };
  if (from.getTime() > to.getTime()) return { ok: false, message: '--from is after --to' };
  if (to.getTime() > now.getTime())
    return {
      ok: false,
      message: `--to ${formatTime(to)} is in the future; slots after now (${formatTime(now)}) run on schedule`,
    };
  const schedule = parseSchedule(cron.spec.schedule, zone);
  const slots: Date[] = [];
  for (let t = schedule.next(new Date(from.getTime() - 1)).at; t.getTime() <= to.getTime(); ) {
    if (slots.length === MAX_BACKFILL_SLOTS)
      return {
        ok: false,
        message: `the range holds more than ${MAX_BACKFILL_SLOTS} slots of "${cron.spec.schedule}" (${zone}); backfill at most ${MAX_BACKFILL_SLOTS} at a time: use --to ${formatTime(slots.at(-1) ?? t)}, then continue from --from ${formatTime(t)}`,
      };
    slots.push(t);
    t = schedule.next(t).at;
  }
  return { ok: true, slots };
}

/** The targets of the CronOperation's runs: its fixed target, or the matching instances by name. */
export function backfillTargets(cron: CronOperation, instances: readonly ApplicationInstance[]): string[] {
  const selector = cron.spec.targetSelector;
  if (!selector) return [cron.spec.operationTemplate.spec.targetRef?.name ?? ''];
  return instances
    .filter((i) => matchesLabelSelector(selector, i.metadata.labels ?? {}))
    .map((i) => i.metadata.name ?? '')
    .sort();
}

/**
 * The Operation the schedule would have created for `slot` and `target`, as the user creates it: no
 * controller reference to the CronOperation and no acts-for (both are the operator's alone; the webhook
 * refuses them from anyone else), so the user's own authority is what is checked.
 */
export function backfillOperation(
  cron: CronOperation,
  slot: Date,
  target: string,
  instance?: ApplicationInstance,
): Operation {
  const { op } = operationForRun(cron, { reason: 'schedule', time: slot }, target, instance);
  const { ownerReferences: _owner, annotations = {}, ...meta } = op.metadata;
  const { [ANNOTATION_ACTS_FOR]: _actsFor, ...kept } = annotations;
  return { ...op, metadata: { ...meta, annotations: kept } };
}
