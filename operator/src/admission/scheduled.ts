// Operations a CronOperation or WatchOperation creates (docs/adr/0011-scheduled-operations-carry-checked-authority.md,
// docs/adr/0025-what-a-scheduler-produces.md).
//
// They are created by the operator's ServiceAccount, which holds none of the type verbs (backup, restore,
// …) on applicationinstances: the requester-access check (a SubjectAccessReview of the creator) would
// refuse every one of them. Their authority is the one the webhook checked when the CronOperation or
// WatchOperation was created or last edited (admission/schedules.ts: the editor needs the type verb on the
// target, or on every instance for a WatchOperation or a fleet). So an Operation whose creator is the
// operator's own ServiceAccount passes the access check only when:
//   - its controller ownerReference is a CronOperation or WatchOperation (ops.vworkspace.io) — of the same
//     namespace, as owner references are;
//   - that object exists now with the uid the reference names (not a deleted one's, not a namesake);
//   - it is exactly what that object produces for its target and run (schedule/produced.ts): the fixed
//     target or one its selector picks now, operationTemplate.spec with parametersFromTrigger applied.
//     Anything else is refused (403), which the controllers report as a condition and an Event.
// Everything else about the Operation (template, parameters, policy floor, target, capability) is judged
// as for anyone's; a ServiceAccount a substitution chose is judged as anyone's too, since the editor was
// checked only for the one the template names. Any other request by the ServiceAccount is judged as
// anyone's, and refused. Nobody else may create an Operation naming a scheduler as its controller, nor
// add or change such a reference: it decides what the scheduler counts, prunes and adopts.
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { OPS_GROUP } from '../api/constants.ts';
import type { CronOperation } from '../api/cronoperation.ts';
import type { Operation } from '../api/operation.ts';
import type { WatchOperation } from '../api/watchoperation.ts';
import { producedMismatch, type Scheduler } from '../schedule/produced.ts';
import {
  type AccessResult,
  accessKey,
  type Facts,
  forbidden,
  isRecord,
  jsonEqual,
  type Lookup,
  type Needs,
  type Problem,
  retry,
  type TargetInstance,
} from './decision.ts';
import type { AdmissionRequest } from './review.ts';
import { requestedServiceAccount, runAsChecks } from './spec-checks.ts';

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

/**
 * A controller ownerReference naming a CronOperation/WatchOperation is what that scheduler counts,
 * prunes and adopts as its own, so only the operator writes one: at CREATE (`trusted`: the request is
 * the operator's own, trustScheduled) and never later. Removing one (the garbage collector orphaning an
 * Operation) is allowed.
 */
export function checkSchedulerReference(req: AdmissionRequest, trusted: boolean): Problem[] {
  const claim = schedulerClaim(req.object);
  if (!claim) return [];
  if (req.operation === 'CREATE' && trusted) return [];
  if (req.operation === 'UPDATE') {
    const before = schedulerClaim(req.oldObject);
    if (before && jsonEqual(before, claim)) return [];
  }
  return [
    forbidden(
      FIELD,
      `Forbidden: only the operator creates an Operation whose controller is ${claim.kind} ${claim.name}, and never adds or changes that reference later: the scheduler counts, prunes and adopts the Operations it controls; remove the ownerReference (create the Operation without it)`,
    ),
  ];
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

const templateSpecOf = (owner: unknown): Record<string, unknown> | undefined => {
  const spec = isRecord(owner) && isRecord(owner.spec) ? owner.spec : undefined;
  const tmpl = isRecord(spec?.operationTemplate) ? spec.operationTemplate : undefined;
  return isRecord(tmpl?.spec) ? tmpl.spec : undefined;
};

const serviceAccountIn = (spec: unknown): string | undefined =>
  isRecord(spec) && isRecord(spec.parameters)
    ? requestedServiceAccount({ parameters: spec.parameters })
    : undefined;

/**
 * `facts` as the requester checks of an Operation carrying its owner's authority see them: every access
 * check allowed by that authority, except the personal ones, and except running pods as a ServiceAccount
 * other than the one operationTemplate names (a substitution chose it; the editor was not checked for
 * it, so the template's allowedServiceAccounts decide). Whether the owner really carries the authority is
 * checkScheduledBy's to say; when it does not, that problem stands and these checks add no noise.
 */
export function ownerAuthority(facts: Facts, spec: unknown): Facts {
  const by = facts.scheduledBy;
  const granted: Lookup<AccessResult> = {
    ok: true,
    value: {
      allowed: true,
      reason: `authority of ${by?.claim.kind} ${by?.claim.name}, checked when it was created or last edited`,
    },
  };
  const asked = serviceAccountIn(spec);
  const checked = by?.owner.ok ? serviceAccountIn(templateSpecOf(by.owner.value)) : undefined;
  const notCarried = new Set(
    asked !== undefined && asked !== checked ? runAsChecks(asked).map(accessKey) : [],
  );
  const chosen: Lookup<AccessResult> = {
    ok: true,
    value: {
      allowed: false,
      reason: `ServiceAccount ${asked} came from spec.parametersFromTrigger of ${by?.claim.kind} ${by?.claim.name}, not from the operationTemplate its editor was checked for`,
    },
  };
  const access = new Proxy(facts.access, {
    get: (real, key) => {
      if (typeof key !== 'string') return granted;
      if (PERSONAL_VERBS.has(key.split('/')[0] ?? '')) return real[key];
      return notCarried.has(key) ? chosen : granted;
    },
  });
  return { ...facts, access };
}

/** The instance the scheduler checks read, from what the webhook looked up. */
function instanceOf(t: TargetInstance): ApplicationInstance {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: {
      name: t.name,
      ...(t.labels ? { labels: { ...t.labels } } : {}),
      ...(t.annotations ? { annotations: { ...t.annotations } } : {}),
    },
    spec: (isRecord(t.spec) ? t.spec : {}) as ApplicationInstance['spec'],
  };
}

/**
 * Whether `owner` (the object `claim` names, read now; undefined = it does not exist) carries the
 * authority for the Operation `obj`, whose target was read as `target`. A missing or unreadable target
 * is left to checkTarget (not found, or retry).
 */
export function checkScheduledBy(
  claim: SchedulerClaim,
  owner: Lookup<unknown> | undefined,
  obj: unknown,
  target: Lookup<TargetInstance | undefined> | undefined,
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
  const meta = isRecord(owner.value) && isRecord(owner.value.metadata) ? owner.value.metadata : undefined;
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
  if (!target?.ok || target.value === undefined || !isRecord(obj) || !templateSpecOf(owner.value)) return [];
  // Stored by the API server under the CRD's schema: the shapes the scheduler code reads.
  const scheduler = (
    claim.kind === 'CronOperation'
      ? { kind: claim.kind, object: owner.value as unknown as CronOperation }
      : { kind: claim.kind, object: owner.value as unknown as WatchOperation }
  ) as Scheduler;
  const op = obj as unknown as Operation;
  if (!isRecord(op.metadata) || !isRecord(op.spec)) return [];
  const m = producedMismatch(scheduler, op, instanceOf(target.value));
  if (!m) return [];
  return [
    forbidden(
      m.field,
      `Forbidden: ${m.message}; an Operation the operator creates for ${what} carries its authority only when it is exactly what its operationTemplate produces (if ${what} or the instance changed just now, its next run or trigger uses the new state)`,
    ),
  ];
}
