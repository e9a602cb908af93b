import { describe, expect, it } from 'vitest';
import { interleaved } from './interleave.ts';

const KINDS = ['bare', 'operator', 'null', 'patched'] as const;

describe('interleaved', () => {
  it('holds every kind once in each block', () => {
    const order = interleaved(KINDS, 4_000);
    expect(order).toHaveLength(4_000);
    for (let b = 0; b < order.length; b += KINDS.length)
      expect([...order.slice(b, b + KINDS.length)].sort()).toEqual([...KINDS].sort());
  });

  it('mixes the order: each kind takes each place in a block about equally often', () => {
    const order = interleaved(KINDS, 4_000);
    for (const kind of KINDS)
      for (let place = 0; place < KINDS.length; place++) {
        const times = order.filter((k, i) => k === kind && i % KINDS.length === place).length;
        // 1,000 blocks: 250 each on average; a fixed rotation would give 0 or 1,000.
        expect(times).toBeGreaterThan(150);
        expect(times).toBeLessThan(350);
      }
  });

  it('repeats for a seed and differs between seeds', () => {
    expect(interleaved(KINDS, 400, 7)).toEqual(interleaved(KINDS, 400, 7));
    expect(interleaved(KINDS, 400, 7)).not.toEqual(interleaved(KINDS, 400, 8));
  });

  it('cuts the last block short to give exactly n', () => {
    expect(interleaved(KINDS, 6)).toHaveLength(6);
    expect(interleaved(KINDS, 0)).toEqual([]);
  });
});
