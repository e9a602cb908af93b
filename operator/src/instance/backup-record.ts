// What an ApplicationInstance's status remembers about its backups, so that it survives pruned
// Operations and operator restarts (the metrics are read from it: backup-metrics.ts). Pure.
//
// status.lastSuccessfulBackup: the newest Backup Operation on the instance that Succeeded. It only
// moves forward: an Operation pruned by a history limit or a TTL, or deleted, takes nothing away, and a
// later failure does not replace it.
// status.lastVerifiedBackup and status.lastDrill: derived the same way from the restore drills (Verify
// Operations, ADR 0054) and their outputs — the newest passed drill's backup, RTO and RPO, and the newest
// drill that ended either way. Both only move forward, so a pruned drill takes nothing away; a Cancelled
// drill proved nothing either way and is not a drill result.

import type {
  ApplicationInstanceStatus,
  LastDrill,
  LastSuccessfulBackup,
  LastVerifiedBackup,
  Operation,
} from '../api/index.ts';
import { finishedAtMs } from '../schedule/history.ts';

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The newest of `ops` that `pick` keeps, or `previous` when it is newer. Ties go to the later name, so the
 * choice does not depend on the order of the cache.
 */
function newest<T extends { time: string; operation: string }>(
  ops: readonly Operation[],
  previous: T | undefined,
  pick: (o: Operation, finishedMs: number) => T | undefined,
): T | undefined {
  let best = previous;
  const kept = previous ? Date.parse(previous.time) : Number.NaN;
  let bestMs = Number.isNaN(kept) ? Number.NEGATIVE_INFINITY : kept;
  for (const o of ops) {
    const t = finishedAtMs(o);
    const candidate = pick(o, t);
    if (!candidate) continue;
    const at = Date.parse(candidate.time);
    if (at > bestMs || (at === bestMs && best !== undefined && candidate.operation > best.operation)) {
      bestMs = at;
      best = candidate;
    }
  }
  return best;
}

const seconds = (v: string | undefined) => {
  const n = Number(v);
  return v !== undefined && v !== '' && Number.isFinite(n) && n >= 0 ? n : undefined;
};

/** The newest passed drill of instance `name` among `ops` (its outputs), or `previous` when newer. */
export function lastVerifiedBackup(
  name: string,
  ops: readonly Operation[],
  previous: LastVerifiedBackup | undefined,
): LastVerifiedBackup | undefined {
  return newest(ops, previous, (o, finished) => {
    if (o.spec?.targetRef?.name !== name || o.spec.type !== 'Verify' || o.status?.phase !== 'Succeeded')
      return undefined;
    const out = (o.status.outputs ?? {}) as Record<string, string | undefined>;
    const rto = seconds(out.rtoSeconds);
    if (rto === undefined) return undefined;
    const at = Date.parse(out.verifiedAt ?? '');
    const rpo = seconds(out.rpoSeconds);
    return {
      time: iso(Number.isNaN(at) ? finished : at),
      operation: o.metadata.name ?? '',
      ...(out.verifiedBackup ? { backup: out.verifiedBackup } : {}),
      rtoSeconds: rto,
      ...(rpo !== undefined ? { rpoSeconds: rpo } : {}),
    };
  });
}

/** The newest drill of instance `name` that passed or failed, or `previous` when newer. */
export function lastDrill(
  name: string,
  ops: readonly Operation[],
  previous: LastDrill | undefined,
): LastDrill | undefined {
  return newest(ops, previous, (o, finished) => {
    const phase = o.status?.phase;
    if (o.spec?.targetRef?.name !== name || o.spec.type !== 'Verify') return undefined;
    if (phase !== 'Succeeded' && phase !== 'Failed') return undefined;
    const succeeded = o.status?.conditions?.find((c) => c.type === 'Succeeded');
    return {
      time: iso(finished),
      operation: o.metadata.name ?? '',
      result: phase,
      ...(succeeded?.reason ? { reason: succeeded.reason.slice(0, 128) } : {}),
    };
  });
}

/** The newest Succeeded Backup among `ops` that target `name`, or `previous` when it is newer. */
export function lastSuccessfulBackup(
  name: string,
  ops: readonly Operation[],
  previous: LastSuccessfulBackup | undefined,
): LastSuccessfulBackup | undefined {
  return newest(ops, previous, (o, finished) =>
    o.spec?.targetRef?.name === name && o.spec.type === 'Backup' && o.status?.phase === 'Succeeded'
      ? { time: iso(finished), operation: o.metadata.name ?? '' }
      : undefined,
  );
}

/** The backup fields of an instance's status: computed from its Operations and its current status. */
export function backupRecord(
  name: string,
  ops: readonly Operation[],
  current: ApplicationInstanceStatus | undefined,
): Pick<ApplicationInstanceStatus, 'lastSuccessfulBackup' | 'lastVerifiedBackup' | 'lastDrill'> {
  const success = lastSuccessfulBackup(name, ops, current?.lastSuccessfulBackup);
  const verified = lastVerifiedBackup(name, ops, current?.lastVerifiedBackup);
  const drill = lastDrill(name, ops, current?.lastDrill);
  return {
    ...(success ? { lastSuccessfulBackup: success } : {}),
    ...(verified ? { lastVerifiedBackup: verified } : {}),
    ...(drill ? { lastDrill: drill } : {}),
  };
}
