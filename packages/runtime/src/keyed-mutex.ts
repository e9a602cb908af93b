// Mutual exclusion per key for async work: `run(key, fn)` starts `fn` once every earlier `run` with
// the same key has settled; different keys run concurrently. The work queue already keeps ONE key on
// one worker; this serialises a group of keys (e.g. the Operations on one target) whose decisions read
// each other's state, so N workers never decide two of them at once.

export class KeyedMutex {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<R>(key: string, fn: () => Promise<R>): Promise<R> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const mine = previous.then(fn, fn);
    // The chain continues whether `fn` resolves or rejects; the caller still sees its own outcome.
    const tail = mine.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    try {
      return await mine;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with work running or waiting (for tests). */
  get size(): number {
    return this.#tails.size;
  }
}
