// The informer's store: objects by key with secondary indexes, client-go's cache.Indexer.
//
// Reads are the hot path of every controller (key mappers run per watch event, reconciles per key,
// metrics per scrape), so a lookup by namespace, target or owner must cost the size of the answer,
// not a scan of the whole cache. Index functions map an object to the values it is found under
// (`byIndex(name, value)`); the namespace index always exists.
//
// Objects are stored as given: the informer hands in frozen objects and hands out the same ones.

import type { KubernetesObject } from '@kubernetes/client-node';

/** The values `obj` is indexed under (none: undefined, null or []). Must depend on `obj` alone. */
export type IndexFunc<T> = (obj: T) => string | readonly string[] | undefined | null;

export const NAMESPACE_INDEX = 'namespace';

/**
 * The keys filed under one index value: the key itself while it is the only one, a Set from the second on.
 * Most values of an index by target or by release name one object, and a Set for one key costs about
 * 150 bytes more than the key: at 100,000 objects that was 30 MiB for two indexes (docs/performance.md).
 */
type Keys = string | Set<string>;

function valuesOf<T>(fn: IndexFunc<T>, obj: T): readonly string[] {
  const v = fn(obj);
  if (v === undefined || v === null) return [];
  return typeof v === 'string' ? [v] : v;
}

export class Indexer<T extends KubernetesObject> {
  #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunc<T>>();
  /** index name → value → keys */
  readonly #indices = new Map<string, Map<string, Keys>>();

  constructor() {
    this.addIndexer(NAMESPACE_INDEX, (o) => o.metadata?.namespace);
  }

  /**
   * Adds an index and fills it from what is stored. A name is taken once: a second indexer of the
   * same name is ignored and false returned (controllers sharing one informer may ask for the same
   * index; give different functions different names).
   */
  addIndexer(name: string, fn: IndexFunc<T>): boolean {
    if (this.#indexers.has(name)) return false;
    this.#indexers.set(name, fn);
    const index = new Map<string, Keys>();
    this.#indices.set(name, index);
    for (const [key, obj] of this.#items) this.#addTo(index, fn, key, obj);
    return true;
  }

  hasIndexer(name: string): boolean {
    return this.#indexers.has(name);
  }

  get size(): number {
    return this.#items.size;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }

  entries(): IterableIterator<[string, T]> {
    return this.#items.entries();
  }

  /** Stores `obj` under `key`; returns what was there. */
  set(key: string, obj: T): T | undefined {
    const old = this.#items.get(key);
    if (old !== undefined) this.#unindex(key, old);
    this.#items.set(key, obj);
    for (const [name, fn] of this.#indexers) this.#addTo(this.#indices.get(name)!, fn, key, obj);
    return old;
  }

  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (old === undefined) return undefined;
    this.#unindex(key, old);
    this.#items.delete(key);
    return old;
  }

  /** Replaces everything (a relist); returns the previous contents. */
  replace(items: Map<string, T>): Map<string, T> {
    const old = this.#items;
    this.#items = items;
    for (const [name, fn] of this.#indexers) {
      const index = new Map<string, Keys>();
      this.#indices.set(name, index);
      for (const [key, obj] of items) this.#addTo(index, fn, key, obj);
    }
    return old;
  }

  /** The values index `name` files `obj` under (none for an unknown index). */
  indexValues(name: string, obj: T): readonly string[] {
    const fn = this.#indexers.get(name);
    return fn ? valuesOf(fn, obj) : [];
  }

  /** Keys of the objects indexed under `value` by index `name` (throws for an unknown index). */
  indexKeys(name: string, value: string): string[] {
    const index = this.#indices.get(name);
    if (!index) throw new Error(`no index named ${JSON.stringify(name)}`);
    const keys = index.get(value);
    if (keys === undefined) return [];
    return typeof keys === 'string' ? [keys] : [...keys];
  }

  byIndex(name: string, value: string): T[] {
    const out: T[] = [];
    for (const key of this.indexKeys(name, value)) {
      const o = this.#items.get(key);
      if (o !== undefined) out.push(o);
    }
    return out;
  }

  #addTo(index: Map<string, Keys>, fn: IndexFunc<T>, key: string, obj: T): void {
    for (const v of valuesOf(fn, obj)) {
      const keys = index.get(v);
      if (keys === undefined) index.set(v, key);
      else if (typeof keys !== 'string') keys.add(key);
      else if (keys !== key) index.set(v, new Set([keys, key]));
    }
  }

  #unindex(key: string, obj: T): void {
    for (const [name, fn] of this.#indexers) {
      const index = this.#indices.get(name)!;
      for (const v of valuesOf(fn, obj)) {
        const keys = index.get(v);
        if (keys === undefined) continue;
        if (typeof keys === 'string') {
          if (keys === key) index.delete(v);
          continue;
        }
        keys.delete(key);
        // Back to the key alone once it is the only one (values one object leaves often drop to one).
        if (keys.size <= 1) {
          const [last] = keys;
          if (last === undefined) index.delete(v);
          else index.set(v, last);
        }
      }
    }
  }
}
