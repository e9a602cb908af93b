// Checks shared by Operation and the operationTemplate of CronOperation / WatchOperation: the spec's
// shape, template resolution, parameters against the template's inputSchema, the target and the
// requester's access to it. Each returns problems with Kubernetes field paths under `base`
// (`spec` for an Operation, `spec.operationTemplate.spec` for the schedulers). Pure.

import {
  ENGINE_TYPES,
  ENGINES,
  type Engine,
  engineSupportsType,
  OPERATION_TYPES,
  type OperationType,
  typeAccessVerb,
} from '../api/enums.ts';
import { DNS1123_LABEL } from '../api/schema-helpers.ts';
import {
  checkParametersLimits,
  formatFieldError,
  grantDenials,
  matchTemplateTarget,
  parameterSources,
  policyLoosening,
  resolveTemplate,
  SchemaError,
  suppliedParameters,
  type Template,
  validateParameters,
  validateWithSchema,
  withoutRequired,
} from '../catalog/index.ts';
import {
  type AccessCheck,
  accessKey,
  type Facts,
  forbidden,
  invalid,
  isRecord,
  type Problem,
  retry,
} from './decision.ts';
import { readParametersFrom } from './parameters-from.ts';
import { accessResource } from './sar.ts';
import type { OperationSpecView } from './spec-view.ts';

const dnsLabel = new RegExp(DNS1123_LABEL);

const quote = (v: unknown) => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

/** Narrows `spec`; every field that is not what the API says becomes a problem at its path. */
export function readOperationSpec(
  spec: unknown,
  base: string,
  opts: { target: boolean; parametersFrom?: boolean },
): { view: OperationSpecView; problems: Problem[] } {
  const view: OperationSpecView = {};
  const problems: Problem[] = [];
  if (!isRecord(spec)) {
    problems.push(
      invalid(base, `must be an object with type, engine${opts.target ? ', targetRef' : ''} and parameters`),
    );
    return { view, problems };
  }
  if (typeof spec.type === 'string' && (OPERATION_TYPES as readonly string[]).includes(spec.type)) {
    view.type = spec.type as OperationType;
  } else {
    problems.push(
      invalid(
        `${base}.type`,
        spec.type === undefined
          ? `Required value: set the day-2 action, one of ${OPERATION_TYPES.join(', ')}`
          : `Unsupported value: ${quote(spec.type)}: supported values: ${OPERATION_TYPES.join(', ')}`,
        spec.type === undefined ? 'FieldValueRequired' : 'FieldValueNotSupported',
      ),
    );
  }
  if (typeof spec.engine === 'string' && (ENGINES as readonly string[]).includes(spec.engine)) {
    view.engine = spec.engine as Engine;
  } else {
    problems.push(
      invalid(
        `${base}.engine`,
        spec.engine === undefined
          ? `Required value: set the engine, one of ${ENGINES.join(', ')}`
          : `Unsupported value: ${quote(spec.engine)}: supported values: ${ENGINES.join(', ')}`,
        spec.engine === undefined ? 'FieldValueRequired' : 'FieldValueNotSupported',
      ),
    );
  }
  if (view.type && view.engine && !engineSupportsType(view.engine, view.type)) {
    problems.push(
      invalid(
        `${base}.engine`,
        `engine ${view.engine} cannot run ${view.type}; it runs ${ENGINE_TYPES[view.engine].join(', ')}: choose another engine or type`,
      ),
    );
    delete view.engine;
  }
  if (opts.target) {
    const ref = spec.targetRef;
    const name = isRecord(ref) ? ref.name : undefined;
    if (typeof name === 'string' && name.length <= 63 && dnsLabel.test(name)) {
      view.targetName = name;
    } else {
      problems.push(
        invalid(
          `${base}.targetRef.name`,
          name === undefined
            ? 'Required value: set the name of the ApplicationInstance to operate on (in this namespace)'
            : `Invalid value: ${quote(name)}: must be a DNS label, the name of an ApplicationInstance in this namespace`,
          name === undefined ? 'FieldValueRequired' : 'FieldValueInvalid',
        ),
      );
    }
    if (isRecord(ref) && ref.namespace !== undefined) {
      problems.push(
        invalid(
          `${base}.targetRef.namespace`,
          'Forbidden: targets are same-namespace only: the target is the ApplicationInstance spec.targetRef.name in the namespace of the Operation; remove spec.targetRef.namespace and create the Operation in the namespace of the ApplicationInstance',
          'FieldValueForbidden',
        ),
      );
    }
  }
  if (spec.template !== undefined) {
    if (typeof spec.template === 'string' && spec.template.length <= 63 && dnsLabel.test(spec.template)) {
      view.template = spec.template;
    } else {
      problems.push(
        invalid(
          `${base}.template`,
          `Invalid value: ${quote(spec.template)}: must be the name of a template (a DNS label), or left out to use the template for type and engine`,
        ),
      );
    }
  }
  if (spec.parameters !== undefined) {
    if (isRecord(spec.parameters)) view.parameters = spec.parameters;
    else
      problems.push(invalid(`${base}.parameters`, 'Invalid value: must be an object (the template input)'));
  }
  if (opts.parametersFrom && spec.parametersFrom !== undefined) {
    const r = readParametersFrom(spec.parametersFrom, `${base}.parametersFrom`);
    problems.push(...r.problems);
    if (r.sources) view.parametersFrom = r.sources;
  }
  if (opts.parametersFrom && spec.source !== undefined) {
    const ns = isRecord(spec.source) ? spec.source.namespace : undefined;
    if (typeof ns === 'string' && ns.length <= 63 && dnsLabel.test(ns)) view.source = { namespace: ns };
    else
      problems.push(
        invalid(
          `${base}.source.namespace`,
          `Invalid value: ${quote(ns)}: must be the name of the namespace whose backups to restore (a DNS label)`,
        ),
      );
  }
  if (isRecord(spec.policy)) view.policy = spec.policy;
  else if (spec.policy !== undefined) {
    problems.push(invalid(`${base}.policy`, 'Invalid value: must be an object'));
  }
  return { view, problems };
}

/** The template the spec runs, or the problem saying why there is none. */
export function checkTemplate(
  view: OperationSpecView,
  base: string,
  facts: Pick<Facts, 'templates'>,
): { template?: Template; problems: Problem[] } {
  if (!view.type || !view.engine) return { problems: [] };
  if (!facts.templates.ok) {
    return {
      problems: [
        retry(
          view.template !== undefined ? `${base}.template` : `${base}.engine`,
          `the template catalog is not loaded yet (${facts.templates.message})`,
        ),
      ],
    };
  }
  const r = resolveTemplate(facts.templates.value, {
    type: view.type,
    engine: view.engine,
    ...(view.template !== undefined ? { template: view.template } : {}),
  });
  if (!r.ok) {
    const field = view.template !== undefined ? `${base}.template` : `${base}.engine`;
    return { problems: [invalid(field, r.message, 'FieldValueNotFound')] };
  }
  return { template: r.template, problems: [] };
}

/**
 * spec.parameters against the template's inputSchema (defaults applied to a copy; nothing is written
 * back). Parameters that parametersFrom (the Operation's or the template's defaults) will supply are not
 * required here; the reconciler validates the merged parameters when it resolves them.
 */
export function checkParameters(view: OperationSpecView, template: Template, base: string): Problem[] {
  // Depth and size first: schema validation recurses once per level of nesting.
  const limits = checkParametersLimits(view.parameters ?? {});
  if (!limits.ok) return [invalid(`${base}.parameters`, limits.message)];
  try {
    const schema = withoutRequired(
      template.inputSchema,
      suppliedParameters(parameterSources(view, template)),
    );
    const r = validateWithSchema(schema, view.parameters ?? {}, `${base}.parameters`);
    if (r.ok) return [];
    return r.errors.map((e) =>
      invalid(
        e.field,
        `${formatFieldError(e).slice(e.field.length + 2)} (template ${template.name})`,
        e.type === 'Required value' ? 'FieldValueRequired' : 'FieldValueInvalid',
      ),
    );
  } catch (err) {
    // The catalog loader refuses uncompilable schemas, so this is a bug, but never a crash.
    const why = err instanceof SchemaError ? err.message : String(err);
    return [
      invalid(
        `${base}.template`,
        `template ${template.name} has an unusable inputSchema (${why}); fix the catalog entry or choose another template`,
      ),
    ];
  }
}

/** The template's policy is a floor: a loosening is refused at its field under `<base>.policy`. */
export function checkPolicyFloor(view: OperationSpecView, template: Template, base: string): Problem[] {
  return policyLoosening(view.policy, template).map((l) => forbidden(`${base}.policy.${l.field}`, l.message));
}

/** The target exists (read with the operator's identity), advertises the capability and matches the selectors. */
export function checkTarget(
  view: OperationSpecView,
  template: Template | undefined,
  namespace: string,
  base: string,
  facts: Pick<Facts, 'target'>,
  opts: { selectors: boolean },
): Problem[] {
  if (view.targetName === undefined) return [];
  const field = `${base}.targetRef.name`;
  const target = facts.target;
  if (!target) return [retry(field, `ApplicationInstance ${view.targetName} was not looked up`)];
  if (!target.ok) {
    return [
      retry(field, `could not read ApplicationInstance ${namespace}/${view.targetName}: ${target.message}`),
    ];
  }
  // A Restore from spec.source brings its instance back: its absence is what it is for.
  if (target.value === undefined && view.source) return [];
  if (target.value === undefined) {
    return [
      invalid(
        field,
        `Not found: ApplicationInstance ${view.targetName} does not exist in namespace ${namespace}; create it first or name an existing one (kubectl get applicationinstances -n ${namespace})`,
        'FieldValueNotFound',
      ),
    ];
  }
  if (!template || !opts.selectors) return [];
  const m = matchTemplateTarget(template, { ...target.value, name: view.targetName });
  return m.ok ? [] : [invalid(field, `${m.reason}: ${m.message}`)];
}

/** The SubjectAccessReview verb for an Operation type: its name in lower case (Verify: restore). */
export function typeVerb(type: OperationType): string {
  return typeAccessVerb(type);
}

/** The requester passed the SubjectAccessReview `check`, or the problem saying what they lack. */
export function checkAccess(
  check: AccessCheck,
  user: string,
  namespace: string,
  field: string,
  why: string,
  facts: Pick<Facts, 'access'>,
): Problem[] {
  const r = facts.access[accessKey(check)];
  const what = accessResource(check);
  const resource = `${what.group ? `${what.resource}.${what.group}` : what.resource}${check.name ? `/${check.name}` : ''}`;
  const where = check.namespace ?? namespace;
  if (!r || !r.ok) {
    return [
      retry(
        field,
        `could not check whether ${user} may ${check.verb} ${resource} in ${where}${r && !r.ok ? `: ${r.message}` : ''}`,
      ),
    ];
  }
  if (r.value.allowed) return [];
  // The engine's own kinds (spec.retention) are not about an instance or an Operation.
  const engineKind =
    check.resource === 'deletebackuprequests' ||
    check.resource === 'volumesnapshots' ||
    check.resource === 'secrets';
  const kind = check.resource === 'operations' ? 'Operation' : 'ApplicationInstance';
  const target = engineKind ? '' : ` for ${check.name ? `the ${kind} ${check.name}` : `every ${kind}`}`;
  return [
    forbidden(
      field,
      `Forbidden: user "${user}" may not ${check.verb} ${resource} in namespace ${where}; ${why} needs RBAC verb "${check.verb}" on resource ${what.resource} (group ${what.group || 'core'})${target}: ask ${engineKind && check.namespace ? `an admin of namespace ${where}` : 'the namespace admin'} for a Role and RoleBinding granting it${r.value.reason ? ` (${r.value.reason})` : ''}`,
    ),
  ];
}

/**
 * The SubjectAccessReviews that show a requester could run pods as `serviceAccount` themselves: in
 * Kubernetes whoever may create pods in a namespace may run them as any of its ServiceAccounts, and
 * impersonating the ServiceAccount is the same power.
 */
export function runAsChecks(serviceAccount: string): AccessCheck[] {
  return [
    { verb: 'create', resource: 'pods' },
    { verb: 'impersonate', resource: 'serviceaccounts', name: serviceAccount },
  ];
}

/** The ServiceAccount the requester named in spec.parameters, if any (defaults are the template's choice). */
export function requestedServiceAccount(view: OperationSpecView): string | undefined {
  const sa = view.parameters?.serviceAccountName;
  return typeof sa === 'string' ? sa : undefined;
}

/**
 * What the parameters ask for beyond the template's grants (catalog/grants.ts), each refused at its field
 * under `<base>.parameters`. A ServiceAccount outside the template's list is admitted from a requester
 * who could run pods as it anyway (runAsChecks).
 */
export function checkGrants(
  view: OperationSpecView,
  template: Template,
  base: string,
  user: string,
  namespace: string,
  facts: Pick<Facts, 'access'>,
): Problem[] {
  // Parameters too deep or large, or invalid, are checkParameters' to report; judge only valid ones.
  if (!checkParametersLimits(view.parameters ?? {}).ok) return [];
  let params: ReturnType<typeof validateParameters>;
  try {
    params = validateParameters(template, view.parameters);
  } catch {
    return [];
  }
  if (!params.ok) return [];
  const requested = requestedServiceAccount(view);
  const problems: Problem[] = [];
  for (const d of grantDenials(template, params.parameters)) {
    const field = `${base}.parameters.${d.parameter}`;
    if (d.serviceAccount === undefined || d.serviceAccount !== requested) {
      problems.push(forbidden(field, `Forbidden: ${d.message}`));
      continue;
    }
    const results = runAsChecks(d.serviceAccount).map((c) => facts.access[accessKey(c)]);
    if (results.some((r) => r?.ok && r.value.allowed)) continue;
    if (results.some((r) => !r?.ok)) {
      problems.push(
        retry(field, `could not check whether ${user} may run pods as ServiceAccount ${d.serviceAccount}`),
      );
      continue;
    }
    problems.push(
      forbidden(
        field,
        `Forbidden: ${d.message}. A requester who may run pods as it themselves may name it: user "${user}" may neither create pods nor impersonate serviceaccounts/${d.serviceAccount} in namespace ${namespace}`,
      ),
    );
  }
  return problems;
}
