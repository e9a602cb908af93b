// The operator's only source of time. Everything time-based takes a Clock, so tests drive time with FakeClock
// instead of sleeping (and never assert on real durations).

export interface Timer {
  /** Idempotent; a cancelled timer never fires. */
  cancel(): void;
}

export interface Clock {
  now(): Date;
  /** Run `fn` once: at `at` when it is a Date, or after `at` milliseconds when it is a number. */
  setTimer(at: Date | number, fn: () => void): Timer;
}

// setTimeout stores its delay in 32 bits: anything longer fires at once. Long timers wait in hops.
const MAX_TIMEOUT = 2 ** 31 - 1;

class RealClock implements Clock {
  now(): Date {
    return new Date();
  }

  setTimer(at: Date | number, fn: () => void): Timer {
    // Absolute deadlines follow the wall clock; relative delays follow the monotonic clock, so a wall-clock step
    // neither shortens nor stretches them. Each hop re-measures, so early wake-ups just wait again.
    const remaining =
      typeof at === 'number'
        ? (
            (end: number) => () =>
              end - performance.now()
          )(performance.now() + Math.max(0, at))
        : (
            (end: number) => () =>
              end - Date.now()
          )(at.getTime());
    let handle: ReturnType<typeof setTimeout> | undefined;
    let done = false;
    const hop = () => {
      if (done) return;
      const r = remaining();
      if (r > 0) {
        handle = setTimeout(hop, Math.min(Math.ceil(r), MAX_TIMEOUT));
        return;
      }
      done = true;
      fn();
    };
    handle = setTimeout(hop, Math.min(Math.max(0, Math.ceil(remaining())), MAX_TIMEOUT));
    return {
      cancel: () => {
        done = true;
        if (handle !== undefined) clearTimeout(handle);
      },
    };
  }
}

export const realClock: Clock = new RealClock();

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A manual clock for tests. Time stands still until advance()/advanceTo(); due timers then fire in order of
 * due time (ties: creation order), each seeing now() equal to its own due time. Timers set by a firing timer
 * fire in the same advance if they fall due within it. A timer set for the past fires at the next advance.
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  constructor(start: Date | number = Date.UTC(2025, 0, 1)) {
    this.#now = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  setTimer(at: Date | number, fn: () => void): Timer {
    const due = typeof at === 'number' ? this.#now + Math.max(0, at) : at.getTime();
    const timer: FakeTimer = { at: due, seq: this.#seq++, fn };
    this.#timers.push(timer);
    return {
      cancel: () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
      },
    };
  }

  /** Move time forward by `ms`, firing every timer that falls due. Returns how many fired. */
  advance(ms: number): number {
    if (ms < 0) throw new RangeError('FakeClock cannot go backwards');
    return this.advanceTo(this.#now + ms);
  }

  /** Move time to `to` (not backwards), firing every timer due by then. Returns how many fired. */
  advanceTo(to: Date | number): number {
    const target = typeof to === 'number' ? to : to.getTime();
    if (target < this.#now) throw new RangeError('FakeClock cannot go backwards');
    let fired = 0;
    for (let t = this.#takeDue(target); t; t = this.#takeDue(target)) {
      this.#now = Math.max(this.#now, t.at);
      fired++;
      t.fn();
    }
    this.#now = target;
    return fired;
  }

  /**
   * advance() for async code: after each timer (and before returning) lets pending promise callbacks and
   * immediates run, so work a timer starts can set its follow-up timers in time to fire within this advance.
   */
  async advanceAsync(ms: number): Promise<number> {
    if (ms < 0) throw new RangeError('FakeClock cannot go backwards');
    const target = this.#now + ms;
    let fired = 0;
    await settle();
    for (let t = this.#takeDue(target); t; t = this.#takeDue(target)) {
      this.#now = Math.max(this.#now, t.at);
      fired++;
      t.fn();
      await settle();
    }
    this.#now = target;
    return fired;
  }

  /** Timers still waiting. */
  pending(): number {
    return this.#timers.length;
  }

  /** When the earliest waiting timer is due. */
  nextDue(): Date | undefined {
    const t = this.#earliest();
    return t ? new Date(t.at) : undefined;
  }

  #earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }

  #takeDue(target: number): FakeTimer | undefined {
    const t = this.#earliest();
    if (!t || t.at > target) return undefined;
    this.#timers = this.#timers.filter((x) => x !== t);
    return t;
  }
}

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Resolves after `ms` on `clock`; rejects with the signal's reason if aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
