// One copy of the short strings the cache holds over and over. JSON.parse makes a new string for every
// value it reads, so each cached object carries its own copy of its namespace, apiVersion, condition
// types, reasons and statuses, engine and phase names, images and timestamps: about a fifth of what an
// object costs in the cache (docs/performance.md, issue 26 item 3). The informer passes every string
// value it stores through one StringTable, which hands back the copy it already holds.
//
// The table is bounded: when full it starts afresh, so the unique strings (uids, names,
// resourceVersions) pass through without piling up, and a repeated string is kept again the next time
// it is seen. A string dropped that way stays shared by the objects that took it. Long strings
// (messages, which mostly name their object) are left as they are.

/** Strings longer than this are never shared: rarely repeated, and hashing them costs more. */
export const SHARED_STRING_MAX_LENGTH = 64;
const DEFAULT_CAPACITY = 8_192;

export class StringTable {
  readonly #capacity: number;
  #strings = new Map<string, string>();

  constructor(capacity = DEFAULT_CAPACITY) {
    this.#capacity = Math.max(1, capacity);
  }

  /** The table's copy of `s` (taking `s` as that copy when it has none). */
  share(s: string): string {
    if (s.length > SHARED_STRING_MAX_LENGTH) return s;
    const kept = this.#strings.get(s);
    if (kept !== undefined) return kept;
    if (this.#strings.size >= this.#capacity) this.#strings = new Map();
    this.#strings.set(s, s);
    return s;
  }

  get size(): number {
    return this.#strings.size;
  }
}

/** The table every informer's cache shares: namespaces and API versions repeat across resources too. */
export const cacheStrings = new StringTable();
