// What an ApplicationInstance's status remembers about its backups, so that it survives pruned
// Operations and operator restarts (the metrics are read from it: backup-metrics.ts). Pure.
//
// status.lastSuccessfulBackup: the newest Backup Operation on the instance that Succeeded. It only
// moves forward: an Operation pruned by a history limit or a TTL, or deleted, takes nothing away, and a
// later failure does not replace it.
// status.lastVerifiedBackup and status.lastDrill: written by the restore drill (a Verify Operation,
// issue 23, not built yet); until then they are carried over unchanged, because the instance's status is
// one complete server-side apply and a field left out would be removed.

import type { ApplicationInstanceStatus, LastSuccessfulBackup, Operation } from '../api/index.ts';
import { finishedAtMs } from '../schedule/history.ts';

/** The newest Succeeded Backup among `ops` that target `name`, or `previous` when it is newer. */
export function lastSuccessfulBackup(
  name: string,
  ops: readonly Operation[],
  previous: LastSuccessfulBackup | undefined,
): LastSuccessfulBackup | undefined {
  let best = previous;
  const kept = previous ? Date.parse(previous.time) : Number.NaN;
  let bestMs = Number.isNaN(kept) ? Number.NEGATIVE_INFINITY : kept;
  for (const o of ops) {
    if (o.spec?.targetRef?.name !== name || o.spec.type !== 'Backup' || o.status?.phase !== 'Succeeded')
      continue;
    const t = finishedAtMs(o);
    const operation = o.metadata.name ?? '';
    // Ties go to the later name, so the choice does not depend on the order of the cache.
    if (t > bestMs || (t === bestMs && best !== undefined && operation > best.operation)) {
      bestMs = t;
      best = { time: new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z'), operation };
    }
  }
  return best;
}

/** The backup fields of an instance's status: computed from its Operations and its current status. */
export function backupRecord(
  name: string,
  ops: readonly Operation[],
  current: ApplicationInstanceStatus | undefined,
): Pick<ApplicationInstanceStatus, 'lastSuccessfulBackup' | 'lastVerifiedBackup' | 'lastDrill'> {
  const success = lastSuccessfulBackup(name, ops, current?.lastSuccessfulBackup);
  return {
    ...(success ? { lastSuccessfulBackup: success } : {}),
    ...(current?.lastVerifiedBackup ? { lastVerifiedBackup: current.lastVerifiedBackup } : {}),
    ...(current?.lastDrill ? { lastDrill: current.lastDrill } : {}),
  };
}
