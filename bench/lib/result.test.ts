import { describe, expect, it } from 'vitest';
import { resultsJson } from './result.ts';

describe('resultsJson', () => {
  it('keeps lists of numbers on one line and everything else indented, and parses back to the same value', () => {
    const v = { scenario: 'cron-100', lags: [{ op: [0.012, 1.5, -2, 3e-7], peer: [] }], names: ['a', 'b'] };
    const text = resultsJson(v);
    expect(text).toContain('"op": [0.012, 1.5, -2, 3e-7]');
    expect(text).toContain('"names": [\n    "a",\n    "b"\n  ]');
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual(v);
  });
});
