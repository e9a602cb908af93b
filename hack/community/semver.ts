// The semantic-version pieces the community checks need: ordering bundles, and testing a version
// against an npm-style range such as olm.skipRange ">=0.0.0 <0.1.0" (the pipeline uses
// semantic_version.NpmSpec; OLM uses blang/semver ranges, which agree on these forms).
const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

export interface Semver {
  major: number;
  minor: number;
  patch: number;
  prerelease: string[];
}

export function parseSemver(v: string): Semver {
  const m = SEMVER.exec(v.trim());
  if (!m) throw new Error(`${JSON.stringify(v)} is not a semantic version`);
  return {
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
    prerelease: m[4] ? m[4].split('.') : [],
  };
}

export function isSemver(v: unknown): boolean {
  return typeof v === 'string' && SEMVER.test(v.trim());
}

export function compareSemver(a: string, b: string): number {
  const x = parseSemver(a);
  const y = parseSemver(b);
  for (const k of ['major', 'minor', 'patch'] as const) if (x[k] !== y[k]) return x[k] - y[k];
  // A pre-release sorts before its release; identifiers compare numerically when both are numbers.
  if (x.prerelease.length === 0 || y.prerelease.length === 0)
    return y.prerelease.length - x.prerelease.length;
  for (let i = 0; i < Math.max(x.prerelease.length, y.prerelease.length); i++) {
    const p = x.prerelease[i];
    const q = y.prerelease[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

/** `version` satisfies `range`: comparators (>=, >, <=, <, =) joined by spaces (and), sets by `||`. */
export function satisfies(version: string, range: string): boolean {
  return range.split('||').some((set) =>
    set
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .every((c) => {
        const m = /^(>=|<=|>|<|=)?\s*(.+)$/.exec(c);
        if (!m) throw new Error(`invalid range ${JSON.stringify(range)}`);
        const d = compareSemver(version, m[2]!);
        switch (m[1]) {
          case '>=':
            return d >= 0;
          case '<=':
            return d <= 0;
          case '>':
            return d > 0;
          case '<':
            return d < 0;
          default:
            return d === 0;
        }
      }),
  );
}
