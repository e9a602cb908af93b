// Admission of CronOperations and WatchOperations: pure decisions (request + facts → response).
//
// On CREATE, and on UPDATE when spec changed (metadata-only updates such as skip-next or finalizers pass):
//   1. CronOperation: spec.schedule (5 fields or a macro) and spec.timeZone (an IANA zone name)
//   2. spec.operationTemplate.spec: shape, template resolution, parameters (as for an Operation)
//   3. CronOperation: the fixed target exists (a missing capability is only a warning: the catalog may
//      add it before the first run, and each created Operation is checked again)
//   4. the requester may <type lower-case> the target: the named instance for a CronOperation, every
//      ApplicationInstance of the namespace for a WatchOperation (it targets whichever one changes).
//      Without this, a CronOperation would let anyone run a Restore through the operator's identity.
//   5. the parameters ask for nothing the template does not grant, judged for the requester (who is the
//      authority behind every Operation the scheduler creates)

import { matchTemplateTarget } from '../catalog/index.ts';
import { validateSchedule } from '../schedule/cron.ts';
import { type Facts, invalid, isRecord, jsonEqual, type Needs, type Problem, respond } from './decision.ts';
import { sourceAccess } from './parameters-from.ts';
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

export function schedulerNeeds(
  kind: SchedulerKind,
  req: AdmissionRequest,
  templates?: Pick<Facts, 'templates'>,
): Needs {
  if (!needsCheck(req)) return { access: [] };
  const { view } = readOperationSpec(templateSpecOf(specOf(req.object)), TEMPLATE_BASE, {
    target: kind === 'CronOperation',
  });
  const sa = requestedServiceAccount(view);
  const runAs = sa === undefined ? [] : runAsChecks(sa);
  if (!view.type) return { access: runAs };
  // A template's parametersFrom default (a Restore without backupName) reads Operations: list access.
  const { template } = templates ? checkTemplate(view, TEMPLATE_BASE, templates) : {};
  const sources = template ? sourceAccess(view, template, TEMPLATE_BASE).map((a) => a.check) : [];
  if (kind === 'WatchOperation') return { access: [{ verb: typeVerb(view.type) }, ...sources, ...runAs] };
  if (view.targetName === undefined) return { access: [...sources, ...runAs] };
  return {
    target: view.targetName,
    access: [{ verb: typeVerb(view.type), name: view.targetName }, ...sources, ...runAs],
  };
}

export function decideScheduler(kind: SchedulerKind, req: AdmissionRequest, facts: Facts): AdmissionResponse {
  if (!needsCheck(req)) return allow(req.uid);
  const namespace = req.namespace ?? '';
  const problems: Problem[] = [];
  const warnings: string[] = [];
  const spec = specOf(req.object);
  if (!isRecord(spec)) {
    return respond(req.uid, [invalid('spec', 'must be an object with operationTemplate')]);
  }
  if (kind === 'CronOperation') problems.push(...checkSchedule(spec));

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
  const { view, problems: shape } = readOperationSpec(op.spec, TEMPLATE_BASE, {
    target: kind === 'CronOperation',
  });
  problems.push(...shape);
  const { template, problems: tp } = checkTemplate(view, TEMPLATE_BASE, facts);
  problems.push(...tp);
  if (template) {
    problems.push(...checkParameters(view, template, TEMPLATE_BASE));
    problems.push(...checkPolicyFloor(view, template, TEMPLATE_BASE));
    const user = req.userInfo?.username ?? '';
    problems.push(...checkGrants(view, template, TEMPLATE_BASE, user, namespace, facts));
    for (const a of sourceAccess(view, template, TEMPLATE_BASE)) {
      problems.push(
        ...checkAccess(a.check, user, namespace, a.field, `the ${kind}'s Operations ${a.why}`, facts),
      );
    }
  }

  if (kind === 'CronOperation') {
    problems.push(...checkTarget(view, template, namespace, TEMPLATE_BASE, facts, { selectors: false }));
    const target = facts.target;
    if (template && view.targetName !== undefined && target?.ok && target.value) {
      const m = matchTemplateTarget(template, { ...target.value, name: view.targetName });
      if (!m.ok) warnings.push(`${m.message}; every scheduled Operation will be refused until this changes`);
    }
  }
  if (view.type) {
    const name = kind === 'CronOperation' ? view.targetName : undefined;
    if (kind === 'WatchOperation' || name !== undefined) {
      problems.push(
        ...checkAccess(
          { verb: typeVerb(view.type), ...(name !== undefined ? { name } : {}) },
          req.userInfo?.username ?? '',
          namespace,
          kind === 'CronOperation' ? `${TEMPLATE_BASE}.targetRef.name` : `${TEMPLATE_BASE}.type`,
          kind === 'CronOperation'
            ? `a CronOperation running ${view.type} on ${name}`
            : `a WatchOperation running ${view.type} on any watched ApplicationInstance`,
          facts,
        ),
      );
    }
  }
  return respond(req.uid, problems, warnings);
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
