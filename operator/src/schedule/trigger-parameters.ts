// spec.parametersFromTrigger of CronOperations and WatchOperations: declared substitutions that give each
// created Operation parameters from what triggered it (the slot, the reason, a field of the targeted
// ApplicationInstance), so "upgrade to the version the label names" needs no code. Pure: the admission
// webhook checks the declarations (fromProblem, parameterProblem), the controllers apply them.

import type { TSchema } from '@sinclair/typebox';
import { ApplicationInstanceSpecSchema } from '../api/applicationinstance.ts';
import type { ApplicationInstance } from '../api/index.ts';
import type { SchedulerKind } from '../api/scheduler-owner.ts';

export type { SchedulerKind };

/** The `trigger.*` variables each kind provides (object.<path> comes on top, for both). */
export const TRIGGER_VARIABLES: Readonly<Record<SchedulerKind, readonly string[]>> = {
  CronOperation: ['trigger.scheduledTime', 'trigger.reason', 'trigger.request'],
  WatchOperation: ['trigger.reason', 'trigger.time'],
};

export interface ParameterFromTrigger {
  parameter: string;
  from: string;
}

export interface TriggerContext {
  /** Values of the `trigger.*` variables; a variable that does not apply to this trigger is absent. */
  variables: Readonly<Record<string, string | undefined>>;
  /** The ApplicationInstance the Operation targets (`object.*`). */
  object?: ApplicationInstance;
}

const META = /^metadata\.(labels|annotations)\['([A-Za-z0-9][-A-Za-z0-9_./]*)'\]$/;

/** The value at `spec.a.b`, `metadata.name` or `metadata.labels['k']` / `metadata.annotations['k']`. */
export function valueAt(obj: unknown, path: string): unknown {
  const meta = META.exec(path);
  if (meta) {
    const m = (obj as { metadata?: Record<string, Record<string, string> | undefined> }).metadata;
    return m?.[meta[1]!]?.[meta[2]!];
  }
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function propertiesOf(schema: unknown): Record<string, unknown> | undefined {
  const p = (schema as { properties?: unknown } | undefined)?.properties;
  return typeof p === 'object' && p !== null ? (p as Record<string, unknown>) : undefined;
}

/** Why `object.<path>` names no field of an ApplicationInstance, or undefined. */
function objectPathProblem(path: string): string | undefined {
  if (path === 'metadata.name' || META.test(path)) return undefined;
  if (path.startsWith('status.') || path === 'status')
    return `"object.${path}": status is not available (a trigger never depends on status); use object.spec.<field> or object.metadata.*`;
  if (!/^spec(\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(path))
    return `"object.${path}" is not a field path: use object.metadata.name, object.metadata.labels['<key>'], object.metadata.annotations['<key>'] or object.spec.<field>`;
  let schema: unknown = ApplicationInstanceSpecSchema as TSchema;
  let at = 'spec';
  for (const part of path.split('.').slice(1)) {
    const props = propertiesOf(schema);
    if (!props?.[part])
      return `"object.${path}": ApplicationInstance has no field ${at}.${part}${props ? ` (fields of ${at}: ${Object.keys(props).join(', ')})` : ''}`;
    schema = props[part];
    at = `${at}.${part}`;
  }
  return undefined;
}

/** Why `from` is not a variable of `kind` (or an object field path), or undefined. */
export function fromProblem(kind: SchedulerKind, from: string): string | undefined {
  if (TRIGGER_VARIABLES[kind].includes(from)) return undefined;
  if (from.startsWith('object.')) return objectPathProblem(from.slice('object.'.length));
  return `unknown variable "${from}": a ${kind} provides ${TRIGGER_VARIABLES[kind].join(', ')} and object.<path> (the targeted ApplicationInstance)`;
}

/**
 * Why `parameter` is not declared by the template's inputSchema, or undefined. A schema that declares no
 * properties at some level accepts any name below it.
 */
export function parameterProblem(
  inputSchema: unknown,
  parameter: string,
  template: string,
): string | undefined {
  let schema = inputSchema;
  let at = '';
  for (const part of parameter.split('.')) {
    const props = propertiesOf(schema);
    if (!props) return undefined;
    if (!Object.hasOwn(props, part))
      return `template ${template} declares no parameter ${at}${part} (it declares ${at ? `under ${at.slice(0, -1)}: ` : ''}${Object.keys(props).join(', ') || 'none'})`;
    schema = props[part];
    at = `${at}${part}.`;
  }
  return undefined;
}

/** The value `from` names in `ctx`; undefined when the trigger does not carry it (e.g. a missing label). */
export function triggerValue(from: string, ctx: TriggerContext): unknown {
  if (from.startsWith('object.')) {
    const v = valueAt(ctx.object, from.slice('object.'.length));
    return v === undefined ? undefined : structuredClone(v);
  }
  return ctx.variables[from];
}

/**
 * `parameters` with every substitution applied (a copy). A substitution whose value the trigger does not
 * carry leaves the parameter as the template wrote it (or absent) and is listed in `missing`.
 */
export function applyTriggerParameters(
  parameters: Readonly<Record<string, unknown>> | undefined,
  subs: readonly ParameterFromTrigger[] | undefined,
  ctx: TriggerContext,
): { parameters: Record<string, unknown> | undefined; missing: string[] } {
  if (!subs?.length) return { parameters: parameters ? structuredClone(parameters) : undefined, missing: [] };
  const out: Record<string, unknown> = structuredClone(parameters ?? {});
  const missing: string[] = [];
  for (const s of subs) {
    const v = triggerValue(s.from, ctx);
    if (v === undefined) {
      missing.push(s.from);
      continue;
    }
    const parts = s.parameter.split('.');
    let cur = out;
    for (const p of parts.slice(0, -1)) {
      const next = cur[p];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[p] = {};
      cur = cur[p] as Record<string, unknown>;
    }
    cur[parts.at(-1)!] = v;
  }
  return { parameters: out, missing };
}
