// Which backups a retention policy keeps and which it lets go, with the reason for each: the selection the
// retention policy of issue 23 will apply through each engine's API. Pure: backups and `now` in, decisions out.
//
// The keep rules are restic's `forget` rules (ADR 0042): keepLast keeps the newest n successful backups;
// keepHourly/Daily/Weekly/Monthly/Yearly keep the newest successful backup in each of the n most recent
// calendar buckets that hold one (a bucket with no successful backup does not count towards n). Buckets are
// read on the wall clock of the schedule's time zone: a day is a calendar day (23 or 25 hours across a DST
// change), a week is an ISO week (Monday to Sunday), and the hour repeated when clocks fall back is one
// hourly bucket. maxAge is a ceiling: no rule keeps a backup older than it. Whatever the rules say, the
// newest successful backup, the newest verified one and any a running Restore or Verify reads are kept, so
// no policy can leave an instance without a good backup.

import { parsePositiveDuration } from '../time/duration.ts';
import { DAY, HOUR, timeZoneProblem, zoneRules } from '../time/tz.ts';

/** The keep counts and the age ceiling. A field that is absent is off; a count of 0 keeps none by that rule. */
export interface RetentionPolicy {
  keepLast?: number;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
  keepYearly?: number;
  /** A Go duration ("720h"): a backup older than this is kept only by the guarantees, never by a rule. */
  maxAge?: string;
}

/** PartiallyFailed is treated as Failed: such a backup restores only part of the instance. */
export type BackupOutcome = 'Succeeded' | 'PartiallyFailed' | 'Failed' | 'InProgress';

export interface RetentionBackup {
  name: string;
  /** When the backup finished (ms since the epoch); its buckets and age are read from this... */
  completedAt?: number;
  /** ...or, for a backup that records no completion, from when it started. */
  startedAt?: number;
  outcome: BackupOutcome;
  /** When a Verify last restored it and its probe passed. */
  verifiedAt?: number;
  /** A running Restore or Verify reads it. */
  inUse?: boolean;
}

export type GfsRule = 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';

export type KeepReason =
  | 'policy-empty' // no field set: the policy keeps everything
  | 'in-use' // a running Restore or Verify reads it
  | 'in-progress' // not finished yet
  | 'undated' // neither completedAt nor startedAt: it cannot be placed in time, so it is not judged
  | 'newest-success' // the newest successful backup
  | 'newest-verified' // the newest successful backup a Verify proved
  | 'failed-after-newest-success' // a failure with no newer success: the evidence of what is wrong now
  | 'last' // among the newest keepLast successes
  | GfsRule // the newest success in one of the newest keep<Rule> buckets
  | 'within-max-age'; // no count is set: maxAge alone keeps every success younger than it

export type DeleteReason =
  | 'older-than-max-age' // a success older than maxAge, kept by no guarantee
  | 'not-selected' // a success younger than maxAge (or with no maxAge) that no rule keeps
  | 'failed-superseded'; // a failed or partial backup older than the newest success

export interface KeptBackup {
  name: string;
  /** Every reason that keeps it, in the order of KEEP_REASON_ORDER. */
  reasons: KeepReason[];
}

export interface DeletedBackup {
  name: string;
  reason: DeleteReason;
}

export interface RetentionSelection {
  /** Newest first (undated backups at the end, by name). */
  keep: KeptBackup[];
  /** Newest first. */
  delete: DeletedBackup[];
}

export interface RetentionContext {
  now: number;
  /** The CronOperation's IANA time zone; omitted means UTC. */
  timeZone?: string;
}

export const GFS_RULES: readonly GfsRule[] = ['hourly', 'daily', 'weekly', 'monthly', 'yearly'];

const COUNT_FIELDS = {
  last: 'keepLast',
  hourly: 'keepHourly',
  daily: 'keepDaily',
  weekly: 'keepWeekly',
  monthly: 'keepMonthly',
  yearly: 'keepYearly',
} as const satisfies Record<'last' | GfsRule, keyof RetentionPolicy>;

export const KEEP_REASON_ORDER: readonly KeepReason[] = [
  'policy-empty',
  'in-use',
  'in-progress',
  'undated',
  'newest-success',
  'newest-verified',
  'failed-after-newest-success',
  'last',
  ...GFS_RULES,
  'within-max-age',
];

/**
 * What is wrong with a policy, one message per field, each naming its path under `path`; empty when usable.
 * (The admission webhook will return these once the policy is part of the API.)
 */
export function retentionPolicyProblems(policy: RetentionPolicy, path = 'retention'): string[] {
  const problems: string[] = [];
  for (const field of Object.values(COUNT_FIELDS)) {
    const n = policy[field];
    if (n !== undefined && !(Number.isSafeInteger(n) && n >= 0)) {
      problems.push(`${path}.${field}: must be a whole number ≥ 0, got ${String(n)}`);
    }
  }
  if (policy.maxAge !== undefined) {
    const parsed = parsePositiveDuration(policy.maxAge);
    if (!parsed.ok) {
      problems.push(`${path}.maxAge: ${parsed.message}; for days write hours, e.g. "720h" for 30 days`);
    }
  }
  return problems;
}

/** The wall-clock bucket keys of an instant: equal keys mean the same hour, day, ISO week, month or year. */
function bucketKeys(wall: number): Record<GfsRule, number> {
  const d = new Date(wall);
  const dayNumber = Math.floor(wall / DAY);
  // 1970-01-01 was a Thursday: (dayNumber + 3) mod 7 counts days since Monday.
  const sinceMonday = (((dayNumber + 3) % 7) + 7) % 7;
  return {
    hourly: Math.floor(wall / HOUR),
    daily: dayNumber,
    weekly: dayNumber - sinceMonday,
    monthly: d.getUTCFullYear() * 12 + d.getUTCMonth(),
    yearly: d.getUTCFullYear(),
  };
}

function takenAt(b: RetentionBackup): number | undefined {
  const t = b.completedAt ?? b.startedAt;
  return t !== undefined && Number.isFinite(t) ? t : undefined;
}

/**
 * Decide, for every backup, keep or delete and why. Throws RangeError for a policy with problems (check it
 * with retentionPolicyProblems first) or a time zone timeZoneProblem refuses. Backup names are taken to be
 * unique; ties in time are broken by name so the answer does not depend on the input order.
 */
export function selectRetention(
  policy: RetentionPolicy,
  backups: readonly RetentionBackup[],
  context: RetentionContext,
): RetentionSelection {
  const problems = retentionPolicyProblems(policy);
  const zone = context.timeZone ?? 'UTC';
  const zoneProblem = timeZoneProblem(zone);
  if (zoneProblem) problems.push(`timeZone: ${zoneProblem}`);
  if (problems.length > 0) throw new RangeError(problems.join('; '));

  const reasons = new Map<RetentionBackup, Set<KeepReason>>(backups.map((b) => [b, new Set()]));
  const keepFor = (b: RetentionBackup, r: KeepReason) => reasons.get(b)?.add(r);

  const dated = backups
    .filter((b) => takenAt(b) !== undefined)
    .sort((a, b) => takenAt(b)! - takenAt(a)! || byName(a, b));
  const rank = new Map(dated.map((b, i) => [b, i]));
  const successes = dated.filter((b) => b.outcome === 'Succeeded');
  const newestSuccess = successes[0];

  // Only the policy's own fields: an object read from the API may carry others.
  const anyCount = Object.values(COUNT_FIELDS).some((f) => policy[f] !== undefined);
  const policyEmpty = !anyCount && policy.maxAge === undefined;
  for (const b of backups) {
    if (policyEmpty) keepFor(b, 'policy-empty');
    if (b.inUse === true) keepFor(b, 'in-use');
    if (b.outcome === 'InProgress') keepFor(b, 'in-progress');
    if (takenAt(b) === undefined) keepFor(b, 'undated');
  }
  if (newestSuccess) keepFor(newestSuccess, 'newest-success');
  const newestVerified = successes.find((b) => b.verifiedAt !== undefined);
  if (newestVerified) keepFor(newestVerified, 'newest-verified');
  for (const b of dated) {
    if (b.outcome !== 'Failed' && b.outcome !== 'PartiallyFailed') continue;
    if (newestSuccess === undefined || rank.get(b)! < rank.get(newestSuccess)!) {
      keepFor(b, 'failed-after-newest-success');
    }
  }

  const maxAge = policy.maxAge === undefined ? undefined : parsePositiveDuration(policy.maxAge);
  const tooOld = (b: RetentionBackup) => maxAge?.ok === true && context.now - takenAt(b)! > maxAge.ms;
  const young = successes.filter((b) => !tooOld(b));

  if (!anyCount && maxAge !== undefined) {
    for (const b of young) keepFor(b, 'within-max-age');
  }
  // keepLast and the bucket rules choose among all successes, then maxAge removes what they chose that is too
  // old. Choosing among the young ones only gives the same set: buckets are contiguous in time, so the n newest
  // buckets' newest members that are young are exactly the young buckets among the n newest.
  for (const b of successes.slice(0, policy.keepLast ?? 0)) {
    if (!tooOld(b)) keepFor(b, 'last');
  }
  const rules = zoneRules(zone);
  const keys = new Map(successes.map((b) => [b, bucketKeys(rules.wallAt(takenAt(b)!))]));
  for (const rule of GFS_RULES) {
    let left = policy[COUNT_FIELDS[rule]] ?? 0;
    let previous: number | undefined;
    for (const b of successes) {
      if (left === 0) break;
      const key = keys.get(b)![rule];
      if (key === previous) continue;
      previous = key;
      left--;
      if (!tooOld(b)) keepFor(b, rule);
    }
  }

  const keep: KeptBackup[] = [];
  const drop: DeletedBackup[] = [];
  for (const b of [...dated, ...backups.filter((x) => takenAt(x) === undefined).sort(byName)]) {
    const why = reasons.get(b)!;
    if (why.size > 0) {
      keep.push({ name: b.name, reasons: KEEP_REASON_ORDER.filter((r) => why.has(r)) });
    } else if (b.outcome !== 'Succeeded') {
      drop.push({ name: b.name, reason: 'failed-superseded' });
    } else {
      drop.push({ name: b.name, reason: tooOld(b) ? 'older-than-max-age' : 'not-selected' });
    }
  }
  return { keep, delete: drop };
}

function byName(a: RetentionBackup, b: RetentionBackup): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
