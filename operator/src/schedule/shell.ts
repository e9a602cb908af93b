// Small pieces both scheduling controllers use around their pure decisions.

import type { Operation } from '../api/index.ts';

/** Operation watch filter: only a phase change (or a cancel request) changes what a scheduler sees. */
export function phaseChanged(oldOp: Operation, newOp: Operation): boolean {
  return oldOp.status?.phase !== newOp.status?.phase || oldOp.spec?.cancel !== newOp.spec?.cancel;
}

/**
 * Operations this process created that the informer cache may not show yet. Merged into what a reconcile
 * sees, so a reconcile right after a create counts the new Operation as running (status.active, Forbid)
 * instead of deciding without it. An entry is dropped once the cache has the name.
 */
export class CreatedOperations {
  readonly #byOwner = new Map<string, Map<string, Operation>>();

  add(ownerKey: string, op: Operation): void {
    const name = op.metadata.name;
    if (!name) return;
    let m = this.#byOwner.get(ownerKey);
    if (!m) {
      m = new Map();
      this.#byOwner.set(ownerKey, m);
    }
    m.set(name, op);
  }

  /** `cached` plus the created ones the cache does not list yet. */
  merge(ownerKey: string, cached: readonly Operation[]): Operation[] {
    const m = this.#byOwner.get(ownerKey);
    if (!m) return [...cached];
    const seen = new Set(cached.map((o) => o.metadata.name));
    for (const name of [...m.keys()]) if (seen.has(name)) m.delete(name);
    if (m.size === 0) this.#byOwner.delete(ownerKey);
    return [...cached, ...m.values()];
  }

  forget(ownerKey: string): void {
    this.#byOwner.delete(ownerKey);
  }
}

/** True when resourceVersion `cached` is older than `written` (etcd revisions are integers in practice). */
export function olderThan(cached: string | undefined, written: string | undefined): boolean {
  if (written === undefined) return true;
  if (cached === undefined || cached === written) return cached === undefined;
  try {
    return BigInt(cached) < BigInt(written);
  } catch {
    return false; // not comparable: trust the cache
  }
}
