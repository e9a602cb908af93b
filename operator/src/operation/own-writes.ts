// The statuses this replica wrote, laid over an informer cache that may not have seen them yet. Pure.
//
// The conflict queue of an Operation is computed from the OTHER Operations of its namespace as the cache
// shows them. With one worker, the Operation reconciled right after another one reads the cache before
// the watch event of that one's status write has arrived: an Upgrade that has just left
// Blocked/TargetNotReady for Running still looks Blocked/TargetNotReady (which does not hold the queue),
// so a Backup behind it would start beside it. The operator is the only writer of Operation status, so
// what it wrote last is the truth until the cache shows it.
//
// Only writes the cache has not shown yet are kept (`caughtUp` forgets the rest), grouped by namespace:
// an overlay costs nothing in a namespace with none pending. Comparing every cached Operation with every
// remembered write was most of the operator's CPU in a 500-Operation burst (bench operations, profile).
import type { Operation, OperationStatus } from '../api/operation.ts';
import { jsonEqual } from '../runtime/status.ts';

/** What this replica last wrote for one Operation. */
export interface OwnWrite {
  uid: string;
  status: OperationStatus;
  /** The resourceVersion the write returned: the cache shows the write when it shows this version. */
  resourceVersion?: string;
}

/**
 * Whether `o` as cached already shows the write. By resourceVersion when the write returned one: every
 * reconcile lays the pending writes over its namespace, and comparing whole statuses there was 8 % of
 * the operator's CPU in a 500-Operation burst (bench operations --profile). A cached object with another
 * resourceVersion but an equal status gets the equal status laid over it: the same content.
 */
function shows(o: Operation, w: OwnWrite): boolean {
  return w.resourceVersion !== undefined
    ? o.metadata.resourceVersion === w.resourceVersion
    : jsonEqual(w.status, o.status ?? {});
}

/** `ops` of one namespace with the pending write (by name) wherever the cache still shows something else. */
export function withOwnWrites(
  ops: readonly Operation[],
  pending: ReadonlyMap<string, OwnWrite>,
): readonly Operation[] {
  if (pending.size === 0) return ops;
  return ops.map((o) => {
    const w = pending.get(o.metadata.name ?? '');
    if (!w || w.uid !== o.metadata.uid || shows(o, w)) return o;
    return { ...o, status: w.status };
  });
}

/** This replica's status writes the cache has not shown yet, by namespace and name. */
export class OwnWrites {
  readonly #byNamespace = new Map<string, Map<string, OwnWrite>>();

  get(namespace: string, name: string): OwnWrite | undefined {
    return this.#byNamespace.get(namespace)?.get(name);
  }

  set(namespace: string, name: string, write: OwnWrite): void {
    const names = this.#byNamespace.get(namespace) ?? new Map<string, OwnWrite>();
    names.set(name, write);
    this.#byNamespace.set(namespace, names);
  }

  delete(namespace: string, name: string): void {
    const names = this.#byNamespace.get(namespace);
    if (!names?.delete(name) || names.size > 0) return;
    this.#byNamespace.delete(namespace);
  }

  /** Forgets the write for `op` once the cache shows it (or shows another incarnation). */
  caughtUp(op: Operation): void {
    const ns = op.metadata.namespace ?? '';
    const name = op.metadata.name ?? '';
    const w = this.get(ns, name);
    // Also by content: a later version with the same status (a metadata change after ours) shows it too.
    const sameVersion = w?.resourceVersion !== undefined && op.metadata.resourceVersion === w.resourceVersion;
    if (w && (w.uid !== op.metadata.uid || sameVersion || jsonEqual(w.status, op.status ?? {})))
      this.delete(ns, name);
  }

  /** One namespace's cached Operations with the pending writes laid over (the same array when none). */
  overlay(namespace: string, ops: readonly Operation[]): readonly Operation[] {
    const pending = this.#byNamespace.get(namespace);
    return pending ? withOwnWrites(ops, pending) : ops;
  }

  /** Writes pending, all namespaces. */
  get size(): number {
    let n = 0;
    for (const names of this.#byNamespace.values()) n += names.size;
    return n;
  }
}
