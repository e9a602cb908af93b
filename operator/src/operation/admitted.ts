// The reconciler re-checks what admission checked (docs/adr/0029-signed-admission-stamps.md), so that a
// namespace the webhooks do not select, or an object stored while they were away, gains nothing:
//   1. the admission record (ops.vworkspace.io/admission) verifies: the webhook signed these stamps for
//      this namespace and spec; otherwise nothing runs (Accepted=False/NotAdmitted);
//   2. the stamped creator may still `<type>` the target (SubjectAccessReview with the stamped user and
//      groups), unless the Operation carries the authority of a CronOperation/WatchOperation (ADR 0011);
//   3. the stamped approver may still `approve` on the target, and is neither the creator nor anyone the
//      Operation acts for when the template demands separation of duties.
// 2 and 3 end the Operation with Accepted=False/RequesterNotAuthorized. The decisions here are pure; the
// controller gathers the facts (verifyStamps, and reviews through the requester AccessCache).
import { ANNOTATION_ADMISSION, ANNOTATION_APPROVE } from '../api/annotations.ts';
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
  | { ok: false; message: string }
  | {
      ok: true;
      stamps: Stamps;
      /** The creator's type verb; unset when the Operation carries a scheduler's authority or was not reviewed. */
      requester?: StampedReview;
      /** The approver's approve verb; unset when nobody approved (or it was not reviewed). */
      approver?: StampedReview;
    };

export function notAdmittedMessage(op: Operation, why: string): string {
  const ns = op.metadata.namespace ?? '';
  return `not run: ${why}. An administrator must make the operator's webhooks (moperation and voperation.ops.vworkspace.io) select namespace ${ns}; then create the Operation again (nothing in an Operation the webhooks did not admit is trusted, ${ANNOTATION_ADMISSION} included)`;
}

export function requesterRefusal(
  op: Operation,
  facts: Extract<AdmissionFacts, { ok: true }>,
): string | undefined {
  const r = facts.requester;
  if (!r || r.allowed) return undefined;
  return `"${r.user}", who created this Operation, may no longer ${r.verb} applicationinstances/${op.spec.targetRef.name} in namespace ${op.metadata.namespace ?? ''} (the reconciler checks again before it starts anything); someone who holds the verb must create the Operation again`;
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
