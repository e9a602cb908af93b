// Timestamps in one shape. client-node's generated list/get methods turn metav1.Time fields into
// Date objects while watch events keep the RFC 3339 strings the API server sent, so an informer
// fed by both would compare a Date with a string and see a change that is not there. Everything
// the runtime stores or hands out carries strings, formatted as the API server formats them.

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

/** Returns a copy of `value` with every Date replaced by its RFC 3339 string. */
export function normalizeTimestamps<T>(value: T): T {
  return walk(value) as T;
}

function walk(v: unknown): unknown {
  if (v instanceof Date) return dateToString(v);
  if (Array.isArray(v)) return v.map(walk);
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = walk(x);
    return out;
  }
  return v;
}

/**
 * Normalises `value` IN PLACE (Dates become strings, undefined fields go) and deep-freezes it, then
 * returns it. For objects the caller owns outright (just parsed from the API server): the informer
 * stores and shares them, and a frozen object makes any attempt to change the shared cache throw
 * (ES modules are strict mode) instead of silently corrupting what every other reader sees.
 * Already-frozen parts are taken as normalised.
 */
export function freezeNormalized<T>(value: T): T {
  return freezeWalk(value) as T;
}

function freezeWalk(v: unknown): unknown {
  if (v instanceof Date) return dateToString(v);
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = freezeWalk(v[i]);
  } else {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const x = o[k];
      if (x === undefined) delete o[k];
      else if (typeof x === 'object' && x !== null) o[k] = freezeWalk(x);
    }
  }
  return Object.freeze(v);
}
