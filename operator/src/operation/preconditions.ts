// The preconditions of an Operation, evaluated before any child exists. Pure: a function of the
// Operation and facts the controller looked up (templates, target, access review results, the other
// Operations, which Secrets/ServiceAccounts exist, the time).
//
// Order (docs/conditions.md): first the request itself — template resolution (TemplateNotFound), the
// parametersFrom sources (InputsUnavailable, or Blocked/DependencyNotMet while a source runs) and the
// merged parameters (InvalidParameters), since the template decides which preconditions apply — then, in
// the order of PRECONDITIONS: TargetExists (the target exists and describes its release) → CapabilityAdvertised → TemplateSelectors → EngineInstalled →
// RbacProfilePresent → ApprovalGiven → TargetGenerationMatches (when listed) → TargetReady (when
// requireReady) → DependenciesSucceeded (when the template has dependencies) → NoConflictingOperation →
// RequiredSecretsPresent → RequiredServiceAccountPresent → MaintenanceWindow. The first one that does
// not hold decides.
//
// Outcomes:
//   rejected  Accepted=False. `permanent` ones (TemplateNotFound, InputsUnavailable, InvalidParameters,
//             CapabilityMissing, SelectorMismatch) end the Operation at once. TargetNotFound,
//             RbacProfileMissing and EngineNotInstalled are fixed by creating something (the instance, a
//             RoleBinding, the engine's CRDs), so they wait a grace period first (ADR 0003).
//   blocked   Blocked=True: waiting; re-evaluated on the events that can unblock it. Never fails.
//   satisfied Accepted=True/TemplateValidated: materialize the child.
import { ANNOTATION_APPROVE } from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { PreconditionName } from '../api/enums.ts';
import type { Operation } from '../api/operation.ts';
import type { InputRecord } from '../api/parameters-from.ts';
import { CONDITION_READY } from '../api/reasons.ts';
import { requiredObjects, validateParameters } from '../catalog/parameters.ts';
import { checkParametersLimits } from '../catalog/parameters-limits.ts';
import { type EffectivePolicy, effectivePolicy } from '../catalog/policy.ts';
import { resolveTemplate } from '../catalog/resolve.ts';
import { matchTemplateTarget } from '../catalog/selectors.ts';
import type { MaintenanceWindow, Template } from '../catalog/template.ts';
import type { AccessAttributes } from '../rbac/profiles.ts';
import { describeAccess } from '../rbac/profiles.ts';
import { formatGoDuration, parsePositiveDuration } from '../time/duration.ts';
import { START_SEARCH_LIMIT, type StartWindow, startWindow } from '../time/window.ts';
import { type AdmissionFacts, approverRefusal, notAdmittedMessage, requesterRefusal } from './admitted.ts';
import { findConflicts } from './conflicts.ts';
import { checkDependencies } from './dependencies.ts';
import { type EngineFacts, engineNotInstalledMessage } from './engine-install.ts';
import { recordedParameters, resolveInputs } from './inputs.ts';

/** Result of the RbacProfilePresent access reviews for the template's profile. */
export type RbacResult =
  | { allowed: true }
  | { allowed: false; unknownProfile: true }
  | { allowed: false; missing: readonly AccessAttributes[] };

export interface PreconditionFacts {
  now: Date;
  target: ApplicationInstance | undefined;
  /** The older instance that describes the target's Helm release (release/claim.ts), if any. */
  claimant?: ApplicationInstance;
  /** Access review results of the resolved template's rbacProfile. */
  rbac: RbacResult;
  /** Operations of the namespace (the conflict queue is computed from them). */
  operations: readonly Operation[];
  /** Names of the Secrets / ServiceAccounts that exist, among those the template requires. */
  secrets: ReadonlySet<string>;
  serviceAccounts: ReadonlySet<string>;
  /** The maintenance window of the target's catalog application, if it has one. */
  applicationWindow?: MaintenanceWindow;
  /** Whether the engine's child kinds are served; unset = installed. */
  engine?: EngineFacts;
  /** The admission record and the access reviews of the stamped requester and approver (admitted.ts); unset = not checked. */
  admission?: AdmissionFacts;
  /**
   * A Restore with spec.source whose target does not exist: the instance as its backup recorded it (the
   * restore brings it back), or why there is none (restore-source.ts).
   */
  absentTarget?: { recorded?: ApplicationInstance; problem: string };
}

/** The target the preconditions and the engine judge: the instance, else the one a backup recorded. */
export function targetOf(
  facts: Pick<PreconditionFacts, 'target' | 'absentTarget'>,
): ApplicationInstance | undefined {
  return facts.target ?? facts.absentTarget?.recorded;
}

export type Resolved<T extends Template = Template> =
  | { ok: true; template: T; parameters: Record<string, unknown>; policy: EffectivePolicy }
  | { ok: false; reason: 'TemplateNotFound' | 'InvalidParameters'; message: string };

/** resolveRequest: Resolved, plus the parametersFrom outcome and a newly resolved status.inputs. */
export type Request<T extends Template = Template> =
  | (Extract<Resolved<T>, { ok: true }> & { inputs?: InputRecord[] })
  | { ok: false; reason: 'TemplateNotFound'; message: string }
  | { ok: false; reason: 'InvalidParameters'; message: string; template: T; inputs?: InputRecord[] }
  | { ok: false; reason: 'InputsUnavailable'; message: string; template: T }
  | { ok: false; reason: 'DependencyNotMet'; message: string; template: T };

export type PreconditionResult<T extends Template = Template> =
  | {
      outcome: 'rejected';
      precondition: 'Admission' | 'Template' | 'Inputs' | 'Parameters' | PreconditionName;
      reason:
        | 'NotAdmitted'
        | 'RequesterNotAuthorized'
        | 'TemplateNotFound'
        | 'InputsUnavailable'
        | 'InvalidParameters'
        | 'TargetNotFound'
        | 'TargetReleaseClaimed'
        | 'CapabilityMissing'
        | 'SelectorMismatch'
        | 'EngineNotInstalled'
        | 'RbacProfileMissing'
        | 'BackupNotFound';
      message: string;
      /** false: may be fixed by creating something; the controller waits its grace period first. */
      permanent: boolean;
      template?: T;
      /** status.inputs resolved by this evaluation, to record. */
      inputs?: InputRecord[];
    }
  | {
      outcome: 'blocked';
      precondition: 'Inputs' | PreconditionName;
      reason:
        | 'AwaitingApproval'
        | 'TargetGenerationMismatch'
        | 'TargetNotReady'
        | 'DependencyNotMet'
        | 'ConflictingOperation'
        | 'MissingSecret'
        | 'MissingServiceAccount'
        | 'OutsideMaintenanceWindow';
      message: string;
      template: T;
      inputs?: InputRecord[];
      queuePosition?: number;
      /** OutsideMaintenanceWindow: when it opens (requeue exactly then). */
      wakeAt?: Date;
    }
  | {
      outcome: 'satisfied';
      template: T;
      parameters: Record<string, unknown>;
      policy: EffectivePolicy;
      message: string;
      inputs?: InputRecord[];
    };

/**
 * Template resolution and parameters: spec.parameters merged with what status.inputs recorded (or
 * `inputs`). Needs no cluster facts; once parametersFrom is resolved, everything later reads this.
 */
export function resolveOperation<T extends Template>(
  op: Operation,
  templates: readonly T[],
  inputs: Record<string, unknown> = recordedParameters(op.status?.inputs),
): Resolved<T> {
  const res = resolveTemplateOf(op, templates);
  if (!res.ok) return res;
  return validated(op, res.template, inputs);
}

function resolveTemplateOf<T extends Template>(
  op: Operation,
  templates: readonly T[],
): { ok: true; template: T } | { ok: false; reason: 'TemplateNotFound'; message: string } {
  const res = resolveTemplate(templates, {
    type: op.spec.type,
    engine: op.spec.engine,
    ...(op.spec.template !== undefined ? { template: op.spec.template } : {}),
  });
  if (!res.ok) {
    return {
      ok: false,
      reason: 'TemplateNotFound',
      message: `${res.message}. Create a new Operation naming an existing template, or add the template to the catalog (this one is retried when the catalog changes and on the ops.vworkspace.io/reconcile annotation).`,
    };
  }
  return res;
}

function validated<T extends Template>(
  op: Operation,
  template: T,
  inputs: Record<string, unknown>,
): Resolved<T> {
  const merged =
    Object.keys(inputs).length > 0 ? { ...(op.spec.parameters ?? {}), ...inputs } : op.spec.parameters;
  // The webhook's bounds, first and without recursion: one stored past it (a 5,000-level object) must
  // end with a condition, not overflow the stack of schema validation on every reconcile.
  const limits = checkParametersLimits(merged ?? {});
  if (!limits.ok) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `spec.parameters: ${limits.message}. spec.parameters is immutable: create a new Operation with valid parameters.`,
    };
  }
  const params = validateParameters(template, merged);
  if (!params.ok) {
    const from =
      Object.keys(inputs).length > 0
        ? ' (with the parameters read through parametersFrom, see status.inputs)'
        : '';
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `${params.message}${from}. spec.parameters is immutable: create a new Operation with valid parameters.`,
    };
  }
  return {
    ok: true,
    template,
    parameters: params.parameters,
    policy: effectivePolicy(op.spec.type, op.spec.policy, template.defaults),
  };
}

/**
 * The whole request: template, then the parametersFrom sources (read from `operations`, resolved once:
 * a recorded status.inputs is reused), then the merged parameters. The controller's fact gathering and
 * evaluatePreconditions both call it, so they agree on the parameters.
 */
export function resolveRequest<T extends Template>(
  op: Operation,
  templates: readonly T[],
  operations: readonly Operation[],
  now: Date,
): Request<T> {
  const res = resolveTemplateOf(op, templates);
  if (!res.ok) return res;
  const template = res.template;
  const inputs = resolveInputs(op, template, operations, now);
  if (inputs.outcome === 'unavailable') {
    return { ok: false, reason: 'InputsUnavailable', message: inputs.message, template };
  }
  if (inputs.outcome === 'waiting') {
    return { ok: false, reason: 'DependencyNotMet', message: inputs.message, template };
  }
  const fresh = inputs.outcome === 'resolved' && inputs.fresh ? { inputs: inputs.records } : {};
  const r = validated(op, template, inputs.outcome === 'resolved' ? inputs.parameters : {});
  return r.ok ? { ...r, ...fresh } : { ...r, reason: 'InvalidParameters', template, ...fresh };
}

function isReady(target: ApplicationInstance): { ready: boolean; reason?: string; message?: string } {
  const c = target.status?.conditions?.find((x) => x.type === CONDITION_READY);
  return { ready: c?.status === 'True', ...(c ? { reason: c.reason, message: c.message } : {}) };
}

function listed(template: Template, name: PreconditionName): boolean {
  return template.preconditions.some((p) => p.name === name);
}

function fmt(d: Date): string {
  return d.toISOString().replace(/\.000Z$/, 'Z');
}

/** Why an Operation may not start in a maintenance window now, and when it will. */
function windowMessage(
  what: string,
  w: MaintenanceWindow,
  templateName: string,
  expectedMs: number,
  s: StartWindow,
  now: Date,
): string {
  const window = `the maintenance window of ${what} (${w.schedule}${w.timeZone ? ` ${w.timeZone}` : ''}, ${w.duration})`;
  const expected = formatGoDuration(expectedMs);
  const where = s.closesAt
    ? `only ${formatGoDuration(s.closesAt.getTime() - now.getTime())} is left in ${window} (it closes at ${fmt(s.closesAt)}) and template ${templateName} expects a run to take ${expected} (expectedDuration)`
    : `outside ${window}`;
  if (!s.wakeAt)
    return `${where}; none of its next ${START_SEARCH_LIMIT} windows is ${expected} long (template ${templateName}'s expectedDuration): lengthen the window or shorten expectedDuration in the catalog`;
  const which = expectedMs > 0 && !s.closesAt ? `a window with ${expected} of room (expectedDuration)` : 'it';
  return `${where}; starts automatically when ${which} opens at ${fmt(s.wakeAt)}`;
}

export function evaluatePreconditions<T extends Template>(
  op: Operation,
  templates: readonly T[],
  facts: PreconditionFacts,
): PreconditionResult<T> {
  // Nothing of an Operation the webhooks never admitted is believed (ADR 0029), so this comes first.
  if (facts.admission && !facts.admission.ok) {
    return {
      outcome: 'rejected',
      precondition: 'Admission',
      reason: 'NotAdmitted',
      message: notAdmittedMessage(op, facts.admission.message, facts.admission.keyUnknown === true),
      permanent: true,
    };
  }
  const resolved = resolveRequest(op, templates, facts.operations, facts.now);
  if (!resolved.ok) {
    const { reason, message } = resolved;
    const template = 'template' in resolved ? { template: resolved.template } : {};
    const inputs = 'inputs' in resolved && resolved.inputs ? { inputs: resolved.inputs } : {};
    if (reason === 'DependencyNotMet') {
      return { outcome: 'blocked', precondition: 'Inputs', reason, message, template: resolved.template };
    }
    const precondition =
      reason === 'TemplateNotFound' ? 'Template' : reason === 'InputsUnavailable' ? 'Inputs' : 'Parameters';
    return { outcome: 'rejected', precondition, reason, message, permanent: true, ...template, ...inputs };
  }
  const { template, parameters, policy } = resolved;
  const recorded = resolved.inputs ? { inputs: resolved.inputs } : {};
  const ns = op.metadata.namespace ?? '';
  const targetName = op.spec.targetRef.name;
  const reject = (
    precondition: PreconditionName,
    reason: Extract<PreconditionResult, { outcome: 'rejected' }>['reason'],
    message: string,
    permanent: boolean,
  ): PreconditionResult<T> => ({
    outcome: 'rejected',
    precondition,
    reason,
    message,
    permanent,
    template,
    ...recorded,
  });
  const block = (
    precondition: PreconditionName,
    reason: Extract<PreconditionResult, { outcome: 'blocked' }>['reason'],
    message: string,
    extra: { queuePosition?: number; wakeAt?: Date } = {},
  ): PreconditionResult<T> => ({
    outcome: 'blocked',
    precondition,
    reason,
    message,
    template,
    ...recorded,
    ...extra,
  });

  // TargetExists (or, for a Restore from spec.source, the instance its backup recorded)
  const target = targetOf(facts);
  const standIn = !facts.target;
  if (!target && op.spec.source && facts.absentTarget) {
    return reject('TargetExists', 'BackupNotFound', facts.absentTarget.problem, false);
  }
  if (!target) {
    return reject(
      'TargetExists',
      'TargetNotFound',
      `ApplicationInstance ${targetName} does not exist in namespace ${ns}; create it (the Operation starts when it appears) or create a new Operation naming an existing instance`,
      false,
    );
  }
  // TargetExists, as the instance its release belongs to: every engine acts on the release the target
  // names, so an instance naming another's release would hand its verbs over that release.
  if (facts.claimant) {
    const release = target.spec.release.name;
    return reject(
      'TargetExists',
      'TargetReleaseClaimed',
      `ApplicationInstance ${targetName} names Helm release ${release}, which ApplicationInstance ${facts.claimant.metadata.name} (created before it) describes; nothing runs on a release through an instance that does not describe it. Run the Operation on ${facts.claimant.metadata.name} if you may, or set ${targetName}'s spec.release.name to its own release and create a new Operation`,
      true,
    );
  }
  // CapabilityAdvertised, TemplateSelectors
  const match = matchTemplateTarget(template, {
    name: targetName,
    annotations: target.metadata.annotations ?? {},
    labels: target.metadata.labels ?? {},
  });
  if (!match.ok) {
    return reject(
      match.reason === 'CapabilityMissing' ? 'CapabilityAdvertised' : 'TemplateSelectors',
      match.reason,
      match.message,
      true,
    );
  }
  // EngineInstalled
  if (facts.engine && !facts.engine.installed) {
    return reject(
      'EngineInstalled',
      'EngineNotInstalled',
      engineNotInstalledMessage(op.spec.engine, facts.engine.missing),
      false,
    );
  }
  // RbacProfilePresent
  if (!facts.rbac.allowed) {
    const message =
      'unknownProfile' in facts.rbac
        ? `template ${template.name} names RBAC profile ${template.rbacProfile}, which this operator version does not know; fix the template's rbacProfile in the catalog`
        : `the operator lacks RBAC profile ${template.rbacProfile}: missing ${facts.rbac.missing
            .slice(0, 5)
            .map(describeAccess)
            .join(
              ', ',
            )}${facts.rbac.missing.length > 5 ? ', …' : ''}. Bind ClusterRole vworkspace-profile-${template.rbacProfile.replace(/\./g, '-').toLowerCase()} to the operator's ServiceAccount with a RoleBinding there (docs/security/rbac.md); the Operation starts once it is granted`;
    return reject('RbacProfilePresent', 'RbacProfileMissing', message, false);
  }
  // The requester still holds the type verb (admission checked it; the reconciler checks again).
  const refused = facts.admission?.ok ? requesterRefusal(op, facts.admission) : undefined;
  if (refused) return reject('ApprovalGiven', 'RequesterNotAuthorized', refused, true);
  // ApprovalGiven
  if (policy.requiresApproval && op.metadata.annotations?.[ANNOTATION_APPROVE] !== 'true') {
    return block(
      'ApprovalGiven',
      'AwaitingApproval',
      `policy.requiresApproval: waiting for approval; someone allowed to approve runs \`kubectl annotate operation ${op.metadata.name} -n ${ns} ${ANNOTATION_APPROVE}=true\` (or cancel it with spec.cancel: true)`,
    );
  }
  const approval =
    policy.requiresApproval && facts.admission?.ok
      ? approverRefusal(op, template, facts.admission)
      : undefined;
  if (approval) return reject('ApprovalGiven', 'RequesterNotAuthorized', approval, true);
  // TargetGenerationMatches, TargetReady: of an instance that exists (a stand-in has no status yet).
  if (!standIn && listed(template, 'TargetGenerationMatches')) {
    const gen = target.metadata.generation;
    const seen = target.status?.observedGeneration;
    if (gen !== undefined && seen !== gen) {
      return block(
        'TargetGenerationMatches',
        'TargetGenerationMismatch',
        `ApplicationInstance ${targetName}: status.observedGeneration ${seen ?? '(none)'} lags metadata.generation ${gen}: the operator has not read the release for its latest spec yet; waits until it has (template ${template.name} lists TargetGenerationMatches)`,
      );
    }
  }
  // TargetReady
  if (!standIn && policy.requireReady) {
    const r = isReady(target);
    if (!r.ready) {
      const why = r.reason
        ? `Ready is not True (${r.reason}${r.message ? `: ${r.message}` : ''})`
        : 'no Ready condition yet';
      return block(
        'TargetReady',
        'TargetNotReady',
        `ApplicationInstance ${targetName}: ${why}; waiting until it is Ready (fix the release, or set policy.requireReady: false on a new Operation to run anyway)`,
      );
    }
  }
  // DependenciesSucceeded
  const deps = checkDependencies(op, template, facts.operations, facts.now);
  if (!deps.ok) return block('DependenciesSucceeded', 'DependencyNotMet', deps.message);
  // NoConflictingOperation
  if (listed(template, 'NoConflictingOperation')) {
    const c = findConflicts(op, facts.operations);
    if (c.running.length > 0 || c.ahead.length > 0) {
      const parts = [
        c.running.length > 0 ? `running: ${c.running.join(', ')}` : '',
        c.ahead.length > 0 ? `queued ahead: ${c.ahead.join(', ')}` : '',
      ].filter(Boolean);
      return block(
        'NoConflictingOperation',
        'ConflictingOperation',
        `waits for conflicting Operations on ${targetName} (${parts.join('; ')}); position ${c.queuePosition} in the queue, starts automatically when they finish`,
        { queuePosition: c.queuePosition },
      );
    }
  }
  // RequiredSecretsPresent / RequiredServiceAccountPresent
  const required = requiredObjects(template, parameters);
  const missingSecrets = required.secrets.filter((s) => !facts.secrets.has(s));
  if (missingSecrets.length > 0) {
    return block(
      'RequiredSecretsPresent',
      'MissingSecret',
      `Secret ${missingSecrets.join(', ')} does not exist in namespace ${ns}; create it (the Operation starts when it appears)`,
    );
  }
  const missingSas = required.serviceAccounts.filter((s) => !facts.serviceAccounts.has(s));
  if (missingSas.length > 0) {
    return block(
      'RequiredServiceAccountPresent',
      'MissingServiceAccount',
      `ServiceAccount ${missingSas.join(', ')} does not exist in namespace ${ns}; create it and bind the runner's Role to it (the Operation starts when it appears)`,
    );
  }
  // MaintenanceWindow: the template's and the application's; each must be open, with room left for the
  // template's expectedDuration.
  const expected = template.expectedDuration ? parsePositiveDuration(template.expectedDuration) : undefined;
  const expectedMs = expected?.ok ? expected.ms : 0;
  for (const [what, w] of [
    [`template ${template.name}`, template.maintenanceWindow],
    ['the catalog application', facts.applicationWindow],
  ] as const) {
    if (!w) continue;
    const s = startWindow(w, facts.now, expectedMs);
    if (s.ok) continue;
    return block(
      'MaintenanceWindow',
      'OutsideMaintenanceWindow',
      windowMessage(what, w, template.name, expectedMs, s, facts.now),
      s.wakeAt ? { wakeAt: s.wakeAt } : {},
    );
  }
  return {
    outcome: 'satisfied',
    template,
    parameters,
    policy,
    message: `template ${template.name}: parameters valid, preconditions satisfied`,
    ...recorded,
  };
}
