// A work queue with client-go's semantics (k8s.io/client-go/util/workqueue):
// - a key waiting in the queue is stored once however often it is added (the dirty set);
// - a key is handed to at most one worker at a time (the processing set);
// - a key added while it is being processed runs again after `done`;
// - per-key exponential backoff through a RateLimiter (`addRateLimited`, `forget`, `numRequeues`);
// - delayed adds (`addAfter`), keeping the earliest deadline when a key is delayed twice;
// - shutdown stops accepting keys; workers still get what is queued and in-flight work finishes.

import { type Clock, realClock, type TimerHandle } from './clock.ts';
import { Fifo } from './fifo.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.ts';

/** Hooks for the controller-runtime workqueue_* metrics (see metrics.ts). Durations in seconds. */
export interface QueueMetrics {
  depth(n: number): void;
  add(): void;
  retry(): void;
  queueDuration(seconds: number): void;
  workDuration(seconds: number): void;
}

export const noopQueueMetrics: QueueMetrics = {
  depth() {},
  add() {},
  retry() {},
  queueDuration() {},
  workDuration() {},
};

export interface WorkQueueOptions<K> {
  name: string;
  clock?: Clock;
  rateLimiter?: RateLimiter<K>;
  metrics?: QueueMetrics;
}

export type QueueItem<K> = { key: K; shutdown: false } | { shutdown: true };

interface Delayed {
  at: number;
  handle: TimerHandle;
}

export class WorkQueue<K> {
  readonly name: string;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter<K>;
  readonly #metrics: QueueMetrics;

  readonly #queue = new Fifo<K>();
  readonly #dirty = new Set<K>();
  readonly #processing = new Set<K>();
  readonly #addedAt = new Map<K, number>();
  readonly #startedAt = new Map<K, number>();
  readonly #delayed = new Map<K, Delayed>();
  #waiters: ((item: QueueItem<K>) => void)[] = [];
  #drainWaiters: (() => void)[] = [];
  #shuttingDown = false;

  constructor(opts: WorkQueueOptions<K>) {
    this.name = opts.name;
    this.#clock = opts.clock ?? realClock;
    this.#limiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(this.#clock);
    this.#metrics = opts.metrics ?? noopQueueMetrics;
  }

  /** Keys waiting to be handed out (not counting those being processed or delayed). */
  len(): number {
    return this.#queue.length;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  isProcessing(key: K): boolean {
    return this.#processing.has(key);
  }

  /** When each key being processed was handed out (ms on the queue's clock). */
  inFlightSince(): Iterable<number> {
    return this.#startedAt.values();
  }

  /** Keys waiting on addAfter/addRateLimited timers. */
  delayedCount(): number {
    return this.#delayed.size;
  }

  add(key: K): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(key)) return;
    this.#metrics.add();
    this.#dirty.add(key);
    this.#addedAt.set(key, this.#clock.now());
    // Being processed: `done` will queue it again, so a second worker never gets it meanwhile.
    if (this.#processing.has(key)) return;
    this.#queue.push(key);
    this.#metrics.depth(this.#queue.length);
    this.#deliver();
  }

  /** Adds `key` after `ms`. A key already waiting keeps the earlier of its two deadlines. */
  addAfter(key: K, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.#clock.now() + ms;
    const existing = this.#delayed.get(key);
    if (existing) {
      if (existing.at <= at) return;
      this.#clock.clearTimeout(existing.handle);
    }
    const handle = this.#clock.setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { at, handle });
  }

  /** When `key` waits in a delayed add, the instant it is due (a test proves a requeue's exact time). */
  dueAt(key: K): number | undefined {
    return this.#delayed.get(key)?.at;
  }

  /** Adds `key` after its rate limiter's backoff (one more failure counted). */
  addRateLimited(key: K): void {
    if (this.#shuttingDown) return;
    // client-go counts retries here only: a requeueAfter or a batched event is not a retry.
    this.#metrics.retry();
    this.addAfter(key, this.#limiter.when(key));
  }

  /** Resets the backoff of `key` (call when it was processed successfully). */
  forget(key: K): void {
    this.#limiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.#limiter.numRequeues(key);
  }

  /**
   * Waits for the next key. After shutdown, queued keys are still handed out; once the queue is
   * empty every caller gets `{ shutdown: true }`. Every key received must be passed to `done`.
   */
  get(): Promise<QueueItem<K>> {
    if (this.#queue.length > 0) return Promise.resolve({ key: this.#take(), shutdown: false });
    if (this.#shuttingDown) return Promise.resolve({ shutdown: true });
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key` finished; if it was added meanwhile it goes back in the queue. */
  done(key: K): void {
    if (!this.#processing.delete(key)) return;
    const started = this.#startedAt.get(key);
    this.#startedAt.delete(key);
    if (started !== undefined) this.#metrics.workDuration((this.#clock.now() - started) / 1000);
    if (this.#dirty.has(key)) {
      this.#queue.push(key);
      this.#metrics.depth(this.#queue.length);
    }
    this.#deliver();
  }

  /**
   * Stops accepting keys and drops delayed ones; workers finish what is queued and in flight.
   * `dropQueued` also discards queued keys (and re-adds of in-flight ones): only in-flight work
   * finishes. Use it when this replica must stop working at once (leadership lost).
   */
  shutDown(opts: { dropQueued?: boolean } = {}): void {
    if (opts.dropQueued) {
      this.#queue.clear();
      this.#dirty.clear();
      this.#addedAt.clear();
      this.#metrics.depth(0);
    }
    if (this.#shuttingDown) {
      this.#deliver();
      return;
    }
    this.#shuttingDown = true;
    for (const d of this.#delayed.values()) this.#clock.clearTimeout(d.handle);
    this.#delayed.clear();
    this.#deliver();
  }

  /** shutDown, then resolves once the queue is empty and no key is being processed. */
  shutDownWithDrain(opts: { dropQueued?: boolean } = {}): Promise<void> {
    this.shutDown(opts);
    if (this.#drained()) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /**
   * Runs `n` workers until shutdown. `handler` should handle its own errors; if it throws anyway
   * the key is retried with backoff rather than lost. Resolves when every worker has exited.
   */
  async runWorkers(n: number, handler: (key: K) => Promise<void> | void): Promise<void> {
    const worker = async () => {
      for (;;) {
        const item = await this.get();
        if (item.shutdown) return;
        try {
          await handler(item.key);
        } catch {
          this.addRateLimited(item.key);
        } finally {
          this.done(item.key);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, n) }, worker));
  }

  #take(): K {
    const key = this.#queue.shift() as K; // callers check the length first
    this.#metrics.depth(this.#queue.length);
    this.#processing.add(key);
    this.#dirty.delete(key);
    const now = this.#clock.now();
    const added = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (added !== undefined) this.#metrics.queueDuration((now - added) / 1000);
    this.#startedAt.set(key, now);
    return key;
  }

  #drained(): boolean {
    return this.#queue.length === 0 && this.#processing.size === 0;
  }

  #deliver(): void {
    while (this.#waiters.length > 0 && this.#queue.length > 0) {
      const waiter = this.#waiters.shift()!;
      waiter({ key: this.#take(), shutdown: false });
    }
    if (!this.#shuttingDown) return;
    if (this.#queue.length === 0) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w({ shutdown: true });
    }
    if (this.#drained()) {
      const drains = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const d of drains) d();
    }
  }
}
