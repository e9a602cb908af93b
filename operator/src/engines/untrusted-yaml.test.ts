import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { aHookJob } from '../../../test/support/builders/engines.ts';
import { checkParametersLimits } from '../catalog/parameters-limits.ts';
import {
  MAX_MANIFEST_BYTES,
  MAX_MANIFEST_DEPTH,
  nestingBound,
  parseUntrustedYaml,
} from './untrusted-yaml.ts';

/** The nesting of a parsed value (objects and arrays inside each other), the root being level 1. */
function depthOf(value: unknown): number {
  for (let d = 1; ; d++)
    if (checkParametersLimits(value, { depth: d, bytes: Number.POSITIVE_INFINITY }).ok) return d;
}

describe('nestingBound', () => {
  it('is at least the real nesting of any value, written as block or flow YAML', () => {
    // Strings made of YAML's indicators: brackets, quotes, colons, comments, block scalars inside scalars.
    const tricky = (o: { minLength?: number; maxLength?: number } = {}) =>
      fc.string({ ...o, unit: fc.constantFrom(...'[]{}:,"\'#-|>&!? a\n') });
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.oneof(fc.string({ unit: 'binary' }), tricky(), fc.integer(), fc.boolean(), fc.constant(null)),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(tricky({ minLength: 1, maxLength: 8 }), tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const depth = typeof v === 'object' && v !== null ? depthOf(v) : 0;
        for (const text of [YAML.stringify(v), JSON.stringify(v)]) {
          expect(nestingBound(text)).toBeGreaterThanOrEqual(depth);
        }
      }),
      { numRuns: 300 },
    );
  }, 60_000);

  it('stays small for a real Job manifest, scripts in block scalars included', () => {
    const job = aHookJob('migrate', {
      containers: [
        {
          name: 'migrate',
          image: 'app:1',
          command: [
            'sh',
            '-ec',
            `${Array.from({ length: 40 }, (_, i) => `${' '.repeat(i * 2)}if [ x ]; then`).join('\n')}\n`,
          ],
        },
      ],
    });
    expect(nestingBound(YAML.stringify(job))).toBeLessThan(MAX_MANIFEST_DEPTH / 2);
  });

  it('counts 100,000 brackets or compact indicators in linear time', () => {
    expect(nestingBound(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toBeGreaterThanOrEqual(100_000);
    expect(nestingBound(`${'- '.repeat(100_000)}x`)).toBeGreaterThanOrEqual(100_000);
  });
});

describe('parseUntrustedYaml', () => {
  it('parses a manifest', () => {
    expect(parseUntrustedYaml('kind: Job\nspec: {a: [1]}\n')).toEqual({
      ok: true,
      value: { kind: 'Job', spec: { a: [1] } },
    });
  });

  it('refuses what is too large, too deep or not YAML, in a sentence', () => {
    const big = parseUntrustedYaml(`a: "${'x'.repeat(MAX_MANIFEST_BYTES)}"`);
    expect(big).toEqual({ ok: false, problem: expect.stringMatching(/^is 257 KiB, more than the 256 KiB/) });
    for (const deep of [`${'['.repeat(100_000)}${']'.repeat(100_000)}`, `${'- '.repeat(100_000)}x`]) {
      expect(parseUntrustedYaml(deep)).toEqual({
        ok: false,
        problem: expect.stringMatching(/^is nested more than 64 levels deep/),
      });
    }
    expect(parseUntrustedYaml('spec: [unclosed\n')).toEqual({
      ok: false,
      problem: expect.stringMatching(/^is not valid YAML \(.+line 2, column 1/),
    });
  });

  it('refuses nesting that aliases build although the text is shallow', () => {
    const lines = ['a0: &a0 [x]'];
    for (let i = 1; i < 70; i++) lines.push(`a${i}: &a${i} [*a${i - 1}]`);
    const r = parseUntrustedYaml(lines.join('\n'));
    expect(r.ok).toBe(false);
  });
});
