// Exponential backoff with jitter for reconnect loops (informers, leader election retries).

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  factor?: number;
  /** Each delay is stretched by up to this fraction at random (0 = deterministic). */
  jitter?: number;
  random?: () => number;
}

export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #current: number;

  constructor(opts: BackoffOptions = {}) {
    this.#initial = opts.initialMs ?? 1000;
    this.#max = opts.maxMs ?? 30_000;
    this.#factor = opts.factor ?? 2;
    this.#jitter = opts.jitter ?? 0.2;
    this.#random = opts.random ?? Math.random;
    this.#current = this.#initial;
  }

  /** The next delay; each call grows the following one up to the maximum. */
  next(): number {
    const base = this.#current;
    this.#current = Math.min(this.#max, this.#current * this.#factor);
    return Math.round(base * (1 + this.#jitter * this.#random()));
  }

  reset(): void {
    this.#current = this.#initial;
  }
}
