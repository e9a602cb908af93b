// Admission of CronOperations and WatchOperations: pure decisions (request + facts → response).
//
// On CREATE, and on UPDATE when spec changed (metadata-only updates such as skip-next or finalizers pass):
//   1. CronOperation: spec.schedule (5 fields or a macro) and spec.timeZone (an IANA zone name)
//   2. spec.operationTemplate.spec: shape, template resolution, parameters (as for an Operation; a
//      parameter spec.parametersFromTrigger fills in is not required to be written in the template)
//   3. spec.parametersFromTrigger: each `from` is a variable of the kind or a field of an
//      ApplicationInstance, each `parameter` is declared by the template's inputSchema
//   4. CronOperation: the fixed target exists (a missing capability is only a warning: the catalog may
//      add it before the first run, and each created Operation is checked again)
//   5. the requester may <type lower-case> the target: the named instance for a CronOperation, every
//      ApplicationInstance of the namespace for a WatchOperation (it targets whichever one changes) and
//      a fleet CronOperation (spec.targetSelector). Without this, a CronOperation would let anyone run a
//      Restore through the operator's identity.
//   6. the parameters ask for nothing the template does not grant, judged for the requester (who is the
//      authority behind every Operation the scheduler creates)
//   6b. a drill's probeSecret: the requester may get that Secret, and no parametersFromTrigger fills it
//      in (probe-secret.ts, ADR 0057); a run-now requester needs the same get (the probe's output is theirs
//      to read)
//   7. CronOperation spec.retention: the policy at its fields, and the requester may delete those backups
//      themselves (create deletebackuprequests in Velero's namespace, delete volumesnapshots here): the
//      operator deletes them with its own identity (retention.ts, ADR 0053)
// On UPDATE that sets a new ops.vworkspace.io/run-now value, or sets ops.vworkspace.io/skip-next to
// "true", on a CronOperation, only 5 (and the template's parametersFrom reads) is checked: asking for a
// run now is running the template, and skipping a run changes what the schedule does as much as editing
// it, so each needs the same verb as creating that Operation would; the run-as grants were judged for
// the spec's editor (6). Resuming a halted fleet run (ops.vworkspace.io/resume) starts its remaining waves
// and is checked the same way; abandoning one (ops.vworkspace.io/abandon) stops runs as skip-next does, and
// is too; on a WatchOperation both are checked as its creation is (5: any instance). spec.rollout is checked with validateRolloutStrategy, each problem at its field. A run-now value longer than status.manualRun can record (256 characters) is
// refused at its annotation whenever it is set.

import {
  ANNOTATION_ABANDON,
  ANNOTATION_RESUME,
  ANNOTATION_RUN_NOW,
  ANNOTATION_SKIP_NEXT,
} from '../api/annotations.ts';
import { MAX_RUN_NOW_LENGTH } from '../api/cronoperation.ts';
import { matchTemplateTarget, type Template } from '../catalog/index.ts';
import { type RolloutStrategy, validateRolloutStrategy } from '../schedule/rollout.ts';
import { fromProblem, parameterProblem } from '../schedule/trigger-parameters.ts';
import { validateSchedule } from '../time/cron.ts';
import {
  annotationPath,
  annotationsOf,
  type Facts,
  invalid,
  isRecord,
  jsonEqual,
  type Needs,
  type Problem,
  respond,
} from './decision.ts';
import { sourceAccess } from './parameters-from.ts';
import { checkProbeSecret, probeSecretAccess } from './probe-secret.ts';
import { checkRetentionAccess, retentionAccess, retentionProblems } from './retention.ts';
import { type AdmissionRequest, type AdmissionResponse, allow } from './review.ts';
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
import { MUTATING_SCHEDULE_WEBHOOK, schedulerStamps, stampProblems } from './stamps.ts';

export type SchedulerKind = 'CronOperation' | 'WatchOperation';

const TEMPLATE_BASE = 'spec.operationTemplate.spec';

const specOf = (obj: unknown): unknown => (isRecord(obj) ? obj.spec : undefined);

function templateSpecOf(spec: unknown): unknown {
  const t = isRecord(spec) ? spec.operationTemplate : undefined;
  return isRecord(t) ? t.spec : undefined;
}

/** Metadata-only and status updates are not re-checked: they cannot change what runs. */
function needsCheck(req: AdmissionRequest): boolean {
  if (req.operation === 'CREATE') return true;
  if (req.operation !== 'UPDATE') return false;
  return !jsonEqual(specOf(req.oldObject), specOf(req.object));
}

/** A new, non-empty run-now value on a CronOperation (at CREATE, or changed by an UPDATE). */
function newRunNow(kind: SchedulerKind, req: AdmissionRequest): string | undefined {
  if (kind !== 'CronOperation') return undefined;
  const value = annotationsOf(req.object)[ANNOTATION_RUN_NOW];
  if (!value) return undefined;
  return req.operation === 'UPDATE' && value === annotationsOf(req.oldObject)[ANNOTATION_RUN_NOW]
    ? undefined
    : value;
}

/**
 * The control annotations an UPDATE of a CronOperation sets that need the type verb: a new run-now value
 * (a run now), skip-next becoming "true" (a run skipped).
 */
function controlRequests(kind: SchedulerKind, req: AdmissionRequest): string[] {
  if (req.operation !== 'UPDATE') return [];
  const changed = (key: string) => {
    const value = annotationsOf(req.object)[key];
    return value !== undefined && value !== '' && value !== annotationsOf(req.oldObject)[key];
  };
  // A WatchOperation's rolled-out change (ADR 0056) is resumed and abandoned the same way.
  if (kind === 'WatchOperation') return [ANNOTATION_RESUME, ANNOTATION_ABANDON].filter(changed);
  const skip = (o: unknown) => annotationsOf(o)[ANNOTATION_SKIP_NEXT] === 'true';
  return [
    ...(newRunNow(kind, req) !== undefined ? [ANNOTATION_RUN_NOW] : []),
    ...(skip(req.object) && !skip(req.oldObject) ? [ANNOTATION_SKIP_NEXT] : []),
    ...[ANNOTATION_RESUME, ANNOTATION_ABANDON].filter(changed),
  ];
}

/** A run-now value status.manualRun cannot record, refused at its annotation. */
function checkRunNowLength(kind: SchedulerKind, req: AdmissionRequest): Problem[] {
  const value = newRunNow(kind, req);
  if (value === undefined || value.length <= MAX_RUN_NOW_LENGTH) return [];
  return [
    invalid(
      annotationPath(ANNOTATION_RUN_NOW),
      `Too long: may not be longer than ${MAX_RUN_NOW_LENGTH} characters (got ${value.length}); use a short value such as a timestamp ($(date -u +%FT%TZ))`,
      'FieldValueTooLong',
    ),
  ];
}

/** A CronOperation that targets a fleet (spec.targetSelector) instead of one instance. */
function isFleet(kind: SchedulerKind, spec: unknown): boolean {
  return kind === 'CronOperation' && isRecord(spec) && spec.targetSelector !== undefined;
}

export function schedulerNeeds(
  kind: SchedulerKind,
  req: AdmissionRequest,
  facts?: Pick<Facts, 'templates' | 'veleroNamespace'>,
): Needs {
  const needs = typeAndTargetNeeds(kind, req, facts);
  // 7. spec.retention: the requester may delete what the operator will delete for them (retention.ts).
  if (kind !== 'CronOperation' || !needsCheck(req)) return needs;
  return { ...needs, access: [...needs.access, ...retentionAccess(specOf(req.object), facts ?? {})] };
}

function typeAndTargetNeeds(
  kind: SchedulerKind,
  req: AdmissionRequest,
  templates?: Pick<Facts, 'templates'>,
): Needs {
  const runNowOnly = !needsCheck(req) && controlRequests(kind, req).length > 0;
  if (!needsCheck(req) && !runNowOnly) return { access: [] };
  const spec = specOf(req.object);
  const fixed = kind === 'CronOperation' && !isFleet(kind, spec);
  const { view } = readOperationSpec(templateSpecOf(spec), TEMPLATE_BASE, { target: fixed });
  const sa = requestedServiceAccount(view);
  // A run-now request runs the spec as judged for its editor; only the type verb is the requester's (5).
  const runAs = sa === undefined || runNowOnly ? [] : runAsChecks(sa);
  if (!view.type) return { access: runAs };
  // A template's parametersFrom default (a Restore without backupName) reads Operations: list access.
  // A drill's probe Secret is read by whoever runs the template, a run-now requester too (probe-secret.ts).
  const { template } = templates ? checkTemplate(view, TEMPLATE_BASE, templates) : {};
  const sources = [
    ...(template ? sourceAccess(view, template, TEMPLATE_BASE) : []),
    ...probeSecretAccess(view, TEMPLATE_BASE),
  ].map((a) => a.check);
  if (!fixed) return { access: [{ verb: typeVerb(view.type) }, ...sources, ...runAs] };
  if (view.targetName === undefined) return { access: [...sources, ...runAs] };
  return {
    // A run-now request only needs the requester's access, not the target read again.
    ...(runNowOnly ? {} : { target: view.targetName }),
    access: [{ verb: typeVerb(view.type), name: view.targetName }, ...sources, ...runAs],
  };
}

export function decideScheduler(kind: SchedulerKind, req: AdmissionRequest, facts: Facts): AdmissionResponse {
  // Who wrote the spec and who asked for a run are the mutating webhook's stamps (stamps.ts).
  const stamped =
    req.operation === 'CREATE' || req.operation === 'UPDATE'
      ? stampProblems(schedulerStamps(kind, req), MUTATING_SCHEDULE_WEBHOOK)
      : [];
  if (stamped.length > 0) return respond(req.uid, stamped);
  if (!needsCheck(req)) {
    const controls = controlRequests(kind, req);
    const tooLong = checkRunNowLength(kind, req);
    if (controls.length === 0 && tooLong.length === 0) return allow(req.uid);
    return respond(req.uid, [...tooLong, ...controlAccess(kind, req, facts, controls)]);
  }
  const namespace = req.namespace ?? '';
  const problems: Problem[] = [...checkRunNowLength(kind, req)];
  const warnings: string[] = [];
  const spec = specOf(req.object);
  if (!isRecord(spec)) {
    return respond(req.uid, [invalid('spec', 'must be an object with operationTemplate')]);
  }
  if (kind === 'CronOperation')
    problems.push(...checkSchedule(spec), ...checkRollout(spec), ...retentionProblems(spec));
  else problems.push(...checkRollout(spec, kind));

  const op = spec.operationTemplate;
  if (!isRecord(op) || !isRecord(op.spec)) {
    problems.push(
      invalid(
        isRecord(op) ? TEMPLATE_BASE : 'spec.operationTemplate',
        'Required value: set the Operation to create (operationTemplate.spec with type, engine and parameters)',
        'FieldValueRequired',
      ),
    );
    return respond(req.uid, problems);
  }
  const fleet = isFleet(kind, spec);
  const fixed = kind === 'CronOperation' && !fleet;
  const { view, problems: shape } = readOperationSpec(op.spec, TEMPLATE_BASE, { target: fixed });
  problems.push(...shape);
  if (fleet && op.spec.targetRef !== undefined)
    problems.push(
      invalid(
        `${TEMPLATE_BASE}.targetRef`,
        'Forbidden: spec.targetSelector picks the targets of every run; remove targetRef, or remove targetSelector to target one instance',
        'FieldValueForbidden',
      ),
    );
  const { template, problems: tp } = checkTemplate(view, TEMPLATE_BASE, facts);
  problems.push(...tp);
  const subs = readSubstitutions(spec.parametersFromTrigger, problems);
  for (const [i, s] of subs.entries()) {
    const why = fromProblem(kind, s.from);
    if (why) problems.push(invalid(`spec.parametersFromTrigger[${i}].from`, `Invalid value: ${why}`));
  }
  if (template) {
    const filled = subs.map((s) => `${TEMPLATE_BASE}.parameters.${s.parameter}`);
    problems.push(
      ...checkParameters(view, template, TEMPLATE_BASE).filter(
        (p) =>
          !filled.some((f) => p.field === f || p.field.startsWith(`${f}.`) || p.field.startsWith(`${f}[`)),
      ),
    );
    problems.push(...checkPolicyFloor(view, template, TEMPLATE_BASE));
    problems.push(...checkSubstitutedParameters(subs, template));
    const user = req.userInfo?.username ?? '';
    problems.push(...checkGrants(view, template, TEMPLATE_BASE, user, namespace, facts));
    for (const a of sourceAccess(view, template, TEMPLATE_BASE)) {
      problems.push(
        ...checkAccess(a.check, user, namespace, a.field, `the ${kind}'s Operations ${a.why}`, facts),
      );
    }
  }

  if (fixed) {
    problems.push(...checkTarget(view, template, namespace, TEMPLATE_BASE, facts, { selectors: false }));
    const target = facts.target;
    if (template && view.targetName !== undefined && target?.ok && target.value) {
      const m = matchTemplateTarget(template, { ...target.value, name: view.targetName });
      if (!m.ok) warnings.push(`${m.message}; every scheduled Operation will be refused until this changes`);
    }
  }
  problems.push(
    ...checkProbeSecret(
      view,
      TEMPLATE_BASE,
      req.userInfo?.username ?? '',
      namespace,
      facts,
      subs.map((s) => s.parameter),
    ),
  );
  problems.push(...schedulerAccess(kind, req, view.type, fixed ? view.targetName : undefined, !fixed, facts));
  if (kind === 'CronOperation')
    problems.push(...checkRetentionAccess(spec, req.userInfo?.username ?? '', namespace, facts));
  return respond(req.uid, problems, warnings);
}

/** The type verb on the target (fixed) or on every instance of the namespace (WatchOperation, fleet). */
function schedulerAccess(
  kind: SchedulerKind,
  req: AdmissionRequest,
  type: OperationSpecView['type'],
  name: string | undefined,
  anyInstance: boolean,
  facts: Facts,
): Problem[] {
  if (!type || (!anyInstance && name === undefined)) return [];
  const what = anyInstance
    ? `a ${kind} running ${type} on any ${kind === 'WatchOperation' ? 'watched' : 'matching'} ApplicationInstance`
    : `a CronOperation running ${type} on ${name}`;
  return checkAccess(
    { verb: typeVerb(type), ...(name !== undefined && !anyInstance ? { name } : {}) },
    req.userInfo?.username ?? '',
    req.namespace ?? '',
    anyInstance ? `${TEMPLATE_BASE}.type` : `${TEMPLATE_BASE}.targetRef.name`,
    what,
    facts,
  );
}

const CONTROL_WHY: Record<string, string> = {
  [ANNOTATION_RUN_NOW]: 'runs the template now',
  [ANNOTATION_SKIP_NEXT]: "skips the schedule's next run, which is editing the schedule",
  [ANNOTATION_RESUME]: 'starts the remaining waves of the halted fleet run',
  [ANNOTATION_ABANDON]: 'ends the fleet run, which is editing what the scheduler does',
};

/**
 * A run-now or skip-next request: the requester must be allowed to run the template's type on its
 * targets, as editing the CronOperation would need. Each problem is reported at each annotation set.
 */
function controlAccess(
  kind: SchedulerKind,
  req: AdmissionRequest,
  facts: Facts,
  keys: readonly string[],
): Problem[] {
  const spec = specOf(req.object);
  // A WatchOperation runs on whichever instance changes: any instance, as when it is created (5).
  const fleet = kind === 'WatchOperation' || isFleet(kind, spec);
  const { view } = readOperationSpec(templateSpecOf(spec), TEMPLATE_BASE, { target: !fleet });
  const { template } = checkTemplate(view, TEMPLATE_BASE, facts);
  const sources = [
    ...(template ? sourceAccess(view, template, TEMPLATE_BASE) : []),
    ...probeSecretAccess(view, TEMPLATE_BASE),
  ];
  const user = req.userInfo?.username ?? '';
  const problems = [
    ...schedulerAccess(kind, req, view.type, view.targetName, fleet, facts),
    ...sources.flatMap((a) =>
      checkAccess(a.check, user, req.namespace ?? '', a.field, `the ${kind}'s Operations ${a.why}`, facts),
    ),
  ];
  return keys.flatMap((key) =>
    problems.map((p) => ({
      ...p,
      field: annotationPath(key),
      message: `${p.message} (${key} ${CONTROL_WHY[key]}, which needs the same permission)`,
    })),
  );
}

interface Substitution {
  parameter: string;
  from: string;
}

/** spec.parametersFromTrigger as a list of {parameter, from}; a malformed entry is a problem. */
function readSubstitutions(v: unknown, problems: Problem[]): Substitution[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    problems.push(
      invalid('spec.parametersFromTrigger', 'Invalid value: must be a list of {parameter, from}'),
    );
    return [];
  }
  const out: Substitution[] = [];
  v.forEach((e, i) => {
    if (isRecord(e) && typeof e.parameter === 'string' && typeof e.from === 'string')
      out.push({ parameter: e.parameter, from: e.from });
    else
      problems.push(
        invalid(`spec.parametersFromTrigger[${i}]`, 'Invalid value: set parameter and from, both strings'),
      );
  });
  return out;
}

function checkSubstitutedParameters(subs: readonly Substitution[], template: Template): Problem[] {
  const problems: Problem[] = [];
  subs.forEach((s, i) => {
    const why = parameterProblem(template.inputSchema, s.parameter, template.name);
    if (why) problems.push(invalid(`spec.parametersFromTrigger[${i}].parameter`, `Invalid value: ${why}`));
  });
  return problems;
}

function checkSchedule(spec: Record<string, unknown>): Problem[] {
  const problems: Problem[] = [];
  let zone: string | undefined;
  if (spec.timeZone !== undefined) {
    if (typeof spec.timeZone === 'string') zone = spec.timeZone;
    else
      problems.push(
        invalid('spec.timeZone', 'Invalid value: must be an IANA time zone name such as Europe/Berlin'),
      );
  }
  if (typeof spec.schedule !== 'string') {
    problems.push(
      invalid(
        'spec.schedule',
        spec.schedule === undefined
          ? 'Required value: set five cron fields (minute hour day-of-month month day-of-week) or a macro such as @daily'
          : 'Invalid value: must be a string of five cron fields or a macro such as @daily',
        spec.schedule === undefined ? 'FieldValueRequired' : 'FieldValueInvalid',
      ),
    );
    return problems;
  }
  if (problems.length > 0) return problems;
  const v = validateSchedule(spec.schedule, zone);
  if (!v.ok) {
    problems.push(invalid(`spec.${v.field}`, `Invalid value: ${v.message}`));
  }
  return problems;
}

/** spec.rollout: each problem of validateRolloutStrategy at its field. */
function checkRollout(spec: Record<string, unknown>, kind: SchedulerKind = 'CronOperation'): Problem[] {
  const r = spec.rollout;
  if (r === undefined) return [];
  // A WatchOperation's fleet is its selector (all instances when unset).
  if (kind === 'CronOperation' && spec.targetSelector === undefined)
    return [
      invalid(
        'spec.rollout',
        'Forbidden: rollout splits a fleet run into waves: set spec.targetSelector, or remove spec.rollout',
        'FieldValueForbidden',
      ),
    ];
  const countOrPercent = (v: unknown) => typeof v === 'number' || typeof v === 'string';
  if (
    !isRecord(r) ||
    !Array.isArray(r.waves) ||
    !r.waves.every(countOrPercent) ||
    (r.failureBudget !== undefined && !countOrPercent(r.failureBudget)) ||
    (r.pauseBetweenWaves !== undefined && typeof r.pauseBetweenWaves !== 'string')
  )
    return [
      invalid(
        'spec.rollout',
        'Invalid value: set waves (a list of counts or percentages), and optionally failureBudget (a count or a percentage) and pauseBetweenWaves (a duration such as 10m)',
      ),
    ];
  return validateRolloutStrategy(r as unknown as RolloutStrategy).map((p) => {
    const at = p.indexOf(': ');
    return invalid(p.slice(0, at), `Invalid value: ${p.slice(at + 2)}`);
  });
}
