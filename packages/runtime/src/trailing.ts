// Keys that trail an Activity (activity.ts): each waits at least `batchMs` after it was first added
// (the events of a burst for one key become one reconcile, as with a batched watch), then for a lull
// of the activity, at most `maxMs` after it was first added. One timer serves every key: a key's due
// time only grows with the instant it was first added, so the oldest key is always due first.

import type { TrailOptions } from './activity.ts';
import type { TimerHandle } from './clock.ts';

export class Trailing<K> {
  readonly #batchMs: number;
  readonly #trail: TrailOptions;
  readonly #release: (key: K) => void;
  /** When each waiting key was first added, oldest first (a Map keeps insertion order). */
  readonly #since = new Map<K, number>();
  #timer: { handle: TimerHandle; at: number } | undefined;

  constructor(batchMs: number, trail: TrailOptions, release: (key: K) => void) {
    this.#batchMs = Math.max(0, batchMs);
    this.#trail = trail;
    this.#release = release;
  }

  /** Keys waiting for their turn. */
  get size(): number {
    return this.#since.size;
  }

  /** Queues `key` for release; a key already waiting keeps its first instant. */
  add(key: K): void {
    if (!this.#since.has(key)) this.#since.set(key, this.#trail.activity.clock.now());
    this.#arm();
  }

  /** Drops every waiting key (the controller stopped; a restart reconciles everything anyway). */
  clear(): void {
    this.#since.clear();
    if (this.#timer) this.#trail.activity.clock.clearTimeout(this.#timer.handle);
    this.#timer = undefined;
  }

  #dueAt(since: number): number {
    const { activity, maxMs } = this.#trail;
    return Math.max(since + this.#batchMs, Math.min(activity.quietFrom(), since + Math.max(maxMs, 0)));
  }

  #arm(): void {
    const oldest = this.#since.values().next();
    if (oldest.done) return;
    const at = this.#dueAt(oldest.value);
    if (this.#timer && this.#timer.at <= at) return;
    const clock = this.#trail.activity.clock;
    if (this.#timer) clock.clearTimeout(this.#timer.handle);
    this.#timer = { at, handle: clock.setTimeout(() => this.#fire(), at - clock.now()) };
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#trail.activity.clock.now();
    for (const [key, since] of this.#since) {
      if (this.#dueAt(since) > now) break;
      this.#since.delete(key);
      this.#release(key);
    }
    this.#arm();
  }
}
