// Foreground activity, and bookkeeping that trails it (docs/adr/0062-bookkeeping-trails-a-burst.md).
//
// Some writes are what users wait for (an Operation's child, its status); others only report on them
// (an instance's summary of its Operations, Events). On a busy API server every write costs the same,
// so during a burst the reporting writes delay the ones users wait for. The foreground controllers
// touch an Activity whenever they work; reporting work waits for a lull — nothing touched it for
// `quietMs` — and never longer than `maxMs`, which bounds how stale a report gets under sustained load.
// client-go's event broadcaster and kube-controller-manager's batch periods make the same trade: a
// report may lag, the work may not.

import { type Clock, realClock, sleep } from './clock.ts';

export interface ActivityOptions {
  /** How long nothing must have touched it before reporting work goes ahead. */
  quietMs: number;
  clock?: Clock;
}

export class Activity {
  readonly quietMs: number;
  readonly #clock: Clock;
  #last = Number.NEGATIVE_INFINITY;

  constructor(opts: ActivityOptions) {
    this.quietMs = Math.max(0, opts.quietMs);
    this.#clock = opts.clock ?? realClock;
  }

  get clock(): Clock {
    return this.#clock;
  }

  /** Foreground work happened now. */
  touch(): void {
    this.#last = this.#clock.now();
  }

  /** The instant from which it is quiet, unless touched again before. */
  quietFrom(): number {
    return this.#last + this.quietMs;
  }

  /** Resolves once it is quiet, or at `deadline` (ms on its clock), or when `signal` aborts. */
  async lull(deadline: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const now = this.#clock.now();
      const at = Math.min(this.quietFrom(), deadline);
      if (now >= at || signal?.aborted) return;
      await sleep(this.#clock, at - now, signal);
    }
  }
}

/** Reporting work that trails an Activity: it waits for a lull, at most `maxMs`. */
export interface TrailOptions {
  activity: Activity;
  maxMs: number;
}
