// A first-in first-out queue with O(1) push and shift at any length.
//
// Array.prototype.shift moves every remaining element once the array's backing store is too large for
// V8 to trim in place (tens of thousands of elements): a work queue holding every object of a 100k-object
// cache after a start then cost O(N²) to drain, one event-loop block of about 20 s (bench footprint at
// 100k + 100k; docs/performance.md). Here a head index moves instead, and the array is compacted once the
// consumed part is at least half of it, so each element is copied at most once more on average.
// ADR 0061 says why this is ours rather than a package.

const COMPACT_AT = 1024;

export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined; // not kept alive by the consumed part
    if (this.#head === this.#items.length) this.clear();
    else if (this.#head >= COMPACT_AT && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
