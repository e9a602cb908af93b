// Time as a dependency: every runtime piece that waits or measures takes a Clock, so tests drive
// time by hand (FakeClock) instead of sleeping on a noisy machine.

export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

// setTimeout keeps its delay in 32 bits: a longer one (e.g. requeue at a yearly cron slot) fires
// at once. Long delays wait in hops; each hop re-measures on the monotonic clock, so an early
// wake-up just waits again and a wall-clock step neither shortens nor stretches a delay.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const realClock: Clock = (() => {
  const timers = new Map<number, NodeJS.Timeout>();
  let next = 1;
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      const id = next++;
      const end = performance.now() + Math.max(0, ms);
      const hop = () => {
        const remaining = end - performance.now();
        if (remaining > 0) {
          timers.set(id, setTimeout(hop, Math.min(Math.ceil(remaining), MAX_TIMEOUT_MS)));
          return;
        }
        timers.delete(id);
        fn();
      };
      timers.set(id, setTimeout(hop, Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMEOUT_MS)));
      return { id };
    },
    clearTimeout(handle) {
      const t = timers.get(handle.id);
      if (t !== undefined) {
        clearTimeout(t);
        timers.delete(handle.id);
      }
    },
  };
})();

/**
 * Resolves after `ms` on `clock`, or as soon as `signal` aborts (never rejects: callers check the
 * signal themselves, which keeps shutdown paths free of exception plumbing).
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Yields to the event loop so that every queued promise continuation runs. */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface FakeTimer {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

/** A manually advanced clock. Timers fire in (due time, creation order) order. */
export class FakeClock implements Clock {
  #now: number;
  #timers = new Map<number, FakeTimer>();
  #next = 1;

  constructor(start = Date.UTC(2025, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#next++;
    this.#timers.set(id, { id, at: this.#now + Math.max(0, ms), seq: id, fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle.id);
  }

  /** Number of timers waiting to fire. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Due time of the earliest timer, if any. */
  nextDue(): number | undefined {
    let min: number | undefined;
    for (const t of this.#timers.values()) if (min === undefined || t.at < min) min = t.at;
    return min;
  }

  /** Whether a timer waits to fire at exactly `at` (a test can wait for a requeue before moving time). */
  hasTimerAt(at: number): boolean {
    for (const t of this.#timers.values()) if (t.at === at) return true;
    return false;
  }

  #popDue(limit: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.#timers.values()) {
      if (t.at > limit) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    if (best) this.#timers.delete(best.id);
    return best;
  }

  /**
   * Moves time forward by `ms` WITHOUT firing timers, as a blocked event loop does: the timers that
   * became due fire late, at the next advance().
   */
  stall(ms: number): void {
    this.#now += ms;
  }

  /** Moves time forward by `ms`, firing due timers synchronously (no promise continuations run). */
  advanceSync(ms: number): void {
    const target = this.#now + ms;
    for (let t = this.#popDue(target); t; t = this.#popDue(target)) {
      this.#now = Math.max(this.#now, t.at);
      t.fn();
    }
    this.#now = target;
  }

  /**
   * Moves time forward by `ms`; after each timer fires, lets promise continuations run so that
   * async code can schedule follow-up timers inside the same window (what real time would do).
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await flushMicrotasks();
    for (let t = this.#popDue(target); t; t = this.#popDue(target)) {
      this.#now = Math.max(this.#now, t.at);
      t.fn();
      await flushMicrotasks();
    }
    this.#now = target;
    await flushMicrotasks();
  }
}
