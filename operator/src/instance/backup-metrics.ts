// Per-instance backup metrics (docs/monitoring.md, docs/adr/0050-backup-metrics-and-alerts.md): when each
// ApplicationInstance was last backed up, when a restore drill last proved a backup and how long that
// restore took, whether the last drill passed, and what its Backup schedule leads one to expect. Every
// value is read from objects (the instance's status, its CronOperations), never from this process's
// memory, so a restarted or newly elected operator exports the same numbers at once.
//
// Labels: `namespace` and `applicationinstance` only — one series per instance and metric, whatever the
// number of Operations, backups or schedules. Not `instance`: Prometheus gives every scraped series the
// target's `instance` label, which would overwrite this one or rename it (ADR 0050).
//
// Pure: functions from objects to samples; registerBackupMetrics is the thin prom-client shell.

import { Gauge, type Registry } from 'prom-client';
import type { ApplicationInstance, CronOperation } from '../api/index.ts';
import { cronTargets } from '../schedule/targets.ts';
import { parseSchedule } from '../time/cron.ts';

export const BACKUP_METRICS = {
  lastSuccessful: 'vworkspace_instance_last_successful_backup_timestamp_seconds',
  lastVerified: 'vworkspace_instance_last_verified_backup_timestamp_seconds',
  drillRto: 'vworkspace_instance_last_drill_rto_seconds',
  drillSucceeded: 'vworkspace_instance_last_drill_succeeded',
  interval: 'vworkspace_instance_backup_interval_seconds',
  scheduledSince: 'vworkspace_instance_backup_scheduled_since_timestamp_seconds',
} as const;
export type BackupMetric = keyof typeof BACKUP_METRICS;

export const BACKUP_METRIC_LABELS = ['namespace', 'applicationinstance'] as const;
export type InstanceLabels = Record<(typeof BACKUP_METRIC_LABELS)[number], string>;

export interface Sample {
  labels: InstanceLabels;
  value: number;
}

const HELP: Record<BackupMetric, string> = {
  lastSuccessful:
    'Unix time the newest successful Backup Operation of an ApplicationInstance finished (status.lastSuccessfulBackup.time)',
  lastVerified:
    'Unix time a restore drill last proved a backup of an ApplicationInstance (status.lastVerifiedBackup.time)',
  drillRto:
    'Seconds from restore start to probe success in the last passing restore drill (status.lastVerifiedBackup.rtoSeconds)',
  drillSucceeded:
    '1 when the last restore drill of an ApplicationInstance passed, 0 when it failed (status.lastDrill)',
  interval:
    'Longest gap in seconds between runs of the most frequent Backup CronOperation targeting an ApplicationInstance; absent without one',
  scheduledSince:
    'Unix time the oldest Backup CronOperation targeting an ApplicationInstance was created; absent without one',
};

/** How many upcoming gaps of a schedule are measured: enough to include a weekend or a short month. */
const GAPS = 8;

const labelsOf = (i: ApplicationInstance): InstanceLabels => ({
  namespace: i.metadata.namespace ?? '',
  applicationinstance: i.metadata.name ?? '',
});

const seconds = (time: string | undefined): number | undefined => {
  const t = Date.parse(time ?? '');
  return Number.isNaN(t) ? undefined : t / 1000;
};

/** The samples of one metric read from the instances' status (no series where the status has no value). */
export function statusSamples(
  metric: Exclude<BackupMetric, 'interval' | 'scheduledSince'>,
  instances: readonly ApplicationInstance[],
): Sample[] {
  const out: Sample[] = [];
  for (const i of instances) {
    const s = i.status;
    const value =
      metric === 'lastSuccessful'
        ? seconds(s?.lastSuccessfulBackup?.time)
        : metric === 'lastVerified'
          ? seconds(s?.lastVerifiedBackup?.time)
          : metric === 'drillRto'
            ? s?.lastVerifiedBackup?.rtoSeconds
            : s?.lastDrill
              ? Number(s.lastDrill.result === 'Succeeded')
              : undefined;
    if (value !== undefined && Number.isFinite(value)) out.push({ labels: labelsOf(i), value });
  }
  return out;
}

/**
 * The longest gap, in seconds, between the next GAPS + 1 runs of a CronOperation from its planned next
 * run (status.nextScheduleTime): the longest a healthy schedule leaves an instance without a new backup
 * (a weekday schedule: the weekend). Undefined when it plans nothing (suspended, invalid, not yet seen).
 */
export function scheduleInterval(cron: CronOperation): number | undefined {
  const next = Date.parse(cron.status?.nextScheduleTime ?? '');
  if (cron.spec.suspend || Number.isNaN(next)) return undefined;
  let schedule: ReturnType<typeof parseSchedule>;
  try {
    schedule = parseSchedule(cron.spec.schedule, cron.spec.timeZone);
  } catch {
    return undefined;
  }
  let at = schedule.next(new Date(next - 1)).at.getTime();
  let longest = 0;
  for (let n = 0; n < GAPS; n++) {
    const after = schedule.next(new Date(at)).at.getTime();
    longest = Math.max(longest, after - at);
    at = after;
  }
  return longest / 1000;
}

/**
 * What the Backup schedules of each instance lead one to expect: the interval of its most frequent
 * (non-suspended) Backup CronOperation and when its oldest one was created. `interval` is
 * scheduleInterval, or a memo of it.
 */
export function scheduleSamples(
  instances: readonly ApplicationInstance[],
  crons: readonly CronOperation[],
  interval: (cron: CronOperation) => number | undefined = scheduleInterval,
): Record<'interval' | 'scheduledSince', Sample[]> {
  const backups = new Map<string, CronOperation[]>();
  for (const c of crons) {
    if (c.spec.operationTemplate.spec.type !== 'Backup') continue;
    const ns = c.metadata.namespace ?? '';
    backups.set(ns, [...(backups.get(ns) ?? []), c]);
  }
  const out: Record<'interval' | 'scheduledSince', Sample[]> = { interval: [], scheduledSince: [] };
  for (const i of instances) {
    let shortest: number | undefined;
    let since: number | undefined;
    for (const c of backups.get(i.metadata.namespace ?? '') ?? []) {
      if (!cronTargets(c, i)) continue;
      const gap = interval(c);
      if (gap === undefined) continue;
      shortest = Math.min(shortest ?? gap, gap);
      const created = seconds(String(c.metadata.creationTimestamp ?? ''));
      if (created !== undefined) since = Math.min(since ?? created, created);
    }
    if (shortest === undefined) continue;
    out.interval.push({ labels: labelsOf(i), value: shortest });
    if (since !== undefined) out.scheduledSince.push({ labels: labelsOf(i), value: since });
  }
  return out;
}

/** scheduleInterval remembered per schedule, zone and planned run (bounded). */
function memoizedInterval(limit = 4096): (cron: CronOperation) => number | undefined {
  const memo = new Map<string, number | undefined>();
  return (cron) => {
    const key = `${cron.spec.schedule}\u0000${cron.spec.timeZone ?? ''}\u0000${cron.spec.suspend ?? false}\u0000${cron.status?.nextScheduleTime ?? ''}`;
    if (memo.has(key)) return memo.get(key);
    if (memo.size >= limit) memo.clear();
    const v = scheduleInterval(cron);
    memo.set(key, v);
    return v;
  };
}

/** The gauges, computed from the caches at scrape time. */
export function registerBackupMetrics(
  registry: Registry,
  instances: () => readonly ApplicationInstance[],
  crons: () => readonly CronOperation[],
): void {
  const interval = memoizedInterval();
  const all = (): Record<BackupMetric, Sample[]> => {
    const list = instances();
    return {
      ...scheduleSamples(list, crons(), interval),
      lastSuccessful: statusSamples('lastSuccessful', list),
      lastVerified: statusSamples('lastVerified', list),
      drillRto: statusSamples('drillRto', list),
      drillSucceeded: statusSamples('drillSucceeded', list),
    };
  };
  // A scrape collects the six gauges one after another: the caches are read once for all of them (six
  // reads of 100k instances were a scrape's largest cost). A gauge collected again starts a new reading,
  // so no gauge ever shows the same reading twice.
  let reading: { samples: Record<BackupMetric, Sample[]>; used: Set<BackupMetric> } | undefined;
  const samplesOf = (metric: BackupMetric): Sample[] => {
    if (!reading || reading.used.has(metric)) reading = { samples: all(), used: new Set() };
    reading.used.add(metric);
    return reading.samples[metric];
  };
  for (const metric of Object.keys(BACKUP_METRICS) as BackupMetric[]) {
    new Gauge({
      name: BACKUP_METRICS[metric],
      help: HELP[metric],
      labelNames: BACKUP_METRIC_LABELS,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of samplesOf(metric)) this.set(s.labels, s.value);
      },
    });
  }
}
