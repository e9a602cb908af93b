import { describe, expect, it } from 'vitest';
import { fmt, quantile, ratio, spread } from './stats.ts';

describe('bench statistics', () => {
  it('takes quantiles by nearest rank', () => {
    const v = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted input
    expect(quantile(v, 0.5)).toBe(50);
    expect(quantile(v, 0.99)).toBe(99);
    expect(quantile(v, 1)).toBe(100);
    expect(quantile([7], 0.99)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it('summarises runs as min / median / max and compares medians', () => {
    expect(spread([3, 1, 2])).toEqual({ min: 1, median: 2, max: 3, runs: [3, 1, 2] });
    expect(spread([4, 1, 2, 3]).median).toBe(2.5);
    expect(spread([Number.NaN, 2]).median).toBe(2);
    expect(ratio(spread([2, 2, 2]), spread([4, 4, 4]))).toBe(0.5);
    expect(ratio(spread([0]), spread([0]))).toBe(1);
    expect(ratio(spread([1]), spread([0]))).toBe(Number.POSITIVE_INFINITY);
    expect(fmt(0.01234, ' s')).toBe('0.012 s');
    expect(fmt(12.345)).toBe('12.3');
    expect(fmt(1234.5)).toBe('1235');
    expect(fmt(Number.NaN)).toBe('—');
  });
});
