// Size limits on spec.parameters, checked before any schema validation. ajv (and every recursive walk of
// a JSON value: comparison, cloning, JSON.stringify) recurses once per nesting level, so parameters nested
// a few thousand levels deep used to exhaust the stack and surface as "template … has an unusable
// inputSchema (RangeError …)". The walk here is iterative, so it cannot overflow whatever it is given.
//
// The limits are far above what any template input needs (the built-in templates nest at most 3 levels;
// job-runcommand's largest legal input is 64 arguments of 4 KiB) and far below what hurts.

/** Containers (objects and arrays) nested inside each other, spec.parameters itself being level 1. */
export const MAX_PARAMETERS_DEPTH = 32;

/** The parameters' size as compact JSON (UTF-8 bytes). */
export const MAX_PARAMETERS_BYTES = 512 * 1024;

export type ParametersLimit = { ok: true } | { ok: false; limit: 'depth' | 'size'; message: string };

/**
 * Checks `parameters` against MAX_PARAMETERS_DEPTH and MAX_PARAMETERS_BYTES without recursion. The size
 * is the length of the value's compact JSON, counted while walking (strings by their UTF-8 length, with
 * quotes; escapes are not expanded, which only undercounts by a few bytes per control character).
 */
export function checkParametersLimits(
  parameters: unknown,
  limits: { depth: number; bytes: number } = { depth: MAX_PARAMETERS_DEPTH, bytes: MAX_PARAMETERS_BYTES },
): ParametersLimit {
  const stack: { value: unknown; depth: number }[] = [{ value: parameters, depth: 1 }];
  let bytes = 0;
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (value !== null && typeof value === 'object') {
      if (depth > limits.depth) {
        return {
          ok: false,
          limit: 'depth',
          message: `Invalid value: nested more than ${limits.depth} levels deep (objects and arrays inside each other); no template input needs that: flatten the input`,
        };
      }
      const children = Array.isArray(value) ? value : Object.entries(value);
      bytes += 2 + Math.max(0, children.length - 1); // brackets and commas
      for (const child of children) {
        if (Array.isArray(value)) stack.push({ value: child, depth: depth + 1 });
        else {
          const [key, v] = child as [string, unknown];
          bytes += Buffer.byteLength(key) + 3; // "key":
          stack.push({ value: v, depth: depth + 1 });
        }
      }
    } else if (typeof value === 'string') {
      bytes += Buffer.byteLength(value) + 2;
    } else {
      bytes += String(value).length;
    }
    if (bytes > limits.bytes) {
      return {
        ok: false,
        limit: 'size',
        message: `Invalid value: larger than ${limits.bytes} bytes as JSON; pass large input by reference (e.g. a ConfigMap or Secret name the template reads) instead of inline`,
      };
    }
  }
  return { ok: true };
}
