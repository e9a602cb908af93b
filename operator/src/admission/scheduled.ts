// Operations a CronOperation or WatchOperation creates (docs/adr/0011-scheduled-operations-carry-checked-authority.md).
//
// They are created by the operator's ServiceAccount, which holds none of the type verbs (backup, restore,
// …) on applicationinstances: the requester-access check (a SubjectAccessReview of the creator) would
// refuse every one of them. Their authority is the one the webhook checked when the CronOperation or
// WatchOperation was created or last edited (admission/schedules.ts: the editor needs the type verb on the
// target, or on every instance for a WatchOperation). So an Operation whose creator is the operator's own
// ServiceAccount passes the access check only when:
//   - its controller ownerReference is a CronOperation or WatchOperation (ops.vworkspace.io) — of the same
//     namespace, as owner references are;
//   - that object exists now with the uid the reference names (not a deleted one's, not a namesake);
//   - its operationTemplate produces this spec: equal to operationTemplate.spec (CronOperation), or equal
//     to it with spec.targetRef set (WatchOperation: it targets whichever watched instance changed).
// Everything else about the Operation (template, parameters, policy floor, target, capability) is judged
// as for anyone's. Any other request by the ServiceAccount is judged as anyone's, and refused.
import { OPS_GROUP } from '../api/constants.ts';
import {
  type AccessResult,
  type Facts,
  forbidden,
  isRecord,
  jsonEqual,
  type Lookup,
  type Needs,
  type Problem,
  retry,
} from './decision.ts';
import type { AdmissionRequest } from './review.ts';

export type SchedulerKind = 'CronOperation' | 'WatchOperation';

const PLURALS: Record<SchedulerKind, string> = {
  CronOperation: 'cronoperations',
  WatchOperation: 'watchoperations',
};

/** The controller ownerReference an Operation names, when it is one of ours that creates Operations. */
export interface SchedulerClaim {
  kind: SchedulerKind;
  name: string;
  uid: string;
}

const FIELD = 'metadata.ownerReferences';

export function schedulerPlural(kind: SchedulerKind): string {
  return PLURALS[kind];
}

/** The CronOperation/WatchOperation `obj` names as its controller, if any. */
export function schedulerClaim(obj: unknown): SchedulerClaim | undefined {
  const meta = isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : undefined;
  const refs = Array.isArray(meta?.ownerReferences) ? meta.ownerReferences : [];
  const ref = refs.find((r): r is Record<string, unknown> => isRecord(r) && r.controller === true);
  if (!ref || typeof ref.apiVersion !== 'string' || !ref.apiVersion.startsWith(`${OPS_GROUP}/`))
    return undefined;
  if (ref.kind !== 'CronOperation' && ref.kind !== 'WatchOperation') return undefined;
  if (typeof ref.name !== 'string' || typeof ref.uid !== 'string') return undefined;
  return { kind: ref.kind, name: ref.name, uid: ref.uid };
}

/** Access checks that are about a person acting now, never carried by an owner: approving. */
const PERSONAL_VERBS = new Set(['approve']);

/**
 * `needs` adjusted for a CREATE by the operator itself (`self`, its user name) naming a scheduler as its
 * controller: the owner is looked up instead of reviewing the operator's own access. The requester checks
 * of the Operation (the type verb, running pods as a ServiceAccount, reading source Operations) are the
 * ones admission/schedules.ts made of the editor when the object was created or last edited.
 */
export function trustScheduled(needs: Needs, req: AdmissionRequest, self: string | undefined): Needs {
  if (req.operation !== 'CREATE' || !self || req.userInfo?.username !== self) return needs;
  const claim = schedulerClaim(req.object);
  if (!claim) return needs;
  return { ...needs, scheduledBy: claim, access: needs.access.filter((c) => PERSONAL_VERBS.has(c.verb)) };
}

/**
 * `facts` as the requester checks of an Operation carrying its owner's authority see them: every access
 * check allowed by that authority, except the personal ones. Whether the owner really carries it is
 * checkScheduledBy's to say; when it does not, that problem stands and these checks add no noise.
 */
export function ownerAuthority(facts: Facts): Facts {
  const by = facts.scheduledBy?.claim;
  const granted: Lookup<AccessResult> = {
    ok: true,
    value: {
      allowed: true,
      reason: `authority of ${by?.kind} ${by?.name}, checked when it was created or last edited`,
    },
  };
  const access = new Proxy(facts.access, {
    get: (real, key) =>
      typeof key === 'string' && PERSONAL_VERBS.has(key.split('/')[0] ?? '') ? real[key] : granted,
  });
  return { ...facts, access };
}

/**
 * Whether `owner` (the object `claim` names, read now; undefined = it does not exist) carries the
 * authority for an Operation with `spec`. Problems are reported at metadata.ownerReferences.
 */
export function checkScheduledBy(
  claim: SchedulerClaim,
  owner: Lookup<unknown> | undefined,
  spec: unknown,
): Problem[] {
  const what = `${claim.kind} ${claim.name}`;
  if (!owner || !owner.ok) {
    return [
      retry(
        FIELD,
        `could not read ${what}, which this Operation names as its controller${owner && !owner.ok ? `: ${owner.message}` : ''}`,
      ),
    ];
  }
  const obj = owner.value;
  const meta = isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : undefined;
  if (!meta) {
    return [
      forbidden(
        FIELD,
        `Forbidden: ${what}, named as this Operation's controller, does not exist; only a CronOperation or WatchOperation of this namespace may have the operator create Operations`,
      ),
    ];
  }
  if (meta.uid !== claim.uid) {
    return [
      forbidden(
        FIELD,
        `Forbidden: ${what} (uid ${String(meta.uid)}) is not the object this Operation names as its controller (uid ${claim.uid}); it was deleted and created again`,
      ),
    ];
  }
  const objSpec = isRecord(obj) && isRecord(obj.spec) ? obj.spec : {};
  const template = isRecord(objSpec.operationTemplate) ? objSpec.operationTemplate.spec : undefined;
  const expected =
    claim.kind === 'WatchOperation' && isRecord(template) && isRecord(spec)
      ? { ...template, targetRef: spec.targetRef }
      : template;
  if (!jsonEqual(expected, spec)) {
    // Usually the operator's cache lagging behind an edit: it creates the current template's Operation next.
    return [
      retry(
        FIELD,
        `spec is not what the current spec.operationTemplate of ${what} produces (edited just now?)`,
      ),
    ];
  }
  return [];
}
