// Admission of Operations: pure decisions (request + looked-up facts → response).
//
// CREATE, in this order (all problems are reported together, each at its field path):
//   1. shape of spec (type, engine, engine runs type, targetRef.name, template, parameters)
//   2. template resolution (spec.template, else type + engine)
//   3. spec.parameters: depth and size limits, then against the template's inputSchema; spec.policy may
//      not loosen the template's floor (requiresApproval); the parameters ask for nothing the template
//      does not grant (a ServiceAccount outside its list only from a requester who could run pods as it)
//   4. spec.parametersFrom (and the template's defaults it falls back on): shape, parameters the template
//      knows, outputs the sources can have, and get/list on operations for the requester (ADR 0007);
//      a drill's spec.parameters.probeSecret: get on that Secret for the requester, and never filled in
//      by parametersFrom (probe-secret.ts, ADR 0057)
//   5. the target exists in this namespace, advertises the capability, matches the template selectors
//   6. the requester may <type lower-case> applicationinstances/<target> (SubjectAccessReview), or, for an
//      Operation the operator creates for a CronOperation/WatchOperation, that object's checked authority
//      (scheduled.ts)
//   7. created-by / approved-by / reconcile-requested-by / admission are the webhook's, acts-for the
//      operator's (stamps.ts, acts-for.ts); approving needs verb `approve` and, with the template's
//      separationOfDuties, someone other than the creator and than those a scheduled Operation acts for
//   8. a controller ownerReference naming a CronOperation/WatchOperation only from the operator itself
// UPDATE: spec is immutable except cancel (which cannot be unset), plus the approval rules of 7; a new
// ops.vworkspace.io/reconcile value (a re-run) needs the type verb on the target and is stamped with its
// requester (reconcile-requested-by, signed with the others); a scheduler's ownerReference is never added
// or changed (8).
import { ANNOTATION_ACTS_FOR } from '../api/annotations.ts';
import { ANNOTATION_APPROVE, ANNOTATION_RECONCILE, OPS_GROUP } from '../api/index.ts';
import type { Template } from '../catalog/index.ts';
import { parseActsFor } from '../identity/stamp.ts';
import { checkActsFor } from './acts-for.ts';
import { ANNOTATION_CREATED_BY, isApprovalTransition, isReconcileRequest } from './approval.ts';
import {
  type AccessCheck,
  accessKey,
  annotationPath,
  annotationsOf,
  type Facts,
  forbidden,
  invalid,
  isRecord,
  jsonEqual,
  type Needs,
  type Problem,
  respond,
} from './decision.ts';
import { checkParametersFrom, sourceAccess } from './parameters-from.ts';
import { checkProbeSecret, probeSecretAccess } from './probe-secret.ts';
import { type AdmissionRequest, type AdmissionResponse, allow, allowWithPatch } from './review.ts';
import { checkScheduledBy, checkSchedulerReference, ownerAuthority } from './scheduled.ts';
import { checkSource, cloneCheck } from './source.ts';
import {
  checkAccess,
  checkGrants,
  checkParameters,
  checkPolicyFloor,
  checkTarget,
  checkTemplate,
  readOperationSpec,
  requestedServiceAccount,
  runAsChecks,
  typeVerb,
} from './spec-checks.ts';
import type { OperationSpecView } from './spec-view.ts';
import {
  operationStamps,
  type SigningKeySource,
  signingProblem,
  stampPatch,
  stampProblems,
} from './stamps.ts';

/** The verb a user needs on the target to approve an Operation on it. */
export const APPROVE_VERB = 'approve';

/** The mutating webhook's name in the CSV (and so in the MutatingWebhookConfiguration OLM creates). */
export const MUTATING_OPERATION_WEBHOOK = `moperation.${OPS_GROUP}`;

const specOf = (obj: unknown): unknown => (isRecord(obj) ? obj.spec : undefined);

/** The spec the approval rules read: the new one at CREATE, the stored one at UPDATE (spec is immutable). */
function approvalView(req: AdmissionRequest): OperationSpecView {
  const spec = req.operation === 'UPDATE' ? specOf(req.oldObject) : specOf(req.object);
  return readOperationSpec(spec, 'spec', { target: true }).view;
}

const CREATE_VIEW = { target: true, parametersFrom: true } as const;

/**
 * A CREATE's spec as read once by the validating webhook, for operationNeeds and decideOperation both:
 * its narrowed view and shape problems, and the template it resolves to in `templates`.
 */
export interface OperationRead {
  /** The spec read (by identity): decideOperation uses this only for the same spec object. */
  spec: unknown;
  view: OperationSpecView;
  problems: readonly Problem[];
  /** The catalog the template was resolved in: used again only while the facts hold the same one. */
  templates: Facts['templates'];
  template?: Template;
  templateProblems: readonly Problem[];
}

/** Reads a CREATE's spec and resolves its template in `templates`. */
export function readOperation(req: AdmissionRequest, templates: Pick<Facts, 'templates'>): OperationRead {
  const spec = specOf(req.object);
  const { view, problems } = readOperationSpec(spec, 'spec', CREATE_VIEW);
  const { template, problems: templateProblems } = checkTemplate(view, 'spec', templates);
  return {
    spec,
    view,
    problems,
    templates: templates.templates,
    ...(template ? { template } : {}),
    templateProblems,
  };
}

/** `read` when it was made of this spec object, else undefined. */
const readOf = (req: AdmissionRequest, read?: OperationRead) =>
  read && read.spec === specOf(req.object) ? read : undefined;

/** The same loaded catalog (its template list by identity): a template resolved in one holds in the other. */
const sameCatalog = (a: Facts['templates'], b: Facts['templates']) => a.ok && b.ok && a.value === b.value;

/**
 * What the handler must look up for this request. `templates` (when loaded) tell which parametersFrom
 * reads need access reviews, including a template's defaults. `read`: the spec already read with
 * readOperation (the validating webhook passes the same to decideOperation).
 */
export function operationNeeds(
  req: AdmissionRequest,
  templates?: Pick<Facts, 'templates'>,
  read?: OperationRead,
): Needs {
  const needs: Needs = { access: [] };
  if (req.operation === 'CREATE') {
    const given = readOf(req, read);
    const { view } = given ?? readOperationSpec(specOf(req.object), 'spec', CREATE_VIEW);
    if (view.targetName !== undefined) {
      needs.target = view.targetName;
      if (view.type) needs.access.push({ verb: typeVerb(view.type), name: view.targetName });
    }
    const sa = requestedServiceAccount(view);
    if (sa !== undefined) needs.access.push(...runAsChecks(sa));
    const clone = cloneCheck(view, req.namespace ?? '');
    if (clone) needs.access.push(clone);
    const names = (view.parametersFrom ?? []).flatMap((s) => (s.operationRef ? [s.operationRef.name] : []));
    if (names.length > 0) needs.operations = [...new Set(names)];
    const { template } = !templates
      ? {}
      : given && sameCatalog(given.templates, templates.templates)
        ? given
        : checkTemplate(view, 'spec', templates);
    if (template) needs.access.push(...sourceAccess(view, template, 'spec').map((a) => a.check));
    needs.access.push(...probeSecretAccess(view, 'spec').map((a) => a.check));
  }
  if ((req.operation === 'CREATE' || req.operation === 'UPDATE') && isApprovalTransition(req)) {
    const { targetName } = approvalView(req);
    if (targetName !== undefined) needs.access.push({ verb: APPROVE_VERB, name: targetName });
  }
  if (req.operation === 'UPDATE' && isReconcileRequest(req)) {
    const { type, targetName } = approvalView(req);
    if (type && targetName !== undefined) needs.access.push({ verb: typeVerb(type), name: targetName });
  }
  return needs;
}

/**
 * The mutating webhook: writes the stamps (stamps.ts) and signs them. It also refuses spec changes on UPDATE:
 * mutating webhooks run before the CRD's own validation, so the user sees this message (which says
 * what may change) instead of the CEL rule's terser one. Everything else is left to validation.
 */
export function mutateOperation(req: AdmissionRequest, keys?: SigningKeySource): AdmissionResponse {
  if (req.operation === 'UPDATE') {
    const problems = checkImmutable(specOf(req.oldObject), specOf(req.object));
    if (problems.length > 0) return respond(req.uid, problems);
  }
  const stamps = operationStamps(req, keys);
  if (stamps.retry && (req.operation === 'CREATE' || req.operation === 'UPDATE'))
    return respond(req.uid, [signingProblem(stamps.retry)]);
  return allowWithPatch(req.uid, stampPatch(req, stamps.expectations));
}

/**
 * The validating webhook's decision. `read`: the spec as readOperation read it for operationNeeds; used
 * only for the same spec object and, for its template, the same catalog as `facts`, so the decision is
 * the one made without it.
 */
export function decideOperation(
  req: AdmissionRequest,
  facts: Facts,
  read?: OperationRead,
): AdmissionResponse {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow(req.uid);
  const namespace = req.namespace ?? '';
  const user = req.userInfo?.username ?? '';
  const problems: Problem[] = [];

  if (req.operation === 'CREATE') {
    const given = readOf(req, read);
    const { view, problems: shape } = given ?? readOperationSpec(specOf(req.object), 'spec', CREATE_VIEW);
    problems.push(...shape);
    const { template, problems: tp } =
      given && sameCatalog(given.templates, facts.templates)
        ? { template: given.template, problems: given.templateProblems }
        : checkTemplate(view, 'spec', facts);
    problems.push(...tp);
    // Created by the operator for a CronOperation/WatchOperation: the requester's access is that object's
    // checked authority (scheduled.ts); everything else is judged as for anyone.
    const requester = facts.scheduledBy ? ownerAuthority(facts, specOf(req.object)) : facts;
    if (facts.scheduledBy) {
      problems.push(
        ...checkScheduledBy(facts.scheduledBy.claim, facts.scheduledBy.owner, req.object, facts.target),
      );
    }
    if (template) {
      problems.push(...checkParameters(view, template, 'spec'));
      problems.push(
        ...checkParametersFrom(view, template, 'spec', facts, (name) => {
          const r = requester.access[accessKey({ verb: 'get', resource: 'operations', name })];
          return r?.ok === true && r.value.allowed;
        }),
      );
      problems.push(...checkPolicyFloor(view, template, 'spec'));
      problems.push(...checkGrants(view, template, 'spec', user, namespace, requester));
      for (const a of sourceAccess(view, template, 'spec')) {
        problems.push(...checkAccess(a.check, user, namespace, a.field, a.why, requester));
      }
    }
    problems.push(...checkProbeSecret(view, 'spec', user, namespace, requester));
    problems.push(...checkSchedulerReference(req, facts.scheduledBy !== undefined));
    problems.push(...checkTarget(view, template, namespace, 'spec', facts, { selectors: true }));
    problems.push(...checkSource(view, template, namespace, user, requester));
    if (view.type && view.targetName !== undefined) {
      problems.push(
        ...checkAccess(
          { verb: typeVerb(view.type), name: view.targetName },
          user,
          namespace,
          'spec.targetRef.name',
          `an Operation of type ${view.type} on ${view.targetName}`,
          requester,
        ),
      );
    }
  } else {
    problems.push(...checkImmutable(specOf(req.oldObject), specOf(req.object)));
    problems.push(...checkSchedulerReference(req, false));
    problems.push(...checkReconcileRequest(req, facts));
  }
  problems.push(...checkApproval(req, facts));
  return respond(req.uid, problems);
}

const MUTABLE = new Set(['cancel']);

function checkImmutable(oldSpec: unknown, newSpec: unknown): Problem[] {
  const before = isRecord(oldSpec) ? oldSpec : {};
  const after = isRecord(newSpec) ? newSpec : {};
  if (!isRecord(newSpec) && isRecord(oldSpec)) {
    return [invalid('spec', 'Invalid value: spec cannot be removed or replaced by a non-object')];
  }
  const problems: Problem[] = [];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  for (const k of keys) {
    if (MUTABLE.has(k) || jsonEqual(before[k], after[k])) continue;
    problems.push(
      invalid(
        `spec.${k}`,
        `Forbidden: spec.${k} is immutable after create; only spec.cancel and the annotation ${ANNOTATION_APPROVE} may change: create a new Operation instead`,
        'FieldValueForbidden',
      ),
    );
  }
  if (before.cancel === true && after.cancel !== true) {
    problems.push(
      invalid(
        'spec.cancel',
        'Forbidden: spec.cancel cannot be unset once true: a cancelled Operation stays cancelled; create a new Operation to run again',
        'FieldValueForbidden',
      ),
    );
  }
  return problems;
}

/**
 * A new ops.vworkspace.io/reconcile value re-runs a failed Operation: the action again, so it needs the
 * same verb as creating it (the type verb on the target), whoever created the Operation.
 */
function checkReconcileRequest(req: AdmissionRequest, facts: Facts): Problem[] {
  if (!isReconcileRequest(req)) return [];
  const { type, targetName } = approvalView(req);
  if (!type || targetName === undefined) return [];
  return checkAccess(
    { verb: typeVerb(type), name: targetName },
    req.userInfo?.username ?? '',
    req.namespace ?? '',
    annotationPath(ANNOTATION_RECONCILE),
    `asking to re-run an Operation of type ${type} on ${targetName} (${ANNOTATION_RECONCILE})`,
    facts,
  );
}

function checkApproval(req: AdmissionRequest, facts: Facts): Problem[] {
  const problems: Problem[] = [];
  const ann = annotationsOf(req.object);
  const user = req.userInfo?.username;
  if (!user) {
    return [
      invalid(
        annotationPath(ANNOTATION_CREATED_BY),
        'the admission request carries no user name, so the creator cannot be recorded; send the request as an authenticated user',
      ),
    ];
  }
  const approve = ann[ANNOTATION_APPROVE];
  if (approve !== undefined && approve !== 'true') {
    problems.push(
      invalid(
        annotationPath(ANNOTATION_APPROVE),
        `Unsupported value: ${JSON.stringify(approve)}: set it to "true" to approve, or remove it`,
        'FieldValueNotSupported',
      ),
    );
  }
  const stamps = operationStamps(req, facts.signingKeys);
  if (stamps.retry) problems.push(signingProblem(stamps.retry));
  problems.push(...stampProblems(stamps.expectations, MUTATING_OPERATION_WEBHOOK));
  if (req.operation === 'CREATE') problems.push(...checkActsFor(req, facts));
  if (!isApprovalTransition(req)) return problems;

  const field = annotationPath(ANNOTATION_APPROVE);
  const view = approvalView(req);
  const namespace = req.namespace ?? '';
  if (view.targetName !== undefined) {
    const check: AccessCheck = { verb: APPROVE_VERB, name: view.targetName };
    problems.push(
      ...checkAccess(check, user, namespace, field, `approving an Operation on ${view.targetName}`, facts),
    );
  }
  // Separation of duties is a property of the template; without one we cannot tell, so refuse.
  const { template, problems: tp } = checkTemplate(view, 'spec', facts);
  if (!template) {
    if (req.operation === 'UPDATE') {
      problems.push(
        ...tp.map((p) => ({
          ...p,
          field,
          message: `cannot check separation of duties for this approval: ${p.message}`,
        })),
      );
    }
    return problems;
  }
  const stored = req.operation === 'CREATE' ? annotationsOf(req.object) : annotationsOf(req.oldObject);
  const creator = req.operation === 'CREATE' ? user : stored[ANNOTATION_CREATED_BY];
  // A scheduled Operation's creator is the operator; it acts for whoever wrote its CronOperation or
  // WatchOperation (and asked for the run), and none of them may be the second person.
  const actsFor = parseActsFor(stored[ANNOTATION_ACTS_FOR]) ?? [];
  if (template.separationOfDuties === true && (creator === user || actsFor.includes(user))) {
    const why =
      creator === user
        ? `"${user}" created this Operation`
        : `this Operation acts for "${user}" (${ANNOTATION_ACTS_FOR}: who wrote the CronOperation or WatchOperation that created it, or asked it to run now)`;
    problems.push(
      forbidden(
        field,
        `template ${template.name} requires separation of duties and ${why}; someone else with the "${APPROVE_VERB}" verb on applicationinstances/${view.targetName ?? ''} must approve it`,
      ),
    );
  }
  return problems;
}
