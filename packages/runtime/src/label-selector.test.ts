import { describe, expect, it } from 'vitest';
import { matchesLabelSelector } from './label-selector.ts';

describe('matchesLabelSelector', () => {
  it('matches equality selectors and says when it cannot tell', () => {
    expect(matchesLabelSelector('', undefined)).toBe(true);
    expect(matchesLabelSelector('a=b,c', { a: 'b', c: '' })).toBe(true);
    expect(matchesLabelSelector('a==b', { a: 'c' })).toBe(false);
    expect(matchesLabelSelector('a!=b', {})).toBe(true);
    expect(matchesLabelSelector('!a', { a: 'x' })).toBe(false);
    expect(matchesLabelSelector('a in (b)', { a: 'b' })).toBeUndefined();
  });
});
