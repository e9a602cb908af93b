// Validating data against OpenAPI v3 schemas (template inputSchemas, CRD-style schemas) with ajv, and
// turning ajv's errors into Kubernetes field errors (`spec.parameters.command[0]: Invalid value: ...`).
//
// ajv speaks JSON Schema draft-07, Kubernetes schemas are OpenAPI v3.0, so each schema is first
// rewritten: boolean exclusiveMinimum/exclusiveMaximum become draft-07 numbers, `nullable` also admits
// null in an `enum` (Kubernetes accepts null for a nullable field before checking its enum),
// x-kubernetes-int-or-string becomes integer-or-string, and the x-kubernetes-* keywords are accepted
// (CEL rules in x-kubernetes-validations are not evaluated here). Defaults are applied to a copy of the
// data (useDefaults); like ajv, defaults under anyOf/oneOf are not applied.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: the default import is the module object, whose `default` is the plugin.
const addFormats = addFormatsModule.default;

export type JsonSchema = Record<string, unknown>;

const KUBERNETES_KEYWORDS = [
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
];
const OPENAPI_ANNOTATIONS = ['example', 'externalDocs', 'xml', 'discriminator'];

/** Go's time.ParseDuration grammar: what format "duration" means in a Kubernetes schema (not ISO 8601). */
export const GO_DURATION = /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$/;

function createAjv(): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    useDefaults: true,
    // Unknown keywords and formats are errors: a typo in a catalog schema must not silently validate nothing.
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: false,
  });
  addFormats(ajv);
  ajv.addFormat('duration', GO_DURATION);
  ajv.addVocabulary([...KUBERNETES_KEYWORDS, ...OPENAPI_ANNOTATIONS]);
  return ajv;
}

const ajv = createAjv();

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SCHEMA_VALUES = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
]);

/** Rewrites an OpenAPI v3.0 schema (deep copy) into the draft-07 dialect ajv validates. */
export function toDraft07(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return structuredClone(schema);
  const out: JsonSchema = {};
  // Walk only the keywords whose values are schemas, so a property named e.g. "nullable" or "default"
  // is never mistaken for the keyword.
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toDraft07(v)]));
    } else if ((SCHEMA_LISTS.has(key) || key === 'items') && Array.isArray(value)) {
      out[key] = value.map(toDraft07);
    } else if (SCHEMA_VALUES.has(key)) {
      out[key] = toDraft07(value);
    } else {
      out[key] = structuredClone(value);
    }
  }
  for (const bound of ['Minimum', 'Maximum'] as const) {
    const flag = out[`exclusive${bound}`];
    if (typeof flag === 'boolean') {
      const limit = out[bound.toLowerCase()];
      delete out[`exclusive${bound}`];
      if (flag && typeof limit === 'number') {
        out[`exclusive${bound}`] = limit;
        delete out[bound.toLowerCase()];
      }
    }
  }
  if (out.nullable === true) {
    if (out.type === undefined)
      delete out.nullable; // nothing to widen; ajv refuses nullable without type
    else if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  if (out['x-kubernetes-int-or-string'] === true && out.type === undefined && out.anyOf === undefined) {
    out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  return out;
}

export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

const compiled = new WeakMap<object, ValidateFunction>();

/** Compiles (once per schema object) an OpenAPI v3 schema. Throws SchemaError saying what is wrong. */
export function compileOpenApiSchema(schema: JsonSchema): ValidateFunction {
  const hit = compiled.get(schema);
  if (hit) return hit;
  let fn: ValidateFunction;
  try {
    fn = ajv.compile(toDraft07(schema) as JsonSchema);
  } catch (err) {
    throw new SchemaError(err instanceof Error ? err.message : String(err));
  }
  compiled.set(schema, fn);
  return fn;
}

/** The error types of k8s.io/apimachinery field errors, spelled as their Error() text spells them. */
export type FieldErrorType =
  | 'Required value'
  | 'Invalid value'
  | 'Unsupported value'
  | 'Forbidden'
  | 'Too long'
  | 'Too many'
  | 'Duplicate value';

export interface FieldError {
  /** Kubernetes field path, e.g. spec.parameters.command[0]. */
  field: string;
  type: FieldErrorType;
  /** The offending value, for Invalid/Unsupported value. */
  value?: unknown;
  /** What is wrong and how to fix it. */
  detail: string;
}

export type ValidationResult =
  | { ok: true; value: unknown }
  | { ok: false; value: unknown; errors: FieldError[] };

/**
 * Validates `data` against `schema`. Defaults are applied to a copy (returned as `value`); `data` is
 * not modified. Field paths start at `basePath`.
 */
export function validateWithSchema(
  schema: JsonSchema,
  data: unknown,
  basePath = 'spec.parameters',
): ValidationResult {
  const fn = compileOpenApiSchema(schema);
  const value = data === undefined ? {} : structuredClone(data);
  if (fn(value)) return { ok: true, value };
  return { ok: false, value, errors: toFieldErrors(fn.errors ?? [], value, basePath) };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Joins a child onto a field path: `.name` for identifiers, `[key]` otherwise (Kubernetes style). */
export function childPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (IDENTIFIER.test(key)) return base === '' ? key : `${base}.${key}`;
  return `${base}[${key}]`;
}

/** Converts an ajv instancePath (JSON pointer) into a Kubernetes field path, using the data for array indices. */
export function toFieldPath(basePath: string, instancePath: string, data: unknown): string {
  if (instancePath === '') return basePath;
  let path = basePath;
  let current: unknown = data;
  for (const raw of instancePath.slice(1).split('/')) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(current) && /^\d+$/.test(segment)) {
      path = childPath(path, Number(segment));
      current = current[Number(segment)];
    } else {
      path = childPath(path, segment);
      current =
        current !== null && typeof current === 'object' ? (current as JsonSchema)[segment] : undefined;
    }
  }
  return path;
}

function quote(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
}

function describeOf(schema: unknown): string {
  const d = schema && typeof schema === 'object' ? (schema as JsonSchema).description : undefined;
  return typeof d === 'string' && d.length > 0 ? d.replace(/\.$/, '') : '';
}

/** Edit distance, for "did you mean" on misspelt field names. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(
        row[j]! + 1,
        row[j - 1]! + 1,
        prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length]!;
}

function suggestion(name: string, allowed: string[]): string {
  const best = allowed
    .map((a) => ({ a, d: distance(name, a) }))
    .filter((x) => x.d <= Math.max(2, Math.floor(name.length / 3)))
    .sort((x, y) => x.d - y.d)[0];
  return best ? ` (did you mean ${best.a}?)` : '';
}

function toFieldError(e: ErrorObject, data: unknown, basePath: string): FieldError {
  const base = toFieldPath(basePath, e.instancePath, data);
  // Errors of propertyNames concern a map key: point at the key, not the map.
  const field = e.propertyName === undefined ? base : childPath(base, e.propertyName);
  if (e.propertyName !== undefined && e.keyword !== 'propertyNames') {
    const detail = toFieldError({ ...e, propertyName: undefined }, data, basePath).detail;
    return { field, type: 'Invalid value', value: e.propertyName, detail: `invalid key: ${detail}` };
  }
  const parent = (e.parentSchema ?? {}) as JsonSchema;
  const about = describeOf(parent);
  const hint = about ? ` (${about})` : '';
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required': {
      const missing = String(p.missingProperty);
      const props = (parent.properties ?? {}) as JsonSchema;
      const what = describeOf(props[missing]);
      return {
        field: childPath(field, missing),
        type: 'Required value',
        detail: what ? `set ${childPath(field, missing)}: ${what}` : `set ${childPath(field, missing)}`,
      };
    }
    case 'additionalProperties': {
      const extra = String(p.additionalProperty);
      const allowed = Object.keys((parent.properties ?? {}) as JsonSchema).sort();
      return {
        field: childPath(field, extra),
        type: 'Forbidden',
        detail: `unknown field${suggestion(extra, allowed)}; allowed fields: ${allowed.join(', ') || '(none)'}`,
      };
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).map(quote).join(', ');
      return { field, type: 'Unsupported value', value: e.data, detail: `supported values: ${allowed}` };
    }
    case 'const':
      return { field, type: 'Invalid value', value: e.data, detail: `must be ${quote(p.allowedValue)}` };
    case 'type': {
      const t = String(p.type).replace(',', ' or ');
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must be ${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t}${hint}`,
      };
    }
    case 'pattern':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `${about ? `${about}; ` : ''}must match the regular expression ${String(p.pattern)}`,
      };
    case 'format':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must be a valid ${String(p.format)}${hint}`,
      };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const words: Record<string, string> = {
        minimum: 'greater than or equal to',
        maximum: 'less than or equal to',
        exclusiveMinimum: 'greater than',
        exclusiveMaximum: 'less than',
      };
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must be ${words[e.keyword]} ${String(p.limit)}`,
      };
    }
    case 'minLength':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must be at least ${String(p.limit)} characters long${hint}`,
      };
    case 'maxLength':
      return { field, type: 'Too long', detail: `may not be more than ${String(p.limit)} characters` };
    case 'minItems':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must have at least ${String(p.limit)} items${hint}`,
      };
    case 'maxItems':
      return { field, type: 'Too many', detail: `must have at most ${String(p.limit)} items` };
    case 'minProperties':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must have at least ${String(p.limit)} fields${hint}`,
      };
    case 'maxProperties':
      return { field, type: 'Too many', detail: `must have at most ${String(p.limit)} fields` };
    case 'uniqueItems':
      return {
        field: childPath(field, Number(p.i)),
        type: 'Duplicate value',
        value: Array.isArray(e.data) ? e.data[Number(p.i)] : undefined,
        detail: `items ${String(p.j)} and ${String(p.i)} are identical`,
      };
    case 'multipleOf':
      return {
        field,
        type: 'Invalid value',
        value: e.data,
        detail: `must be a multiple of ${String(p.multipleOf)}`,
      };
    default:
      return { field, type: 'Invalid value', value: e.data, detail: `${e.message ?? 'is invalid'}${hint}` };
  }
}

/** Converts ajv errors to field errors; errors of anyOf/oneOf branches are folded into the one at their root. */
export function toFieldErrors(errors: readonly ErrorObject[], data: unknown, basePath: string): FieldError[] {
  const combinators = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const inBranch = (e: ErrorObject) =>
    combinators.some(
      (c) =>
        c !== e && e.schemaPath.startsWith(`${c.schemaPath}/`) && e.instancePath.startsWith(c.instancePath),
    );
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    // The generic propertyNames error repeats the specific one reported for the key itself.
    if (inBranch(e) || e.keyword === 'propertyNames') continue;
    const fe = toFieldError(e, data, basePath);
    const key = `${fe.field}\u0000${fe.type}\u0000${fe.detail}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(fe);
    }
  }
  return out;
}

/** The text apimachinery's field.Error.Error() would print. */
export function formatFieldError(e: FieldError): string {
  const showValue =
    e.type === 'Invalid value' || e.type === 'Unsupported value' || e.type === 'Duplicate value';
  const value = showValue && e.value !== undefined ? `${quote(e.value)}: ` : '';
  return `${e.field}: ${e.type}: ${value}${e.detail}`;
}

/** All errors in one message, the way the API server joins them: `[a, b]`. */
export function formatFieldErrors(errors: readonly FieldError[]): string {
  const parts = errors.map(formatFieldError);
  return parts.length === 1 ? parts[0]! : `[${parts.join(', ')}]`;
}
