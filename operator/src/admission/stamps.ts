// The identity stamps beyond created-by and approved-by (approval.ts), each written only by the webhook or
// the operator and refused when a user writes it:
//   - on an Operation, ops.vworkspace.io/acts-for (set by the operator on the Operations a CronOperation or
//     WatchOperation creates, checked against that object's stamps; immutable) and ops.vworkspace.io/admission
//     (the signed record of the stamps, docs/adr/0029-signed-admission-stamps.md);
//   - on a CronOperation/WatchOperation, ops.vworkspace.io/edited-by (who created it or last changed its
//     spec) and, on a CronOperation, ops.vworkspace.io/run-now-by (who set the current run-now value).
// Pure apart from the signing key's HMAC.
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_EDITED_BY,
  ANNOTATION_RUN_NOW,
  ANNOTATION_RUN_NOW_BY,
} from '../api/annotations.ts';
import { parseActsFor, signStamps, verifyStamps } from '../identity/stamp.ts';
export type { SigningKeySource };

import type { SigningKeySource } from '../identity/signing-key.ts';
import { ANNOTATION_CREATED_BY, type StampExpectation, stampExpectations, stampPatch } from './approval.ts';
import {
  annotationPath,
  annotationsOf,
  invalid,
  isRecord,
  jsonEqual,
  type Problem,
  retry,
} from './decision.ts';
import { type AdmissionRequest, type AdmissionResponse, allow, allowWithPatch } from './review.ts';

/** The mutating webhook of CronOperations and WatchOperations in the CSV. */
export const MUTATING_SCHEDULE_WEBHOOK = 'mschedule.ops.vworkspace.io';

/** The mutating webhook of CronOperations and WatchOperations: stamps edited-by and run-now-by. */
export function mutateScheduler(req: AdmissionRequest): AdmissionResponse {
  const kind = req.kind?.kind;
  if (kind !== 'CronOperation' && kind !== 'WatchOperation') return allow(req.uid);
  return allowWithPatch(req.uid, stampPatch(req, schedulerStamps(kind, req)));
}

const OPERATOR = 'the operator, on the Operations a CronOperation or WatchOperation creates';
const WEBHOOK = 'the admission webhook';

function before(req: AdmissionRequest): Record<string, string> {
  return req.operation === 'UPDATE' ? annotationsOf(req.oldObject) : {};
}

/** acts-for: the operator's at CREATE (checkActsFor judges it), unchanged afterwards. */
function actsForExpectation(req: AdmissionRequest): StampExpectation {
  const now = annotationsOf(req.object)[ANNOTATION_ACTS_FOR];
  const old = before(req)[ANNOTATION_ACTS_FOR];
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
  const base = [...stampExpectations(req), actsForExpectation(req)];
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
  const user = req.userInfo ?? {};
  let expected: string | undefined;
  // An UPDATE keeps a record only when the stored one proves its stamps: a stamp forged where the webhook
  // did not run is never signed later by an unrelated update.
  const prior =
    req.operation === 'UPDATE' ? verifyStamps(asOperation(req.oldObject), (id) => keys.find(id)) : undefined;
  if (createdBy !== undefined && actsFor && (!prior || prior.ok)) {
    const approving = annotationsOf(req.object)[ANNOTATION_APPROVE] === 'true';
    const approvedBy = approving ? value('ops.vworkspace.io/approved-by') : undefined;
    const keptApprover =
      prior?.ok && prior.stamps.approvedBy === approvedBy ? prior.stamps.approverGroups : undefined;
    expected = signStamps(key, req.namespace ?? '', specOf(req.object), {
      createdBy,
      creatorGroups: prior?.ok ? prior.stamps.creatorGroups : [...(user.groups ?? [])],
      ...(approvedBy !== undefined
        ? { approvedBy, approverGroups: keptApprover ?? [...(user.groups ?? [])] }
        : {}),
      actsFor,
    });
  }
  const admission: StampExpectation = {
    key: ANNOTATION_ADMISSION,
    writer: WEBHOOK,
    expected,
    old: before(req)[ANNOTATION_ADMISSION],
    actual: annotationsOf(req.object)[ANNOTATION_ADMISSION],
  };
  return { expectations: [...base, admission] };
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
  const now = annotationsOf(req.object);
  const old = before(req);
  const user = req.userInfo?.username || undefined;
  const specChanged = req.operation === 'CREATE' || !jsonEqual(specOf(req.oldObject), specOf(req.object));
  const out: StampExpectation[] = [
    {
      key: ANNOTATION_EDITED_BY,
      writer: WEBHOOK,
      expected: specChanged ? user : old[ANNOTATION_EDITED_BY],
      old: old[ANNOTATION_EDITED_BY],
      actual: now[ANNOTATION_EDITED_BY],
    },
  ];
  if (kind === 'CronOperation') {
    const asked =
      now[ANNOTATION_RUN_NOW] !== undefined && now[ANNOTATION_RUN_NOW] !== old[ANNOTATION_RUN_NOW];
    out.push({
      key: ANNOTATION_RUN_NOW_BY,
      writer: WEBHOOK,
      expected: asked ? user : old[ANNOTATION_RUN_NOW_BY],
      old: old[ANNOTATION_RUN_NOW_BY],
      actual: now[ANNOTATION_RUN_NOW_BY],
    });
  }
  return out;
}

/**
 * Refusals of stamps that are not what they must be. `describe` says who the stamp names (for the
 * stamps of approval.ts); a missing stamp the webhook writes means the mutating webhook did not run.
 */
export function stampProblems(
  expectations: readonly StampExpectation[],
  mutatingWebhook: string,
  describe: (key: string) => string | undefined = () => undefined,
): Problem[] {
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
    const who = describe(s.key);
    problems.push(
      invalid(
        annotationPath(s.key),
        `Forbidden: ${s.key} is written by ${s.writer ?? WEBHOOK}${who ? ` (${who})` : ''} and cannot be set or changed by a user; remove it from the request`,
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
