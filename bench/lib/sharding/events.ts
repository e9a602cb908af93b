// The discrete-event core of the sharding simulation: a virtual clock and a queue of events ordered by
// time, then by the order they were scheduled (so equal times run first-come, first-served and a run is
// a function of its seed alone). No timers, no I/O.

interface Entry {
  at: number;
  seq: number;
  run: () => void;
}

export class EventQueue {
  #now = 0;
  #seq = 0;
  readonly #heap: Entry[] = [];

  /** The virtual time, in ms, of the event running now. */
  get now(): number {
    return this.#now;
  }

  /** Runs `run` at virtual time `at` (never before now). */
  schedule(at: number, run: () => void): void {
    this.#push({ at: Math.max(at, this.#now), seq: this.#seq++, run });
  }

  /** Runs events in order until none is left or the next is later than `until`. */
  runUntil(until: number): void {
    while (this.#heap.length > 0 && this.#heap[0]!.at <= until) {
      const e = this.#pop();
      this.#now = e.at;
      e.run();
    }
    this.#now = Math.max(this.#now, until);
  }

  #before(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(e: Entry): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#before(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): Entry {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#before(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
