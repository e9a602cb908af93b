// The reconciler re-checks what admission checked (docs/adr/0029-signed-admission-stamps.md), so that a
// namespace the webhooks do not select, or an object stored while they were away, gains nothing:
//   1. the admission record (ops.vworkspace.io/admission) verifies: the webhook signed these stamps for
//      this namespace and spec; otherwise nothing runs (Accepted=False/NotAdmitted);
//   2. the stamped creator may still `<type>` the target (SubjectAccessReview with the stamped user and
//      groups), unless the Operation carries the authority of a CronOperation/WatchOperation (ADR 0011);
//   3. the stamped approver may still `approve` on the target, and is neither the creator nor anyone the
//      Operation acts for when the template demands separation of duties;
//   4. whoever asked for the current ops.vworkspace.io/reconcile value (reconcile-requested-by, signed with
//      the value) may still `<type>` the target: a re-run is the action again, on their authority.
// 2 to 4 end the Operation with Accepted=False/RequesterNotAuthorized. A re-run request on a Failed
// Operation is judged by 1 and 4 when it arrives (rerunRefusal: ReconcileIgnored, nothing changes) and again,
// like the rest, before anything starts. The decisions here are pure; the controller gathers the facts
// (verifyStamps, and reviews through the requester AccessCache).
import {
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import type { Template } from '../catalog/template.ts';
import type { Stamps } from '../identity/stamp.ts';

/** One access review of a stamped user: may `user` do `verb` on the target? */
export interface StampedReview {
  user: string;
  verb: string;
  allowed: boolean;
}

export type AdmissionFacts =
  | { ok: false; message: string; keyUnknown?: true }
  | {
      ok: true;
      stamps: Stamps;
      /** The creator's type verb; unset when the Operation carries a scheduler's authority or was not reviewed. */
      requester?: StampedReview;
      /** The approver's approve verb; unset when nobody approved (or it was not reviewed). */
      approver?: StampedReview;
      /** The type verb of who asked for the current reconcile value; unset when nobody did. */
      rerun?: StampedReview;
    };

export function notAdmittedMessage(op: Operation, why: string, keyUnknown = false): string {
  const ns = op.metadata.namespace ?? '';
  if (keyUnknown) {
    // Operations admitted before an operator upgrade (OLM issues each CSV its own serving certificate) or a
    // certificate rotation, and not started then: the record cannot be told from a forgery any more.
    return `not run: ${why}. If it was created before the operator was upgraded or its webhook certificate rotated, create it again (docs/upgrade.md); nothing in an Operation whose record does not verify is trusted`;
  }
  return `not run: ${why}. An administrator must make the operator's webhooks (moperation and voperation.ops.vworkspace.io) select namespace ${ns}; then create the Operation again (nothing in an Operation the webhooks did not admit is trusted, ${ANNOTATION_ADMISSION} included)`;
}

/** Why `review` (a stamped user's type verb on the target) no longer allows what they asked for. */
function lostVerb(
  op: Operation,
  review: StampedReview | undefined,
  who: string,
  remedy: string,
): string | undefined {
  if (!review || review.allowed) return undefined;
  return `"${review.user}", who ${who}, may no longer ${review.verb} applicationinstances/${op.spec.targetRef.name} in namespace ${op.metadata.namespace ?? ''} (the reconciler checks again before it starts anything); ${remedy}`;
}

const lostCreator = (op: Operation, review: StampedReview | undefined) =>
  lostVerb(
    op,
    review,
    'created this Operation',
    'someone who holds the verb must create the Operation again',
  );
const lostRerun = (op: Operation, review: StampedReview | undefined) =>
  lostVerb(
    op,
    review,
    `asked to re-run it (${ANNOTATION_RECONCILE})`,
    `someone who holds the verb may set a new ${ANNOTATION_RECONCILE} value, or create the Operation again`,
  );

/** The creator, or whoever asked for a re-run, lost the type verb on the target. */
export function requesterRefusal(
  op: Operation,
  facts: Extract<AdmissionFacts, { ok: true }>,
): string | undefined {
  return lostCreator(op, facts.requester) ?? lostRerun(op, facts.rerun);
}

/**
 * Why a new ops.vworkspace.io/reconcile value must not re-run a Failed Operation, or undefined: the
 * Operation's record does not verify, the value carries no signed requester (the webhook never judged it),
 * or that requester lost the type verb. `facts` unset: the checks are off (REQUIRE_ADMISSION_STAMP=false).
 */
export function rerunRefusal(op: Operation, facts: AdmissionFacts | undefined): string | undefined {
  if (!facts) return undefined;
  const ignored = `${ANNOTATION_RECONCILE} ignored`;
  if (!facts.ok) {
    return `${ignored}: ${facts.message}; nothing of it is trusted: create a new Operation where the operator's webhooks judge Operations`;
  }
  if (!facts.stamps.reconcile) {
    return `${ignored}: the request carries no ${ANNOTATION_RECONCILE_REQUESTED_BY} signed with it, so the admission webhook never checked that its requester may run this Operation's type on its target; re-run it where the webhook judges Operations, or create a new Operation`;
  }
  const lost = lostRerun(op, facts.rerun);
  return lost ? `${ignored}: ${lost}` : undefined;
}

export function approverRefusal(
  op: Operation,
  template: Template,
  facts: Extract<AdmissionFacts, { ok: true }>,
): string | undefined {
  if (op.metadata.annotations?.[ANNOTATION_APPROVE] !== 'true') return undefined;
  const { approvedBy, createdBy, actsFor } = facts.stamps;
  const target = `applicationinstances/${op.spec.targetRef.name}`;
  const again = `create the Operation again and have someone else who may approve ${target} approve it`;
  if (approvedBy === undefined) return `${ANNOTATION_APPROVE} is set but no approver was recorded; ${again}`;
  if (template.separationOfDuties === true && (approvedBy === createdBy || actsFor.includes(approvedBy))) {
    return `template ${template.name} requires separation of duties and "${approvedBy}" approved an Operation ${approvedBy === createdBy ? 'they created' : 'that acts for them'}; ${again}`;
  }
  const r = facts.approver;
  if (r && !r.allowed)
    return `"${r.user}", who approved this Operation, may no longer ${r.verb} ${target}; ${again}`;
  return undefined;
}
