// How late the event loop runs timers: one thread serves reconciles, the webhook, the probes and the
// Lease renewal, so a task that holds it for seconds delays all of them. A 1 s timer measures its
// own lateness; the longest delay of the last window is reported in /readyz (?verbose shows it), and
// readiness fails while it is above a threshold, so an overloaded replica stops receiving webhook
// calls it cannot answer in time. Stalls of a second or more are logged with their length.

import type { CheckResult } from './health.ts';
import { type Logger, silentLogger } from './logger.ts';

export interface EventLoopMonitorOptions {
  intervalMs?: number;
  /** Delays are remembered this long (default 10 s). */
  windowMs?: number;
  /** Readiness fails while the window holds a delay this long or longer (default 5 s). */
  unreadyAfterMs?: number;
  logger?: Logger;
  /** Monotonic milliseconds (tests drive it). */
  now?: () => number;
}

const LOG_STALL_MS = 1_000;

export class EventLoopMonitor {
  readonly #interval: number;
  readonly #window: number;
  readonly #unreadyAfter: number;
  readonly #log: Logger;
  readonly #now: () => number;
  /** [time, delay] samples of the window, oldest first. */
  #samples: [number, number][] = [];
  #expected = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: EventLoopMonitorOptions = {}) {
    // Once a second: readiness cares about stalls of seconds, and a stall delays the next tick by its
    // whole length whatever the interval, and a shorter timer costs an idle process measurable CPU.
    this.#interval = opts.intervalMs ?? 1_000;
    this.#window = opts.windowMs ?? 10_000;
    this.#unreadyAfter = opts.unreadyAfterMs ?? 5_000;
    this.#log = opts.logger ?? silentLogger;
    this.#now = opts.now ?? (() => performance.now());
  }

  start(): void {
    if (this.#timer) return;
    this.#expected = this.#now() + this.#interval;
    this.#timer = setInterval(() => this.sample(), this.#interval);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Records one tick (the timer calls it; tests call it with a driven clock). */
  sample(): void {
    const now = this.#now();
    const delay = Math.max(0, now - this.#expected);
    this.#expected = now + this.#interval;
    this.#samples.push([now, delay]);
    while (this.#samples.length > 0 && this.#samples[0]![0] < now - this.#window) this.#samples.shift();
    if (delay >= LOG_STALL_MS)
      this.#log.warn(
        { delayMs: Math.round(delay) },
        'event loop was blocked; timers, probes and webhooks waited',
      );
  }

  /** The longest delay in the window, in ms. */
  maxDelayMs(): number {
    let max = 0;
    for (const [, d] of this.#samples) max = Math.max(max, d);
    return max;
  }

  check(): CheckResult {
    const max = Math.round(this.maxDelayMs());
    return {
      ok: max < this.#unreadyAfter,
      detail: `longest delay ${max} ms in the last ${this.#window / 1000} s`,
    };
  }
}
