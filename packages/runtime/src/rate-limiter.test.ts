import { describe, expect, it } from 'vitest';
import { FakeClock } from './clock.ts';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
} from './rate-limiter.ts';

describe('rate limiters', () => {
  it('item exponential backoff is per key', () => {
    const l = new ItemExponentialFailureRateLimiter<string>(5, 1000);
    expect([l.when('a'), l.when('a'), l.when('b'), l.when('a')]).toEqual([5, 10, 5, 20]);
    for (let i = 0; i < 10; i++) l.when('a');
    expect(l.when('a')).toBe(1000);
  });

  it('bucket: burst is free, then one token per 1/qps, refilled over time', () => {
    const clock = new FakeClock();
    const l = new BucketRateLimiter<string>(clock, 10, 3);
    expect([l.when('x'), l.when('x'), l.when('x')]).toEqual([0, 0, 0]);
    expect(l.when('x')).toBe(100);
    expect(l.when('x')).toBe(200);
    clock.advanceSync(1000);
    // 1 s refills 10 tokens, but 2 were owed and the bucket holds at most 3.
    expect(l.when('x')).toBe(0);
  });

  it('max-of takes the longest delay and forgets in every limiter', () => {
    const clock = new FakeClock();
    const l = new MaxOfRateLimiter<string>(
      new ItemExponentialFailureRateLimiter<string>(5, 1000),
      new BucketRateLimiter<string>(clock, 1, 1),
    );
    expect(l.when('a')).toBe(5);
    expect(l.when('a')).toBe(1000);
    expect(l.numRequeues('a')).toBe(2);
    l.forget('a');
    expect(l.numRequeues('a')).toBe(0);
  });

  it('the default controller limiter starts at 5 ms', () => {
    const l = defaultControllerRateLimiter<string>(new FakeClock());
    expect(l.when('a')).toBe(5);
    expect(l.when('a')).toBe(10);
  });
});
