// Go-style duration strings ("2h30m", "90m", "1.5h"), as Kubernetes users write them everywhere else.
// Grammar as Go's time.ParseDuration: optional sign, then one or more <decimal><unit> with units
// ns, us (µs, μs), ms, s, m, h; a bare "0" is allowed.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/** Milliseconds in a Go duration string (may be fractional or negative). Throws DurationError. */
export function parseGoDuration(input: string): number {
  const bad = (why: string) =>
    new DurationError(`invalid duration "${input}": ${why} (examples: "2h", "90m", "2h30m", "1.5h")`);
  let s = input;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw bad('empty');
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m) {
      const rest = s.slice(at);
      throw bad(/^\d*\.?\d*$/.test(rest) ? `missing unit after "${rest}"` : `unexpected "${rest}"`);
    }
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return sign * total;
}

/** A positive duration in ms, or a message saying why the string is unusable as one. */
export function parsePositiveDuration(
  input: string,
): { ok: true; ms: number } | { ok: false; message: string } {
  let ms: number;
  try {
    ms = parseGoDuration(input);
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  if (!(ms > 0)) return { ok: false, message: `duration "${input}" must be greater than zero` };
  return { ok: true, ms };
}

/** A duration in ms as Go prints it, without zero units: 5400000 → "1h30m", 45000 → "45s", 0 → "0s". */
export function formatGoDuration(ms: number): string {
  const total = Math.round(Math.abs(ms) / 1000);
  const parts: [number, string][] = [
    [Math.floor(total / 3600), 'h'],
    [Math.floor((total % 3600) / 60), 'm'],
    [total % 60, 's'],
  ];
  const text = parts
    .filter(([n]) => n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join('');
  return `${ms < 0 && text ? '-' : ''}${text || '0s'}`;
}
