// The statuses this replica wrote, laid over an informer cache that may not have seen them yet. Pure.
//
// The conflict queue of an Operation is computed from the OTHER Operations of its namespace as the cache
// shows them. With one worker, the Operation reconciled right after another one reads the cache before
// the watch event of that one's status write has arrived: an Upgrade that has just left
// Blocked/TargetNotReady for Running still looks Blocked/TargetNotReady (which does not hold the queue),
// so a Backup behind it would start beside it. The operator is the only writer of Operation status, so
// what it wrote last is the truth until the cache shows it.
import type { Operation, OperationStatus } from '../api/operation.ts';
import { objectKey } from '../runtime/index.ts';
import { jsonEqual } from '../runtime/status.ts';

/** What this replica last wrote per Operation key. */
export interface OwnWrite {
  uid: string;
  status: OperationStatus;
}

/** `ops` with the status this replica last wrote wherever the cache still shows something else. */
export function withOwnWrites(
  ops: readonly Operation[],
  written: ReadonlyMap<string, OwnWrite>,
): Operation[] {
  return ops.map((o) => {
    const w = written.get(objectKey(o));
    if (!w || w.uid !== o.metadata.uid || jsonEqual(w.status, o.status ?? {})) return o;
    return { ...o, status: w.status };
  });
}
