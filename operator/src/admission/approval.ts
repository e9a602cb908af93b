// Who created, who approved and who asked to re-run an Operation: annotations only the webhook writes.
//
// The mutating webhook stamps ops.vworkspace.io/created-by (at CREATE),
// ops.vworkspace.io/approved-by (when ops.vworkspace.io/approve becomes "true") and
// ops.vworkspace.io/reconcile-requested-by (when ops.vworkspace.io/reconcile gets a new value) from the
// admission request's user, and the validating webhook, which sees the object after every mutation, refuses any
// other value. A user who writes either annotation themselves is refused rather than silently
// overwritten, so a forgery attempt is visible. An update that merely leaves a stamped annotation out
// (kubectl replace with an old manifest) gets it restored, not refused. Pure.

import {
  ANNOTATION_CREATED_BY,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
} from '../api/annotations.ts';
import { ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY } from '../api/index.ts';
import { annotationsOf, isRecord } from './decision.ts';
import { type AdmissionRequest, type JsonPatchOp, pointerSegment } from './review.ts';
export { ANNOTATION_CREATED_BY };

export interface StampExpectation {
  key: string;
  /** Who writes it, for the refusal of a user-written value (default: the user of this request). */
  writer?: string;
  /** What the annotation must hold after admission; undefined = absent. */
  expected: string | undefined;
  /** The value before the request (UPDATE), undefined at CREATE. */
  old: string | undefined;
  /** The value in the request. */
  actual: string | undefined;
}

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

/** The values created-by, approved-by and reconcile-requested-by must have once this request is admitted. */
export function stampExpectations(req: AdmissionRequest): StampExpectation[] {
  const now = annotationsOf(req.object);
  const before = req.operation === 'UPDATE' ? annotationsOf(req.oldObject) : {};
  const user = req.userInfo?.username || undefined;
  const createdBy = req.operation === 'CREATE' ? user : before[ANNOTATION_CREATED_BY];
  let approvedBy: string | undefined;
  if (now[ANNOTATION_APPROVE] === 'true') {
    approvedBy = isApprovalTransition(req) ? user : before[ANNOTATION_APPROVED_BY];
  }
  const requestedBy = isReconcileRequest(req) ? user : before[ANNOTATION_RECONCILE_REQUESTED_BY];
  return [
    {
      key: ANNOTATION_CREATED_BY,
      expected: createdBy,
      old: before[ANNOTATION_CREATED_BY],
      actual: now[ANNOTATION_CREATED_BY],
    },
    {
      key: ANNOTATION_APPROVED_BY,
      expected: approvedBy,
      old: before[ANNOTATION_APPROVED_BY],
      actual: now[ANNOTATION_APPROVED_BY],
    },
    {
      key: ANNOTATION_RECONCILE_REQUESTED_BY,
      expected: requestedBy,
      old: before[ANNOTATION_RECONCILE_REQUESTED_BY],
      actual: now[ANNOTATION_RECONCILE_REQUESTED_BY],
    },
  ];
}

/**
 * The mutating webhook's patch: stamp (or restore, or drop) each annotation the user did not write
 * themselves. A value the user wrote that differs from the truth is left for the validating webhook
 * to refuse. `expectations`: the stamps of this kind of object (default: an Operation's).
 */
export function stampPatch(
  req: AdmissionRequest,
  expectations: readonly StampExpectation[] = stampExpectations(req),
): JsonPatchOp[] {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return [];
  const obj = req.object;
  if (!isRecord(obj) || !isRecord(obj.metadata)) return [];
  if (!req.userInfo?.username) return [];
  const raw = obj.metadata.annotations;
  const ann: Record<string, unknown> = isRecord(raw) ? { ...raw } : {};
  let changed = false;
  for (const s of expectations) {
    if (s.actual === s.expected) continue;
    const untouched = s.actual === undefined || s.actual === s.old;
    if (!untouched) continue;
    if (s.expected === undefined) delete ann[s.key];
    else ann[s.key] = s.expected;
    changed = true;
  }
  if (!changed) return [];
  if (!isRecord(raw)) return [{ op: 'add', path: '/metadata/annotations', value: ann }];
  const ops: JsonPatchOp[] = [];
  for (const s of expectations) {
    const path = `/metadata/annotations/${pointerSegment(s.key)}`;
    const had = Object.hasOwn(raw, s.key);
    const has = Object.hasOwn(ann, s.key);
    if (has && ann[s.key] !== raw[s.key]) ops.push({ op: had ? 'replace' : 'add', path, value: ann[s.key] });
    else if (!has && had) ops.push({ op: 'remove', path });
  }
  return ops;
}
