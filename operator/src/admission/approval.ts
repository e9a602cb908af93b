// When a request asks for something a stamp records (stamps.ts): approval given, or a new re-run
// request. Pure.
import { ANNOTATION_CREATED_BY, ANNOTATION_RECONCILE } from '../api/annotations.ts';
import { ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY } from '../api/index.ts';
import { annotationsOf } from './decision.ts';
import type { AdmissionRequest } from './review.ts';
export { ANNOTATION_CREATED_BY };

/** A request's annotations as the rules here read them: the object's, and the stored object's at UPDATE. */
export interface RequestAnnotations {
  operation: AdmissionRequest['operation'];
  now: Record<string, string>;
  /** Before the request: the stored object's at UPDATE, none otherwise. */
  old: Record<string, string>;
}

/** Reads a request's annotations once, for callers that ask several questions of them (stamps.ts). */
export function requestAnnotations(req: AdmissionRequest): RequestAnnotations {
  return {
    operation: req.operation,
    now: annotationsOf(req.object),
    old: req.operation === 'UPDATE' ? annotationsOf(req.oldObject) : {},
  };
}

/** True when `approve` is being given by this request (not already given before it). */
export function isApprovalTransition(req: AdmissionRequest): boolean {
  return approvalGiven(requestAnnotations(req));
}

/** isApprovalTransition, of annotations already read. */
export function approvalGiven({ operation, now, old }: RequestAnnotations): boolean {
  if (now[ANNOTATION_APPROVE] !== 'true') return false;
  if (operation !== 'UPDATE') return true;
  return !(old[ANNOTATION_APPROVE] === 'true' && old[ANNOTATION_APPROVED_BY] !== undefined);
}

/** True when this request gives ops.vworkspace.io/reconcile a new value (a re-run, for a failed Operation). */
export function isReconcileRequest(req: AdmissionRequest): boolean {
  return reconcileAsked(requestAnnotations(req));
}

/** isReconcileRequest, of annotations already read. */
export function reconcileAsked({ operation, now, old }: RequestAnnotations): boolean {
  const value = now[ANNOTATION_RECONCILE];
  if (value === undefined) return false;
  return operation !== 'UPDATE' || value !== old[ANNOTATION_RECONCILE];
}
