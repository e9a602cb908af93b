// Rate limiters with client-go's semantics (k8s.io/client-go/util/workqueue/default_rate_limiters.go).
// `when(item)` records a failure and returns how long to wait before retrying it.

import type { Clock } from './clock.ts';

export interface RateLimiter<K> {
  /** Delay in ms before `item` may be retried; counts one more failure for it. */
  when(item: K): number;
  /** Clears the failure history of `item` (call on success). */
  forget(item: K): void;
  /** How many times `item` has been retried since the last forget. */
  numRequeues(item: K): number;
}

/** base * 2^failures, capped at max (client-go ItemExponentialFailureRateLimiter; default 5 ms → 1000 s). */
export class ItemExponentialFailureRateLimiter<K> implements RateLimiter<K> {
  readonly #failures = new Map<K, number>();
  readonly baseMs: number;
  readonly maxMs: number;

  constructor(baseMs = 5, maxMs = 1_000_000) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }

  when(item: K): number {
    const exp = this.#failures.get(item) ?? 0;
    this.#failures.set(item, exp + 1);
    // 2^exp overflows to Infinity long before it matters; Math.min keeps the cap exact.
    return Math.min(this.baseMs * 2 ** exp, this.maxMs);
  }

  forget(item: K): void {
    this.#failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.#failures.get(item) ?? 0;
  }
}

/**
 * Overall token bucket (client-go BucketRateLimiter over golang.org/x/time/rate): `qps` tokens a
 * second, up to `burst` banked. Each `when` reserves one token and returns the wait for it.
 */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  readonly #clock: Clock;
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #last: number;

  constructor(clock: Clock, qps = 10, burst = 100) {
    this.#clock = clock;
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  when(_item: K): number {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last) / 1000;
    this.#tokens = Math.min(this.#burst, this.#tokens + elapsed * this.#qps);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.#qps) * 1000);
  }

  forget(_item: K): void {}

  numRequeues(_item: K): number {
    return 0;
  }
}

/** The worst (longest) delay of several limiters (client-go MaxOfRateLimiter). */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  readonly #limiters: RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.#limiters = limiters;
  }

  when(item: K): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.when(item));
    return max;
  }

  forget(item: K): void {
    for (const l of this.#limiters) l.forget(item);
  }

  numRequeues(item: K): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.numRequeues(item));
    return max;
  }
}

/** client-go DefaultControllerRateLimiter: per-item 5 ms → 1000 s, overall 10 qps / burst 100. */
export function defaultControllerRateLimiter<K>(clock: Clock): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialFailureRateLimiter<K>(5, 1_000_000),
    new BucketRateLimiter<K>(clock, 10, 100),
  );
}
