// Read your own writes: what this process wrote that its informer cache does not show yet.
//
// A reconcile that runs right after its own write reads a cache that has not seen the write's watch event
// (it arrives later, or after a relist when the watch broke). Deciding on that stale view undoes the write:
// an Operation created a moment ago is not counted, a status just written is decided again. So the Client
// (client.ts) records every object a write returned, per key, in the informers that would hold it, and the
// informer's reads (get, list, index lookups) show the recorded object until the cache has caught up.
//
// When the cache has caught up is decided by EQUALITY only, never by ordering resourceVersions (the API
// conventions call them opaque; ordering them as integers is guaranteed from Kubernetes 1.35 only, and we
// support 1.30): an entry is cleared by
// - a watch event for its key carrying the recorded resourceVersion (our write itself),
// - a watch event for its key with another uid, or a DELETED event (the object was replaced or is gone),
// - a relist that started after the entry was recorded (a list without a resourceVersion is a consistent
//   read: it contains every write that had returned before it started), or whose listed object carries
//   the recorded resourceVersion.
// Watch events of one key arrive in order, so our write's event comes before any later change: an entry
// never hides a newer object for longer than that event takes. A write whose answer the cache has already
// applied (its event overtook the HTTP response) records nothing: `begin` notes the resourceVersions the
// cache applies for a key while a write to it is in flight.
//
// A delete records a tombstone (the uid deleted): reads leave the object out until its DELETED event.

import type { KubernetesObject } from '@kubernetes/client-node';
import { splitKey } from './keys.ts';

interface Entry<T> {
  /** undefined: a tombstone. */
  readonly obj: T | undefined;
  readonly uid: string | undefined;
  readonly resourceVersion: string | undefined;
  /**
   * The uid the cache held when a create replaced an object of the same name: its late events (the old
   * object's DELETED) come before ours and must not clear the entry.
   */
  readonly before?: string | undefined;
  /** Order of recording, for the relist rule. */
  readonly seq: number;
}

/** What a read finds pending for a key: the written object, or `obj: undefined` for a deleted one. */
export interface Pending<T> {
  readonly obj: T | undefined;
}

export class PendingWrites<T extends KubernetesObject> {
  /** namespace ('' for cluster scope) → key → entry */
  readonly #byNamespace = new Map<string, Map<string, Entry<T>>>();
  /** key → writes in flight and the resourceVersions the cache applied meanwhile */
  readonly #inFlight = new Map<string, { writes: number; applied: Set<string> }>();
  #seq = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Marks a write to `key` in flight (call before sending it); the returned function ends it. */
  begin(key: string): () => void {
    let f = this.#inFlight.get(key);
    if (!f) {
      f = { writes: 0, applied: new Set() };
      this.#inFlight.set(key, f);
    }
    f.writes++;
    const flight = f;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--flight.writes === 0 && this.#inFlight.get(key) === flight) this.#inFlight.delete(key);
    };
  }

  /**
   * Records `obj` (what the API server returned for a write to `key`), unless the cache already holds
   * that resourceVersion (`cached`) or applied it while the write was in flight. Replaces an older entry.
   */
  record(key: string, obj: T, cached: T | undefined): void {
    const rv = obj.metadata?.resourceVersion;
    if (rv !== undefined && (cached?.metadata?.resourceVersion === rv || this.#applied(key, rv))) {
      this.#delete(key);
      return;
    }
    const uid = obj.metadata?.uid;
    const before = cached?.metadata?.uid !== uid ? cached?.metadata?.uid : undefined;
    this.#set(key, { obj, uid, resourceVersion: rv, before, seq: ++this.#seq });
  }

  /** Records that the object `uid` under `key` was deleted. */
  tombstone(key: string, uid: string): void {
    this.#set(key, { obj: undefined, uid, resourceVersion: undefined, seq: ++this.#seq });
  }

  /** The informer applied a watch event for `key`: clears the entry the event proves caught up. */
  observe(key: string, type: string, obj: KubernetesObject): void {
    const rv = obj.metadata?.resourceVersion;
    if (rv !== undefined) this.#inFlight.get(key)?.applied.add(rv);
    const e = this.#find(key);
    if (!e) return;
    const uid = obj.metadata?.uid;
    if (uid !== undefined && uid === e.before) return;
    const replaced = e.uid !== undefined && uid !== undefined && uid !== e.uid;
    if (type === 'DELETED' || replaced || (e.obj !== undefined && rv === e.resourceVersion))
      this.#delete(key);
  }

  /** A relist is about to send its list request: the mark to hand to `relisted`. */
  mark(): number {
    return this.#seq;
  }

  /** A relist started at `mark` replaced the cache with `listed`: clears what it proves caught up. */
  relisted(mark: number, listed: ReadonlyMap<string, KubernetesObject>): void {
    for (const [key, f] of this.#inFlight) {
      const rv = listed.get(key)?.metadata?.resourceVersion;
      if (rv !== undefined) f.applied.add(rv);
    }
    if (this.#size === 0) return;
    for (const entries of this.#byNamespace.values()) {
      for (const [key, e] of entries) {
        const rv = listed.get(key)?.metadata?.resourceVersion;
        if (e.seq <= mark || (e.obj !== undefined && rv !== undefined && rv === e.resourceVersion))
          this.#delete(key);
      }
    }
  }

  /** What is pending for `key`, if anything. */
  get(key: string): Pending<T> | undefined {
    return this.#find(key);
  }

  /** True when something is pending in `namespace` (every namespace when undefined). */
  pendingIn(namespace: string | undefined): boolean {
    return namespace === undefined ? this.#size > 0 : this.#byNamespace.has(namespace);
  }

  /**
   * `cached` as it reads with the pending writes of `namespace` (every namespace when undefined) laid
   * over it: written objects replace cached ones in place, created ones that `belongs` accepts are added,
   * deleted ones are left out. Returns `cached` itself when nothing is pending there.
   */
  overlay(
    cached: T[],
    keyOf: (o: T) => string,
    namespace: string | undefined,
    belongs: (o: T) => boolean,
  ): T[] {
    if (!this.pendingIn(namespace)) return cached;
    const out: T[] = [];
    const seen = new Set<string>();
    for (const o of cached) {
      const key = keyOf(o);
      seen.add(key);
      const p = this.#find(key);
      if (!p) out.push(o);
      else if (p.obj !== undefined && belongs(p.obj)) out.push(p.obj);
    }
    const buckets =
      namespace === undefined ? [...this.#byNamespace.values()] : [this.#byNamespace.get(namespace)];
    for (const entries of buckets)
      for (const [key, e] of entries ?? [])
        if (!seen.has(key) && e.obj !== undefined && belongs(e.obj)) out.push(e.obj);
    return out;
  }

  #applied(key: string, rv: string): boolean {
    return this.#inFlight.get(key)?.applied.has(rv) ?? false;
  }

  #find(key: string): Entry<T> | undefined {
    return this.#byNamespace.get(splitKey(key).namespace ?? '')?.get(key);
  }

  #set(key: string, e: Entry<T>): void {
    const ns = splitKey(key).namespace ?? '';
    let entries = this.#byNamespace.get(ns);
    if (!entries) {
      entries = new Map();
      this.#byNamespace.set(ns, entries);
    }
    if (!entries.has(key)) this.#size++;
    entries.set(key, e);
  }

  #delete(key: string): void {
    const ns = splitKey(key).namespace ?? '';
    const entries = this.#byNamespace.get(ns);
    if (!entries?.delete(key)) return;
    this.#size--;
    if (entries.size === 0) this.#byNamespace.delete(ns);
  }
}
