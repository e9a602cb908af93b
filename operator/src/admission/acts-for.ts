// ops.vworkspace.io/acts-for at CREATE (identity/acts-for.ts): only the operator writes it, on an
// Operation a CronOperation or WatchOperation of its namespace creates (scheduled.ts has already checked
// the claim), and it must name exactly whom that object's stamps name now. Anyone else's is refused.
import { ANNOTATION_ACTS_FOR } from '../api/annotations.ts';
import { actsForAnnotation } from '../identity/acts-for.ts';
import {
  annotationPath,
  annotationsOf,
  type Facts,
  forbidden,
  isRecord,
  type Problem,
  retry,
} from './decision.ts';
import type { AdmissionRequest } from './review.ts';

export function checkActsFor(req: AdmissionRequest, facts: Facts): Problem[] {
  const ann = annotationsOf(req.object);
  const actual = ann[ANNOTATION_ACTS_FOR];
  const field = annotationPath(ANNOTATION_ACTS_FOR);
  const by = facts.scheduledBy;
  if (!by) {
    if (actual === undefined) return [];
    return [
      forbidden(
        field,
        `Forbidden: ${ANNOTATION_ACTS_FOR} is written by the operator on the Operations a CronOperation or WatchOperation creates and cannot be set by a user; remove it from the request`,
      ),
    ];
  }
  // A failed or missing owner is checkScheduledBy's to report.
  if (!by.owner.ok || !isRecord(by.owner.value)) return [];
  const expected = actsForAnnotation(
    by.owner.value as { metadata?: { annotations?: Record<string, string> } },
    ann,
  )[ANNOTATION_ACTS_FOR];
  if (expected === actual) return [];
  // Usually the operator's cache lagging an edit or a run-now request: it creates the Operation again.
  return [
    retry(
      field,
      `${ANNOTATION_ACTS_FOR} is ${actual ?? '(unset)'}, but ${by.claim.kind} ${by.claim.name} now names ${expected ?? 'nobody'} (edited or asked to run just now?)`,
    ),
  ];
}
