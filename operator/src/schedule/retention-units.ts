// A Backup CronOperation's retention pass, the pure part: the engine's own objects (velero Backups in
// Velero's namespace, VolumeSnapshots in the CronOperation's) become backups the selection of retention.ts
// judges, one instance at a time, and the decisions become the engine's deletions and the status.
// Operations are not the inventory: they are pruned long before the backups they made.
//
// What makes a backup this CronOperation's: the ops.vworkspace.io/cron-operation label its Operation's
// engine wrote from the Operation's controller ownerReference (engines/names.ts), and for a velero Backup
// the operation-namespace label too (Velero's namespace holds every namespace's backups). The caller lists
// by those labels; this file checks them again, so a list that returns more judges nothing more.

import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type ApplicationInstance,
  LABEL_CRON_OPERATION,
  LABEL_INSTANCE,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
  MAX_RETENTION_DELETED,
  type Operation,
  type RetentionSpec,
  type RetentionStatus,
  TERMINAL_PHASES,
} from '../api/index.ts';
import { type BackupOutcome, type DeleteReason, type RetentionBackup, selectRetention } from './retention.ts';

export type RetentionEngine = 'velero' | 'snapshot';

/** One backup as retention judges it: a velero Backup, or the VolumeSnapshots of one snapshot Backup Operation. */
export interface RetentionUnit {
  /** The velero Backup's name, or the snapshot Backup Operation's (its VolumeSnapshots' operation label). */
  name: string;
  instance: string;
  backup: RetentionBackup;
  /** What deleting it deletes: the velero Backup (through a DeleteBackupRequest), or each VolumeSnapshot. */
  objects: KubernetesObject[];
}

export interface RetentionDeletion {
  unit: RetentionUnit;
  reason: DeleteReason;
}

export interface RetentionPlan {
  /** Newest first within each instance, instances in name order. */
  deletions: RetentionDeletion[];
  kept: number;
  /** Units already being deleted (velero phase Deleting, a VolumeSnapshot with a deletionTimestamp). */
  alreadyDeleting: number;
}

/** What the pass reads besides the engine's objects. */
export interface RetentionFacts {
  /** The ApplicationInstances of the CronOperation's namespace: whose status.lastVerifiedBackup names what. */
  instances: readonly ApplicationInstance[];
  /** Operations that may read a backup (a Restore or Verify in this or a cloning namespace). */
  operations: readonly Operation[];
  now: number;
  timeZone?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const field = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>(
    (x, k) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined),
    o,
  );
const time = (v: unknown): number | undefined => {
  const t = Date.parse(str(v) ?? '');
  return Number.isNaN(t) ? undefined : t;
};
const labelsOf = (o: KubernetesObject) => o.metadata?.labels ?? {};

/** Velero's Backup phases as retention reads them; undefined: being deleted (not judged again). */
export function veleroOutcome(phase: string | undefined): BackupOutcome | undefined {
  switch (phase) {
    case 'Completed':
      return 'Succeeded';
    case 'PartiallyFailed':
      return 'PartiallyFailed';
    case 'Failed':
    case 'FailedValidation':
      return 'Failed';
    case 'Deleting':
      return undefined;
    default:
      return 'InProgress';
  }
}

/**
 * The names every running Operation reads: its parameter and output values (strings, and the items of a
 * comma-separated list such as snapshotNames), whatever its type. Broad on purpose: keeping a backup that
 * a running Operation only mentions costs one more backup until the next pass; deleting one it reads
 * breaks the run.
 */
export function namesInUse(operations: readonly Operation[]): Set<string> {
  const names = new Set<string>();
  const add = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) add(x);
      return;
    }
    if (typeof v !== 'string') return;
    for (const part of v.split(',')) if (part.trim()) names.add(part.trim());
  };
  for (const op of operations) {
    if (op.status?.phase !== undefined && TERMINAL_PHASES.includes(op.status.phase)) continue;
    for (const v of Object.values(op.spec?.parameters ?? {})) add(v);
    for (const v of Object.values(op.status?.outputs ?? {})) add(v);
  }
  return names;
}

/** When a Verify proved each instance's backup: status.lastVerifiedBackup.backup → its time. */
function verifiedBackups(instances: readonly ApplicationInstance[]): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const i of instances) {
    const v = i.status?.lastVerifiedBackup;
    const at = time(v?.time);
    if (!v?.backup || at === undefined) continue;
    out.set(i.metadata.name ?? '', new Map([[v.backup, at]]));
  }
  return out;
}

function judged(
  name: string,
  instance: string,
  objects: KubernetesObject[],
  outcome: BackupOutcome,
  dates: { completedAt?: number | undefined; startedAt?: number | undefined },
  aliases: readonly string[],
  verified: Map<string, Map<string, number>>,
  inUse: ReadonlySet<string>,
): RetentionUnit {
  const byInstance = verified.get(instance);
  const verifiedAt = aliases.map((a) => byInstance?.get(a)).find((t) => t !== undefined);
  const backup: RetentionBackup = {
    name,
    outcome,
    ...(dates.completedAt !== undefined ? { completedAt: dates.completedAt } : {}),
    ...(dates.startedAt !== undefined ? { startedAt: dates.startedAt } : {}),
    ...(verifiedAt !== undefined ? { verifiedAt } : {}),
    ...(aliases.some((a) => inUse.has(a)) ? { inUse: true } : {}),
  };
  return { name, instance, backup, objects };
}

/**
 * The CronOperation's velero Backups as retention units: those labelled with it, made for its namespace,
 * for an instance. `deleting` counts the ones Velero is deleting already (not judged again).
 */
export function veleroUnits(
  cron: { name: string; namespace: string },
  backups: readonly KubernetesObject[],
  facts: RetentionFacts,
): { units: RetentionUnit[]; deleting: number } {
  const verified = verifiedBackups(facts.instances);
  const inUse = namesInUse(facts.operations);
  const units: RetentionUnit[] = [];
  let deleting = 0;
  for (const b of backups) {
    const l = labelsOf(b);
    const name = b.metadata?.name ?? '';
    const instance = l[LABEL_INSTANCE] ?? '';
    if (l[LABEL_CRON_OPERATION] !== cron.name || l[LABEL_OPERATION_NAMESPACE] !== cron.namespace) continue;
    if (!name || !instance) continue;
    const outcome = veleroOutcome(str(field(b, 'status', 'phase')));
    if (outcome === undefined || b.metadata?.deletionTimestamp) {
      deleting++;
      continue;
    }
    const dates = {
      completedAt: time(field(b, 'status', 'completionTimestamp')),
      startedAt: time(field(b, 'status', 'startTimestamp')),
    };
    units.push(judged(name, instance, [b], outcome, dates, [name], verified, inUse));
  }
  return { units, deleting };
}

/**
 * The CronOperation's VolumeSnapshots as retention units, one per snapshot Backup Operation (its
 * operation label): Succeeded when every one is readyToUse and released from the Operation (engines/
 * snapshot.ts), Failed when one reports an error, in progress otherwise (one still owned goes with its
 * Operation: the garbage collector's, not retention's). A set with a snapshot being deleted is not judged.
 */
export function snapshotUnits(
  cron: { name: string; namespace: string },
  snapshots: readonly KubernetesObject[],
  facts: RetentionFacts,
): { units: RetentionUnit[]; deleting: number } {
  const verified = verifiedBackups(facts.instances);
  const inUse = namesInUse(facts.operations);
  const sets = new Map<string, KubernetesObject[]>();
  for (const s of snapshots) {
    const l = labelsOf(s);
    if (l[LABEL_CRON_OPERATION] !== cron.name || s.metadata?.namespace !== cron.namespace) continue;
    const key = `${l[LABEL_INSTANCE] ?? ''}\n${l[LABEL_OPERATION] ?? ''}`;
    if (!l[LABEL_INSTANCE] || !l[LABEL_OPERATION]) continue;
    sets.set(key, [...(sets.get(key) ?? []), s]);
  }
  const units: RetentionUnit[] = [];
  let deleting = 0;
  for (const [key, set] of [...sets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const [instance = '', operation = ''] = key.split('\n');
    if (set.some((s) => s.metadata?.deletionTimestamp)) {
      deleting++;
      continue;
    }
    const owned = set.some((s) => (s.metadata?.ownerReferences ?? []).length > 0);
    const outcome: BackupOutcome = owned
      ? 'InProgress'
      : set.some((s) => str(field(s, 'status', 'error', 'message')))
        ? 'Failed'
        : set.every((s) => field(s, 'status', 'readyToUse') === true)
          ? 'Succeeded'
          : 'InProgress';
    const taken = set
      .map((s) => time(field(s, 'status', 'creationTime')) ?? time(s.metadata?.creationTimestamp))
      .filter((t): t is number => t !== undefined);
    const dates = taken.length === set.length ? { completedAt: Math.max(...taken) } : {};
    const names = set.map((s) => s.metadata?.name ?? '').sort();
    units.push(judged(operation, instance, set, outcome, dates, [operation, ...names], verified, inUse));
  }
  return { units, deleting };
}

/** The policy applied to each instance's units on its own (each instance keeps its newest success). */
export function planRetention(
  policy: RetentionSpec,
  units: readonly RetentionUnit[],
  facts: Pick<RetentionFacts, 'now' | 'timeZone'>,
  alreadyDeleting = 0,
): RetentionPlan {
  const byInstance = new Map<string, RetentionUnit[]>();
  for (const u of units) byInstance.set(u.instance, [...(byInstance.get(u.instance) ?? []), u]);
  const deletions: RetentionDeletion[] = [];
  let kept = 0;
  for (const instance of [...byInstance.keys()].sort()) {
    const mine = byInstance.get(instance) ?? [];
    const byName = new Map(mine.map((u) => [u.name, u]));
    const selection = selectRetention(
      policy,
      mine.map((u) => u.backup),
      { now: facts.now, ...(facts.timeZone ? { timeZone: facts.timeZone } : {}) },
    );
    kept += selection.keep.length;
    for (const d of selection.delete) {
      const unit = byName.get(d.name);
      if (unit) deletions.push({ unit, reason: d.reason });
    }
  }
  return { deletions, kept, alreadyDeleting };
}

/** status.retention after a pass at `now`: the counts and the first MAX_RETENTION_DELETED deletions. */
export function retentionStatus(plan: RetentionPlan, now: Date): RetentionStatus {
  const deleted = plan.deletions
    .slice(0, MAX_RETENTION_DELETED)
    .map((d) => ({ name: d.unit.name, instance: d.unit.instance, reason: d.reason }));
  return {
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    kept: plan.kept,
    deleting: plan.deletions.length + plan.alreadyDeleting,
    ...(deleted.length > 0 ? { deleted } : {}),
  };
}
