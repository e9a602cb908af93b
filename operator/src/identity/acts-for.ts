// Whom an Operation created by a CronOperation or WatchOperation acts for: whoever created or last edited
// that object's spec (ops.vworkspace.io/edited-by) and, for a run-now request, whoever asked for it
// (ops.vworkspace.io/run-now-by); both are the webhook's stamps on the scheduler. The operator writes the
// result on the Operation (ops.vworkspace.io/acts-for) and the webhook checks it against the scheduler as
// it reads it; approval with separationOfDuties then refuses each of them. Pure.
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_EDITED_BY,
  ANNOTATION_RUN_NOW_BY,
  ANNOTATION_TRIGGER,
} from '../api/annotations.ts';
import { formatActsFor } from './stamp.ts';

/** The trigger annotation value of an Operation made for a run-now request. */
export const MANUAL_TRIGGER = 'manual';

/** The acts-for annotation (key and value) for an Operation `owner` creates with `annotations`; {} if nobody. */
export function actsForAnnotation(
  owner: { metadata?: { annotations?: Record<string, string> } },
  annotations: Readonly<Record<string, string>>,
): Record<string, string> {
  const ann = owner.metadata?.annotations ?? {};
  const users = [ann[ANNOTATION_EDITED_BY] ?? ''];
  if (annotations[ANNOTATION_TRIGGER] === MANUAL_TRIGGER) users.push(ann[ANNOTATION_RUN_NOW_BY] ?? '');
  const value = formatActsFor(users);
  return value !== undefined ? { [ANNOTATION_ACTS_FOR]: value } : {};
}
