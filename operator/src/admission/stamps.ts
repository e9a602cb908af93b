// The identity stamps: annotations only the webhook or the operator writes, each refused when a user writes
// it (so a forgery attempt is visible rather than silently overwritten), and restored when an update merely
// leaves it out (kubectl replace with an old manifest). One list per kind, one patch, one set of refusals:
//   - on an Operation, written by the mutating webhook from the admission request's user:
//     ops.vworkspace.io/created-by (at CREATE), ops.vworkspace.io/approved-by (when approve becomes "true"),
//     ops.vworkspace.io/reconcile-requested-by (with each new ops.vworkspace.io/reconcile value, and gone
//     with it), and ops.vworkspace.io/admission (the signed record of them all, with the reconcile value and
//     the users' groups; docs/adr/0029-signed-admission-stamps.md); written by the operator:
//     ops.vworkspace.io/acts-for (on the Operations a CronOperation or WatchOperation creates, checked
//     against that object's stamps by acts-for.ts; immutable);
//   - on a CronOperation/WatchOperation, ops.vworkspace.io/edited-by (who created it or last changed its
//     spec) and, on a CronOperation, ops.vworkspace.io/run-now-by (who set the current run-now value).
// The validating webhook, which sees the object after every mutation, refuses any other value. Pure apart
// from the signing key's HMAC.
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  ANNOTATION_EDITED_BY,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
  ANNOTATION_RUN_NOW,
  ANNOTATION_RUN_NOW_BY,
} from '../api/annotations.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import { parseActsFor, type ReconcileRequest, signStamps, verifyStamps } from '../identity/stamp.ts';
import { approvalGiven, type RequestAnnotations, reconcileAsked, requestAnnotations } from './approval.ts';
import {
  annotationPath,
  annotationsOf,
  invalid,
  isRecord,
  jsonEqual,
  type Problem,
  retry,
} from './decision.ts';
import {
  type AdmissionRequest,
  type AdmissionResponse,
  allow,
  allowWithPatch,
  type JsonPatchOp,
  pointerSegment,
} from './review.ts';

export type { SigningKeySource };

/** The mutating webhook of CronOperations and WatchOperations in the CSV. */
export const MUTATING_SCHEDULE_WEBHOOK = 'mschedule.ops.vworkspace.io';

export interface StampExpectation {
  key: string;
  /** Who writes it, for the refusal of a user-written value. */
  writer: string;
  /** Whom it names, for that refusal (and how to ask for it properly). */
  names?: string;
  /** What the annotation must hold after admission; undefined = absent. */
  expected: string | undefined;
  /** The value before the request (UPDATE), undefined at CREATE. */
  old: string | undefined;
  /** The value in the request. */
  actual: string | undefined;
}

const OPERATOR = 'the operator, on the Operations a CronOperation or WatchOperation creates';
const WEBHOOK = 'the admission webhook';

/** A stamp the webhook writes; `ann` holds the request's annotations, read once per request. */
function stamp(ann: RequestAnnotations, key: string, expected: string | undefined, names?: string) {
  return {
    key,
    writer: WEBHOOK,
    ...(names ? { names } : {}),
    expected,
    old: ann.old[key],
    actual: ann.now[key],
  };
}

/** created-by, approved-by and reconcile-requested-by: the users behind an Operation's requests. */
function personalStamps(req: AdmissionRequest, ann: RequestAnnotations): StampExpectation[] {
  const { now, old } = ann;
  const user = req.userInfo?.username || undefined;
  const createdBy = req.operation === 'CREATE' ? user : old[ANNOTATION_CREATED_BY];
  let approvedBy: string | undefined;
  if (now[ANNOTATION_APPROVE] === 'true') {
    approvedBy = approvalGiven(ann) ? user : old[ANNOTATION_APPROVED_BY];
  }
  // The re-run stamp belongs to its request: set with each new value, gone with it.
  let requestedBy: string | undefined;
  if (now[ANNOTATION_RECONCILE] !== undefined) {
    requestedBy = reconcileAsked(ann) ? user : old[ANNOTATION_RECONCILE_REQUESTED_BY];
  }
  return [
    stamp(ann, ANNOTATION_CREATED_BY, createdBy, 'the user who created the Operation'),
    stamp(
      ann,
      ANNOTATION_APPROVED_BY,
      approvedBy,
      `the user who set ${ANNOTATION_APPROVE}: "true"; approve with ${ANNOTATION_APPROVE}: "true"`,
    ),
    stamp(
      ann,
      ANNOTATION_RECONCILE_REQUESTED_BY,
      requestedBy,
      `the user who set a new ${ANNOTATION_RECONCILE} value`,
    ),
  ];
}

/** acts-for: the operator's at CREATE (checkActsFor judges it), unchanged afterwards. */
function actsForExpectation(req: AdmissionRequest, ann: RequestAnnotations): StampExpectation {
  const now = ann.now[ANNOTATION_ACTS_FOR];
  const old = ann.old[ANNOTATION_ACTS_FOR];
  return {
    key: ANNOTATION_ACTS_FOR,
    writer: OPERATOR,
    expected: req.operation === 'CREATE' ? now : old,
    old,
    actual: now,
  };
}

/**
 * Every stamp an Operation must carry once this request is admitted. Without `keys` (no serving
 * certificate: the webhook is not served then) the admission record is left out; with keys but no current
 * one, `retry` says why nothing can be signed now.
 */
export function operationStamps(
  req: AdmissionRequest,
  keys?: SigningKeySource,
): { expectations: StampExpectation[]; retry?: string } {
  const ann = requestAnnotations(req);
  const base = [...personalStamps(req, ann), actsForExpectation(req, ann)];
  if (!keys) return { expectations: base };
  const key = keys.current();
  if (!key) {
    return {
      expectations: base,
      retry:
        "the webhook's serving certificate is not readable yet, so the admission record cannot be signed",
    };
  }
  const value = (k: string) => base.find((s) => s.key === k)?.expected;
  const createdBy = value(ANNOTATION_CREATED_BY);
  const actsFor = parseActsFor(value(ANNOTATION_ACTS_FOR));
  const groups = [...(req.userInfo?.groups ?? [])];
  let expected: string | undefined;
  // An UPDATE keeps a record only when the stored one proves its stamps: a stamp forged where the webhook
  // did not run is never signed later by an unrelated update.
  const prior =
    req.operation === 'UPDATE' ? verifyStamps(asOperation(req.oldObject), (id) => keys.find(id)) : undefined;
  if (createdBy !== undefined && actsFor && (!prior || prior.ok)) {
    const kept = prior?.ok ? prior.stamps : undefined;
    const approvedBy = value(ANNOTATION_APPROVED_BY);
    const keptApprover = kept?.approvedBy === approvedBy ? kept?.approverGroups : undefined;
    const requestedBy = value(ANNOTATION_RECONCILE_REQUESTED_BY);
    const reconcile: ReconcileRequest | undefined =
      requestedBy !== undefined
        ? {
            value: ann.now[ANNOTATION_RECONCILE] ?? '',
            requestedBy,
            requesterGroups: reconcileAsked(ann) ? groups : (kept?.reconcile?.requesterGroups ?? []),
          }
        : undefined;
    expected = signStamps(key, req.namespace ?? '', specOf(req.object), {
      createdBy,
      creatorGroups: kept ? kept.creatorGroups : groups,
      ...(approvedBy !== undefined ? { approvedBy, approverGroups: keptApprover ?? groups } : {}),
      actsFor,
      ...(reconcile ? { reconcile } : {}),
    });
  }
  return { expectations: [...base, stamp(ann, ANNOTATION_ADMISSION, expected)] };
}

const specOf = (obj: unknown): unknown => (isRecord(obj) ? obj.spec : undefined);

function asOperation(obj: unknown): {
  metadata?: { namespace?: string; annotations?: Record<string, string> };
  spec?: unknown;
} {
  const meta = isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : {};
  return {
    metadata: {
      ...(typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}),
      annotations: annotationsOf(obj),
    },
    spec: specOf(obj),
  };
}

/** A CronOperation's or WatchOperation's stamps: edited-by, and run-now-by on a CronOperation. */
export function schedulerStamps(
  kind: 'CronOperation' | 'WatchOperation',
  req: AdmissionRequest,
): StampExpectation[] {
  const ann = requestAnnotations(req);
  const { now, old } = ann;
  const user = req.userInfo?.username || undefined;
  const specChanged = req.operation === 'CREATE' || !jsonEqual(specOf(req.oldObject), specOf(req.object));
  const out = [stamp(ann, ANNOTATION_EDITED_BY, specChanged ? user : old[ANNOTATION_EDITED_BY])];
  if (kind === 'CronOperation') {
    const asked =
      now[ANNOTATION_RUN_NOW] !== undefined && now[ANNOTATION_RUN_NOW] !== old[ANNOTATION_RUN_NOW];
    out.push(stamp(ann, ANNOTATION_RUN_NOW_BY, asked ? user : old[ANNOTATION_RUN_NOW_BY]));
  }
  return out;
}

/** The mutating webhook of CronOperations and WatchOperations: stamps edited-by and run-now-by. */
export function mutateScheduler(req: AdmissionRequest): AdmissionResponse {
  const kind = req.kind?.kind;
  if (kind !== 'CronOperation' && kind !== 'WatchOperation') return allow(req.uid);
  return allowWithPatch(req.uid, stampPatch(req, schedulerStamps(kind, req)));
}

/**
 * The mutating webhook's patch: stamp (or restore, or drop) each annotation the user did not write
 * themselves. A value the user wrote that differs from the truth is left for the validating webhook
 * to refuse.
 */
export function stampPatch(req: AdmissionRequest, expectations: readonly StampExpectation[]): JsonPatchOp[] {
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

/**
 * Refusals of stamps that are not what they must be. A missing stamp the webhook writes means the
 * mutating webhook (`mutatingWebhook`) did not run.
 */
export function stampProblems(expectations: readonly StampExpectation[], mutatingWebhook: string): Problem[] {
  const problems: Problem[] = [];
  for (const s of expectations) {
    if (s.actual === s.expected) continue;
    if (s.actual === undefined && s.writer !== OPERATOR) {
      // Only the mutating webhook writes a stamp and it restores one a user left out, so a missing one
      // means it did not run: a configuration fault, not the user's.
      problems.push(
        invalid(
          annotationPath(s.key),
          `Required value: ${s.key} is missing, so the operator's mutating admission webhook (${mutatingWebhook}) did not run on this request; an administrator must check that the operator's MutatingWebhookConfiguration exists and matches this resource (CREATE, UPDATE)`,
          'FieldValueRequired',
        ),
      );
      continue;
    }
    problems.push(
      invalid(
        annotationPath(s.key),
        `Forbidden: ${s.key} is written by ${s.writer}${s.names ? ` (${s.names})` : ''} and cannot be set or changed by a user; remove it from the request`,
        'FieldValueForbidden',
      ),
    );
  }
  return problems;
}

/** A problem saying the admission record cannot be signed now (the certificate is not readable). */
export function signingProblem(message: string): Problem {
  return retry(annotationPath(ANNOTATION_ADMISSION), message);
}
