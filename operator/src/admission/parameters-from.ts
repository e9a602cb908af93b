// Admission of spec.parametersFrom and of the template's parametersFrom defaults an Operation falls back
// on. Pure. Refused at their field path:
//   - a shape the API does not allow (exactly one of operationRef / latest, outputs, names);
//   - a parameter the template's inputSchema does not know, set twice, or also set in spec.parameters;
//   - an output no candidate template declares (its outputSchema), and for operationRef an Operation that
//     does not exist, ended without success, was a dry run, or lacks the output;
//   - reading what RBAC does not let the requester read (ADR 0007): `get` on the named Operation for
//     operationRef, `list` on operations for latest (also the template's default, e.g. a Restore without
//     backupName). Same namespace only: operationRef has no namespace field and one is refused.

import {
  ENGINES,
  type Engine,
  engineSupportsType,
  OPERATION_TYPES,
  type OperationType,
} from '../api/enums.ts';
import {
  MAX_OUTPUT_MAPPINGS,
  MAX_PARAMETER_SOURCES,
  OUTPUT_KEY_PATTERN,
  PARAMETER_NAME_PATTERN,
  type ParameterSource,
} from '../api/parameters-from.ts';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from '../api/schema-helpers.ts';
import {
  acceptsParameter,
  declaredOutputNames,
  declaresOutput,
  describeFilter,
  type OperationFilter,
  type OutputMapping,
  parameterOf,
  parameterSources,
  resolveTemplate,
  type Template,
  templatesMatching,
} from '../catalog/index.ts';
import {
  type AccessCheck,
  type Facts,
  forbidden,
  invalid,
  isRecord,
  type Problem,
  retry,
  type SourceOperation,
} from './decision.ts';
import { drillAccess } from './drill.ts';
import { repositoryAccess } from './repository-access.ts';
import type { OperationSpecView } from './spec-view.ts';

const matches = (pattern: string, v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max && new RegExp(pattern).test(v);

/** Narrows spec.parametersFrom; every field that is not what the API says is a problem at its path. */
export function readParametersFrom(
  value: unknown,
  base: string,
): { sources?: ParameterSource[]; problems: Problem[] } {
  if (!Array.isArray(value)) return { problems: [invalid(base, 'Invalid value: must be a list of sources')] };
  if (value.length > MAX_PARAMETER_SOURCES) {
    return {
      problems: [
        invalid(
          base,
          `Too many: ${value.length}: must have at most ${MAX_PARAMETER_SOURCES} items`,
          'FieldValueTooMany',
        ),
      ],
    };
  }
  const problems: Problem[] = [];
  const sources: ParameterSource[] = [];
  value.forEach((item, i) => {
    const path = `${base}[${i}]`;
    const before = problems.length;
    if (!isRecord(item)) {
      problems.push(
        invalid(path, 'Invalid value: must be an object with operationRef or latest, and outputs'),
      );
      return;
    }
    if ((item.operationRef === undefined) === (item.latest === undefined)) {
      problems.push(
        invalid(
          path,
          'Invalid value: set exactly one of operationRef (a named Operation) and latest (the latest Succeeded Operation of a type on this target)',
        ),
      );
    }
    const source: Partial<ParameterSource> = {};
    if (item.operationRef !== undefined) {
      const ref = item.operationRef;
      const name = isRecord(ref) ? ref.name : undefined;
      if (matches(DNS1123_SUBDOMAIN, name, 253)) source.operationRef = { name };
      else
        problems.push(
          invalid(
            `${path}.operationRef.name`,
            'Required value: the name of an Operation in this namespace',
            'FieldValueRequired',
          ),
        );
      if (isRecord(ref) && ref.namespace !== undefined) {
        problems.push(
          forbidden(
            `${path}.operationRef.namespace`,
            "Forbidden: parametersFrom reads Operations of this namespace only; another namespace's outputs are not readable through it",
          ),
        );
      }
    }
    if (item.latest !== undefined) {
      const l = item.latest;
      const f = readFilter(l, `${path}.latest`, problems);
      if (f) source.latest = f;
    }
    const outputs = readOutputs(item.outputs, `${path}.outputs`, problems);
    if (problems.length === before && outputs) sources.push({ ...source, outputs } as ParameterSource);
  });
  return problems.length > 0 ? { problems } : { sources, problems };
}

function readFilter(l: unknown, path: string, problems: Problem[]): OperationFilter | undefined {
  if (!isRecord(l)) {
    problems.push(
      invalid(path, 'Invalid value: must be an object with type (and optionally engine, template)'),
    );
    return undefined;
  }
  const before = problems.length;
  if (!(OPERATION_TYPES as readonly unknown[]).includes(l.type)) {
    problems.push(
      invalid(
        `${path}.type`,
        `Unsupported value: supported values: ${OPERATION_TYPES.join(', ')}`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (l.engine !== undefined && !(ENGINES as readonly unknown[]).includes(l.engine)) {
    problems.push(
      invalid(
        `${path}.engine`,
        `Unsupported value: supported values: ${ENGINES.join(', ')}`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (l.template !== undefined && !matches(DNS1123_LABEL, l.template, 63)) {
    problems.push(invalid(`${path}.template`, 'Invalid value: must be the name of a template (a DNS label)'));
  }
  if (problems.length > before) return undefined;
  const f: OperationFilter = { type: l.type as OperationType };
  if (l.engine !== undefined) f.engine = l.engine as Engine;
  if (l.template !== undefined) f.template = l.template as string;
  if (f.engine && !engineSupportsType(f.engine, f.type)) {
    problems.push(
      invalid(`${path}.engine`, `engine ${f.engine} never runs ${f.type}: no such Operation can exist`),
    );
    return undefined;
  }
  return f;
}

function readOutputs(v: unknown, path: string, problems: Problem[]): OutputMapping[] | undefined {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_OUTPUT_MAPPINGS) {
    problems.push(
      invalid(
        path,
        `Required value: list 1 to ${MAX_OUTPUT_MAPPINGS} outputs to read, each {output, parameter}`,
        'FieldValueRequired',
      ),
    );
    return undefined;
  }
  const out: OutputMapping[] = [];
  v.forEach((m, j) => {
    const p = `${path}[${j}]`;
    if (!isRecord(m) || !matches(OUTPUT_KEY_PATTERN, m.output, 253)) {
      problems.push(
        invalid(
          `${p}.output`,
          "Required value: the key of the source Operation's status.outputs to read",
          'FieldValueRequired',
        ),
      );
      return;
    }
    if (m.parameter !== undefined && !matches(PARAMETER_NAME_PATTERN, m.parameter, 63)) {
      problems.push(
        invalid(`${p}.parameter`, 'Invalid value: must be a parameter name (letters, digits, _)'),
      );
      return;
    }
    out.push({
      output: m.output,
      ...(m.parameter !== undefined ? { parameter: m.parameter as string } : {}),
    });
  });
  return out;
}

/** One access review parametersFrom needs, where to report it and why. */
export interface SourceAccess {
  check: AccessCheck;
  field: string;
  why: string;
}

/**
 * The reviews reading the sources needs: get on each named Operation, list when any `latest` applies; and
 * get on the repository Secrets a restore drill reads (repository-access.ts).
 */
export function sourceAccess(view: OperationSpecView, template: Template, base: string): SourceAccess[] {
  const out: SourceAccess[] = [...repositoryAccess(view, template, base)];
  const sources = parameterSources(view, template);
  for (const [i, s] of (view.parametersFrom ?? []).entries()) {
    if (s.operationRef) {
      out.push({
        check: { verb: 'get', resource: 'operations', name: s.operationRef.name },
        field: `${base}.parametersFrom[${i}].operationRef.name`,
        why: `reading the outputs of Operation ${s.operationRef.name} (spec.parametersFrom[${i}])`,
      });
    }
  }
  const latest = sources.find((s) => s.source.latest);
  if (latest) {
    const fromSpec = latest.from.startsWith('spec.');
    out.push({
      check: { verb: 'list', resource: 'operations' },
      field: fromSpec ? `${base}${latest.from.slice('spec'.length)}.latest` : `${base}.parameters`,
      why: fromSpec
        ? `reading the latest Succeeded ${describeFilter(latest.source.latest!)} Operation's outputs (${latest.from})`
        : `leaving ${latest.outputs.map((m) => `${base}.parameters.${parameterOf(m)}`).join(', ')} unset (${latest.from} then reads it from the latest Succeeded ${describeFilter(latest.source.latest!)} Operation; set it explicitly to avoid that)`,
    });
  }
  // A snapshot drill reads a VolumeSnapshot for the requester (drill.ts).
  out.push(...drillAccess(view, template, base));
  return out;
}

/** Everything about spec.parametersFrom that needs the template and the referenced Operations. */
export function checkParametersFrom(
  view: OperationSpecView,
  template: Template,
  base: string,
  facts: Pick<Facts, 'templates' | 'sources'>,
  mayGet: (operation: string) => boolean = () => true,
): Problem[] {
  const problems: Problem[] = [];
  const templates = facts.templates.ok ? facts.templates.value : [];
  const seen = new Set<string>();
  for (const [i, s] of (view.parametersFrom ?? []).entries()) {
    const path = `${base}.parametersFrom[${i}]`;
    for (const [j, m] of s.outputs.entries()) {
      const param = parameterOf(m);
      const field = `${path}.outputs[${j}].${m.parameter !== undefined ? 'parameter' : 'output'}`;
      if (!acceptsParameter(template, param)) {
        const known = Object.keys((template.inputSchema.properties ?? {}) as Record<string, unknown>);
        problems.push(
          invalid(
            field,
            `Invalid value: "${param}": template ${template.name} has no parameter ${param} (it has ${known.join(', ') || 'none'}); set parameter to one of them`,
          ),
        );
      } else if (view.parameters && Object.hasOwn(view.parameters, param)) {
        problems.push(
          invalid(
            field,
            `Invalid value: "${param}": spec.parameters.${param} is set too; set a parameter in one place only`,
          ),
        );
      } else if (seen.has(param)) {
        problems.push(
          invalid(
            field,
            `Duplicate value: "${param}": another parametersFrom entry already supplies it`,
            'FieldValueDuplicate',
          ),
        );
      }
      seen.add(param);
    }
    if (s.latest) problems.push(...checkLatest(s.latest, s.outputs, path, templates));
    // What the operator read of a named Operation is told only to a requester who may `get` it; anyone
    // else hears the access denial alone, the same whether it exists or not (no existence or outcome oracle).
    if (s.operationRef && mayGet(s.operationRef.name))
      problems.push(...checkRef(s.operationRef.name, s.outputs, path, templates, facts));
  }
  return problems;
}

/** Some template that may have run the source declares each output (unknowable when none is typed). */
function undeclared(
  candidates: readonly Template[],
  outputs: readonly OutputMapping[],
  path: string,
  what: string,
): Problem[] {
  if (candidates.length === 0 || candidates.some((t) => declaresOutput(t, 'x') === undefined)) return [];
  return outputs.flatMap((m, j) =>
    candidates.some((t) => declaresOutput(t, m.output))
      ? []
      : [
          invalid(
            `${path}.outputs[${j}].output`,
            `Invalid value: "${m.output}": ${what} never has output ${m.output}; ${candidates.map((t) => `${t.name} declares ${declaredOutputNames(t).join(', ') || 'none'}`).join('; ')}`,
          ),
        ],
  );
}

function checkLatest(
  f: OperationFilter,
  outputs: readonly OutputMapping[],
  path: string,
  templates: readonly Template[],
): Problem[] {
  if (f.template !== undefined) {
    const t = templates.find((x) => x.name === f.template);
    if (!t || t.type !== f.type || (f.engine !== undefined && t.engine !== f.engine)) {
      return [
        invalid(
          `${path}.latest.template`,
          `Not found: no template ${f.template} runs ${describeFilter({ ...f, template: undefined })}`,
          'FieldValueNotFound',
        ),
      ];
    }
  }
  const candidates = templatesMatching(templates, f);
  return undeclared(candidates, outputs, path, `a ${describeFilter(f)} Operation`);
}

function checkRef(
  name: string,
  outputs: readonly OutputMapping[],
  path: string,
  templates: readonly Template[],
  facts: Pick<Facts, 'sources'>,
): Problem[] {
  const field = `${path}.operationRef.name`;
  const r = facts.sources?.[name];
  if (!r) return [retry(field, `Operation ${name} was not looked up`)];
  if (!r.ok) return [retry(field, `could not read Operation ${name}: ${r.message}`)];
  const src = r.value;
  if (!src)
    return [
      invalid(
        field,
        `Not found: Operation ${name} does not exist in this namespace; name an existing one`,
        'FieldValueNotFound',
      ),
    ];
  const ended = src.phase === 'Failed' || src.phase === 'Cancelled';
  if (ended || (src.phase === 'Succeeded' && src.dryRun)) {
    return [
      invalid(
        field,
        `Invalid value: "${name}": it ${ended ? `ended ${src.phase}` : 'was a dry run'} and has no outputs to read; name a Succeeded Operation`,
      ),
    ];
  }
  const t = sourceTemplate(src, templates);
  const declared = t ? undeclared([t], outputs, path, `Operation ${name} (template ${t.name})`) : [];
  if (declared.length > 0 || src.phase !== 'Succeeded') return declared;
  return outputs.flatMap((m, j) =>
    src.outputs?.[m.output] !== undefined && src.outputs[m.output] !== ''
      ? []
      : [
          invalid(
            `${path}.outputs[${j}].output`,
            `Invalid value: "${m.output}": Operation ${name} has no output ${m.output} (it has ${Object.keys(src.outputs ?? {}).join(', ') || 'none'})`,
          ),
        ],
  );
}

function sourceTemplate(src: SourceOperation, templates: readonly Template[]): Template | undefined {
  if (
    !(OPERATION_TYPES as readonly string[]).includes(src.type) ||
    !(ENGINES as readonly string[]).includes(src.engine)
  )
    return undefined;
  const r = resolveTemplate(templates, {
    type: src.type as OperationType,
    engine: src.engine as Engine,
    ...(src.template !== undefined ? { template: src.template } : {}),
  });
  return r.ok ? r.template : undefined;
}
