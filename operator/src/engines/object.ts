// Narrowing helpers for children read back from the API server: their status is untyped JSON, and
// adapters must never throw on a field that is missing or of an unexpected type.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ChildManifest } from './types.ts';

export type Json = Record<string, unknown>;

export function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value at `path` under `obj`, or undefined when any step is missing or not an object. */
export function at(obj: unknown, ...path: string[]): unknown {
  let cur: unknown = obj;
  for (const key of path) {
    if (!isRecord(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function bool(v: unknown): boolean | undefined {
  return typeof v === 'boolean' ? v : undefined;
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function nameOf(o: KubernetesObject): string {
  return o.metadata?.name ?? '';
}

export function kindOf(o: KubernetesObject): string {
  return o.kind ?? '';
}

export function stringArray(v: unknown): string[] {
  return arr(v).filter((x): x is string => typeof x === 'string');
}

/**
 * Children of one kind, sorted by name so observations do not depend on list order. An object without
 * `kind` counts as the kind asked for: items of a List of built-in kinds (Jobs) arrive without it.
 */
export function ofKind(children: readonly KubernetesObject[], kind: string): KubernetesObject[] {
  return children.filter((c) => (c.kind ?? kind) === kind).sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
}

/** A child as read back, narrowed to the manifest shape CancelAction carries. */
export function asManifest(o: KubernetesObject): ChildManifest {
  return {
    ...o,
    apiVersion: o.apiVersion ?? '',
    kind: o.kind ?? '',
    metadata: {
      ...o.metadata,
      name: o.metadata?.name ?? '',
      namespace: o.metadata?.namespace ?? '',
    },
  } as ChildManifest;
}
