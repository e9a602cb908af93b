// When a request asks for something a stamp records (stamps.ts): approval given, or a new re-run
// request. Pure.
import { ANNOTATION_CREATED_BY, ANNOTATION_RECONCILE } from '../api/annotations.ts';
import { ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY } from '../api/index.ts';
import { annotationsOf } from './decision.ts';
import type { AdmissionRequest } from './review.ts';
export { ANNOTATION_CREATED_BY };

/** True when `approve` is being given by this request (not already given before it). */
export function isApprovalTransition(req: AdmissionRequest): boolean {
  const now = annotationsOf(req.object);
  if (now[ANNOTATION_APPROVE] !== 'true') return false;
  if (req.operation !== 'UPDATE') return true;
  const before = annotationsOf(req.oldObject);
  return !(before[ANNOTATION_APPROVE] === 'true' && before[ANNOTATION_APPROVED_BY] !== undefined);
}

/** True when this request gives ops.vworkspace.io/reconcile a new value (a re-run, for a failed Operation). */
export function isReconcileRequest(req: AdmissionRequest): boolean {
  const now = annotationsOf(req.object)[ANNOTATION_RECONCILE];
  if (now === undefined) return false;
  return req.operation !== 'UPDATE' || now !== annotationsOf(req.oldObject)[ANNOTATION_RECONCILE];
}
