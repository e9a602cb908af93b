// A short-lived memory of the SubjectAccessReviews that said "allowed", keyed by the whole review (user,
// groups, uid, extra, namespace, verb, resource, name), as the API server's own webhook authorizer keeps
// its answers (--authorization-webhook-cache-authorized-ttl, 5 min by default). A requester who creates
// Operations in a burst then pays the review once, not per request. Only "allowed" is kept: a denial is
// asked again every time, so a new grant works at once; a revoked grant is honoured by the webhook
// within the TTL (ADMISSION_ACCESS_CACHE_SECONDS; 0 turns the memory off). Pure apart from the clock.
import type { Clock } from '@vworkspace/runtime';
import type { AccessResult } from './decision.ts';

export const DEFAULT_ACCESS_CACHE_SECONDS = 10;
/** Bounds the memory: the oldest answer goes first once this many are kept. */
export const ACCESS_CACHE_ENTRIES = 10_000;

export class AccessCache {
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #max: number;
  readonly #entries = new Map<string, { result: AccessResult; until: number }>();

  constructor(ttlSeconds: number, clock: Clock, maxEntries = ACCESS_CACHE_ENTRIES) {
    this.#ttlMs = ttlSeconds * 1000;
    this.#clock = clock;
    this.#max = maxEntries;
  }

  /** The kept answer for `key`, while it is fresh. */
  get(key: string): AccessResult | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (this.#clock.now() >= e.until) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.result;
  }

  /** Keeps `result` when it allows (and the memory is on); a denial is never kept. */
  remember(key: string, result: AccessResult): void {
    if (this.#ttlMs <= 0 || !result.allowed) return;
    this.#entries.delete(key); // re-inserted last: Map order is the eviction order
    this.#entries.set(key, { result, until: this.#clock.now() + this.#ttlMs });
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}
