// How results flow between templates: the outputs a template declares (outputSchema), the parameters
// its parametersFrom defaults and an Operation's spec.parametersFrom supply, and its dependencies.
// Pure; shared by the catalog loader, the admission webhook and the reconciler.
import { type Engine, engineSupportsType, type OperationType } from '../api/enums.ts';
import type { ParameterSource } from '../api/parameters-from.ts';
import { parsePositiveDuration } from '../time/duration.ts';
import { compileOpenApiSchema, type JsonSchema, SchemaError } from './schema-validation.ts';
import type { Template } from './template.ts';

/** What a source reads: one output into one parameter. */
export interface OutputMapping {
  output: string;
  parameter?: string;
}

export function parameterOf(m: OutputMapping): string {
  return m.parameter ?? m.output;
}

/**
 * Whether the template declares output `key`: a property of its outputSchema, a patternProperties match
 * or an open additionalProperties. undefined: the template has no outputSchema, so nobody can tell.
 */
export function declaresOutput(t: Pick<Template, 'outputSchema'>, key: string): boolean | undefined {
  const s = t.outputSchema;
  if (!s) return undefined;
  const props = (s.properties ?? {}) as Record<string, unknown>;
  if (Object.hasOwn(props, key)) return true;
  const patterns = Object.keys((s.patternProperties ?? {}) as Record<string, unknown>);
  if (patterns.some((p) => new RegExp(p, 'u').test(key))) return true;
  return s.additionalProperties !== undefined && s.additionalProperties !== false;
}

/** The outputs a template declares by name (for messages). */
export function declaredOutputNames(t: Pick<Template, 'outputSchema'>): string[] {
  const s = t.outputSchema ?? {};
  return [
    ...Object.keys((s.properties ?? {}) as Record<string, unknown>),
    ...Object.keys((s.patternProperties ?? {}) as Record<string, unknown>).map((p) => `/${p}/`),
  ];
}

/** Whether the template's inputSchema knows parameter `name` (an open schema knows every name). */
export function acceptsParameter(t: Pick<Template, 'inputSchema'>, name: string): boolean {
  const props = (t.inputSchema.properties ?? {}) as Record<string, unknown>;
  return Object.hasOwn(props, name) || t.inputSchema.additionalProperties !== false;
}

/** Filters of a `latest` source or a dependency: which Operations count. */
export interface OperationFilter {
  type: OperationType;
  engine?: Engine;
  template?: string;
}

/** Templates an Operation matching `f` may have run (to check that an output can exist at all). */
export function templatesMatching<T extends Template>(templates: readonly T[], f: OperationFilter): T[] {
  return templates.filter(
    (t) =>
      t.type === f.type &&
      (f.engine === undefined || t.engine === f.engine) &&
      (f.template === undefined || t.name === f.template),
  );
}

export function describeFilter(f: OperationFilter): string {
  const extra = [f.engine ? `engine ${f.engine}` : '', f.template ? `template ${f.template}` : ''].filter(
    Boolean,
  );
  return `${f.type}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`;
}

/** One source an Operation resolves: where the reference is written and what it reads. */
export interface SourceRef {
  /** `spec.parametersFrom[<i>]` or `template <name> parametersFrom[<i>]`. */
  from: string;
  source: Pick<ParameterSource, 'operationRef' | 'latest'>;
  outputs: OutputMapping[];
}

/**
 * The sources of an Operation: its spec.parametersFrom, then the template's parametersFrom defaults for
 * the parameters the Operation sets neither in spec.parameters nor in spec.parametersFrom. A Restore with
 * spec.source gets no defaults: they read this namespace's Operations on the target, and its backup comes
 * from the source (whose Operations may be gone with their namespace, or be another namespace's).
 */
export function parameterSources(
  spec: {
    parameters?: Record<string, unknown>;
    parametersFrom?: readonly ParameterSource[];
    source?: unknown;
  },
  template: Pick<Template, 'name' | 'parametersFrom'>,
): SourceRef[] {
  const out: SourceRef[] = (spec.parametersFrom ?? []).map((s, i) => ({
    from: `spec.parametersFrom[${i}]`,
    source: s.operationRef ? { operationRef: s.operationRef } : { ...(s.latest ? { latest: s.latest } : {}) },
    outputs: s.outputs,
  }));
  const set = new Set([
    ...Object.keys(spec.parameters ?? {}),
    ...out.flatMap((s) => s.outputs.map(parameterOf)),
  ]);
  if (spec.source !== undefined) return out;
  for (const [i, d] of (template.parametersFrom ?? []).entries()) {
    const outputs = d.outputs.filter((m) => !set.has(parameterOf(m)));
    if (outputs.length === 0) continue;
    out.push({
      from: `template ${template.name} parametersFrom[${i}]`,
      source: { latest: d.latest },
      outputs,
    });
  }
  return out;
}

/** The parameters the sources will supply (admission does not require them in spec.parameters). */
export function suppliedParameters(sources: readonly SourceRef[]): Set<string> {
  return new Set(sources.flatMap((s) => s.outputs.map(parameterOf)));
}

/** withoutRequired's copies, by schema and what stays required: compileOpenApiSchema caches by object. */
const relaxed = new WeakMap<JsonSchema, Map<string, JsonSchema>>();
/**
 * Copies kept per schema. The requester chooses which required parameters parametersFrom supplies, so the
 * subsets are theirs to vary: beyond this many the oldest copy (and its compiled validator) is let go.
 */
export const RELAXED_COPIES_PER_SCHEMA = 16;

/**
 * `schema` without the root `required` entries in `keys` (a shallow copy; the rest is shared), the same
 * object for the same schema and keys each time: admission validates every Operation's parameters with
 * it, and a new object would be compiled by ajv again on every request whose parametersFrom supplies a
 * required parameter. `schema` itself when nothing is dropped.
 */
export function withoutRequired(schema: JsonSchema, keys: ReadonlySet<string>): JsonSchema {
  if (keys.size === 0 || !Array.isArray(schema.required)) return schema;
  const all = schema.required as string[];
  const required = all.filter((k) => !keys.has(k));
  if (required.length === all.length) return schema;
  const id = JSON.stringify(required);
  let copies = relaxed.get(schema);
  const hit = copies?.get(id);
  if (hit) return hit;
  const { required: _drop, ...rest } = schema;
  const copy = required.length > 0 ? { ...rest, required } : rest;
  if (!copies) {
    copies = new Map();
    relaxed.set(schema, copies);
  }
  if (copies.size >= RELAXED_COPIES_PER_SCHEMA) copies.delete(copies.keys().next().value as string);
  copies.set(id, copy);
  return copy;
}

/** A template schema (inputSchema, outputSchema) that is not a compilable object schema, or undefined. */
export function objectSchemaProblem(
  schema: JsonSchema,
  path: string,
  field: 'inputSchema' | 'outputSchema',
): { path: string; message: string } | undefined {
  const p = `${path}.${field}`;
  if (schema.type !== 'object') return { path: p, message: `the root of ${field} must have type: object` };
  try {
    compileOpenApiSchema(schema);
  } catch (err) {
    if (err instanceof SchemaError) return { path: p, message: `not a valid schema: ${err.message}` };
    throw err;
  }
  return undefined;
}

/** Checks the catalog's JSON Schema cannot express: a compilable outputSchema, sources and dependencies that can work. */
export function checkTemplateFlow(t: Template, path: string): { path: string; message: string } | undefined {
  const schemaProblem = t.outputSchema && objectSchemaProblem(t.outputSchema, path, 'outputSchema');
  if (schemaProblem) return schemaProblem;
  for (const [i, s] of (t.parametersFrom ?? []).entries()) {
    const p = `${path}.parametersFrom[${i}]`;
    const problem = filterProblem(s.latest);
    if (problem) return { path: `${p}.latest.engine`, message: problem };
    for (const [j, m] of s.outputs.entries()) {
      if (!acceptsParameter(t, parameterOf(m))) {
        return { path: `${p}.outputs[${j}]`, message: `inputSchema has no parameter ${parameterOf(m)}` };
      }
    }
  }
  for (const [i, d] of (t.dependencies ?? []).entries()) {
    const p = `${path}.dependencies[${i}]`;
    const problem = filterProblem(d);
    if (problem) return { path: `${p}.engine`, message: problem };
    const age = d.maxAge === undefined ? undefined : parsePositiveDuration(d.maxAge);
    if (age && !age.ok) return { path: `${p}.maxAge`, message: age.message };
  }
  return undefined;
}

function filterProblem(f: OperationFilter): string | undefined {
  if (f.engine && !engineSupportsType(f.engine, f.type)) return `engine ${f.engine} never runs ${f.type}`;
  return undefined;
}
