// Timestamps in one shape. client-node's generated list/get methods turn metav1.Time fields into
// Date objects while watch events keep the RFC 3339 strings the API server sent, so an informer
// fed by both would compare a Date with a string and see a change that is not there. Everything
// the runtime stores or hands out carries strings, formatted as the API server formats them.

import type { StringTable } from './strings.ts';

/** RFC 3339 at second precision, as metav1.Time serialises ("2025-01-01T00:00:00Z"). */
export function formatTime(d: Date | number): string {
  return new Date(d).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** RFC 3339 with exactly six fractional digits, as metav1.MicroTime requires (Lease, Event). */
export function formatMicroTime(d: Date | number): string {
  return new Date(d).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function dateToString(d: Date): string {
  // client-node's V1MicroTime overrides toISOString with microsecond output: keep it.
  if (Object.getPrototypeOf(d) !== Date.prototype) return d.toISOString();
  return d.getUTCMilliseconds() === 0 ? formatTime(d) : d.toISOString();
}

// Both walks below keep their own stack instead of recursing: a Custom Resource's free-form fields may
// come from the API server nested up to its JSON decoder's limit (10,000 levels), deeper than the
// call stack of a recursive walk reaches, and the informer must store such an object like any other.

type Container = Record<string, unknown> | unknown[];

function put(parent: Container, key: string | number, v: unknown): void {
  if (Array.isArray(parent)) parent[key as number] = v;
  else parent[key as string] = v;
}

/** Returns a copy of `value` with every Date replaced by its RFC 3339 string. */
export function normalizeTimestamps<T>(value: T): T {
  const root: unknown[] = [undefined];
  const todo: [unknown, Container, string | number][] = [[value, root, 0]];
  for (let next = todo.pop(); next; next = todo.pop()) {
    const [v, parent, key] = next;
    if (v instanceof Date) put(parent, key, dateToString(v));
    else if (Array.isArray(v)) {
      const out: unknown[] = new Array(v.length);
      put(parent, key, out);
      for (let i = 0; i < v.length; i++) todo.push([v[i], out, i]);
    } else if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      put(parent, key, out);
      for (const [k, x] of Object.entries(v)) {
        if (x === undefined) continue;
        // Placed now, filled later: the copy keeps the key order.
        out[k] = null;
        todo.push([x, out, k]);
      }
    } else put(parent, key, v);
  }
  return root[0] as T;
}

/**
 * Normalises `value` IN PLACE (Dates become strings, undefined fields go) and deep-freezes it, then
 * returns it. For objects the caller owns outright (just parsed from the API server): the informer
 * stores and shares them, and a frozen object makes any attempt to change the shared cache throw
 * (ES modules are strict mode) instead of silently corrupting what every other reader sees.
 * Already-frozen parts are taken as normalised. With `strings`, every string value is replaced by the
 * table's copy of it (strings.ts).
 */
export function freezeNormalized<T>(value: T, strings?: StringTable): T {
  if (value instanceof Date) return dateToString(value) as T;
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  const todo: object[] = [value];
  for (let o = todo.pop(); o; o = todo.pop()) {
    // A node is fixed up, then frozen; its children (separate objects) follow.
    const node = o as Record<string, unknown>;
    const list = Array.isArray(o);
    for (const k of Object.keys(node)) {
      const x = node[k];
      if (typeof x === 'string') {
        if (strings) node[k] = strings.share(x);
      } else if (x === undefined) {
        if (!list) delete node[k];
      } else if (x instanceof Date) node[k] = dateToString(x);
      else if (typeof x === 'object' && x !== null && !Object.isFrozen(x)) todo.push(x);
    }
    Object.freeze(node);
  }
  return value;
}
