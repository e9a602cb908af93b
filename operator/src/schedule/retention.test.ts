import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BackupOutcome,
  type RetentionBackup,
  type RetentionPolicy,
  type RetentionSelection,
  retentionPolicyProblems,
  selectRetention,
} from './retention.ts';

const HOUR = 3_600_000;
const at = (iso: string) => Date.parse(iso);
const ok = (name: string, iso: string, extra: Partial<RetentionBackup> = {}): RetentionBackup => ({
  name,
  completedAt: at(iso),
  outcome: 'Succeeded',
  ...extra,
});
const failed = (name: string, iso: string, outcome: BackupOutcome = 'Failed'): RetentionBackup => ({
  name,
  completedAt: at(iso),
  outcome,
});
const NOW = at('2026-01-01T00:00:00Z');
const select = (policy: RetentionPolicy, backups: RetentionBackup[], timeZone?: string, now = NOW) =>
  selectRetention(policy, backups, timeZone === undefined ? { now } : { now, timeZone });
const keptNames = (s: RetentionSelection) => s.keep.map((k) => k.name);
const deletedNames = (s: RetentionSelection) => s.delete.map((d) => d.name);

describe('the rules, one at a time', () => {
  it('an empty policy keeps everything, failures included', () => {
    const s = select({}, [
      ok('s1', '2025-01-03T00:00:00Z'),
      failed('f2', '2025-01-02T00:00:00Z'),
      failed('p3', '2025-01-01T00:00:00Z', 'PartiallyFailed'),
    ]);
    expect(keptNames(s)).toEqual(['s1', 'f2', 'p3']);
    expect(s.delete).toEqual([]);
    expect(s.keep[1]!.reasons).toEqual(['policy-empty']);
    // Fields that are not the policy's (an object read from the API) do not make it non-empty.
    const withExtra = { futureField: 1 } as RetentionPolicy;
    expect(
      select(withExtra, [ok('s1', '2025-01-02T00:00:00Z'), ok('s0', '2025-01-01T00:00:00Z')]).delete,
    ).toEqual([]);
  });

  it('keepLast counts successes only; failures older than the newest success go', () => {
    const s = select({ keepLast: 2 }, [
      ok('s1', '2025-01-01T00:00:00Z'),
      failed('f2', '2025-01-02T00:00:00Z'),
      ok('s3', '2025-01-03T00:00:00Z'),
      ok('s4', '2025-01-04T00:00:00Z'),
      failed('f5', '2025-01-05T00:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 'f5', reasons: ['failed-after-newest-success'] },
      { name: 's4', reasons: ['newest-success', 'last'] },
      { name: 's3', reasons: ['last'] },
    ]);
    expect(s.delete).toEqual([
      { name: 'f2', reason: 'failed-superseded' },
      { name: 's1', reason: 'not-selected' },
    ]);
  });

  it('keepDaily keeps the newest of each day that has a backup; empty days do not count', () => {
    const s = select({ keepDaily: 3 }, [
      ok('d1a', '2025-01-01T08:00:00Z'),
      ok('d1b', '2025-01-01T20:00:00Z'),
      ok('d3', '2025-01-03T10:00:00Z'),
      ok('d5a', '2025-01-05T09:00:00Z'),
      ok('d5b', '2025-01-05T18:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 'd5b', reasons: ['newest-success', 'daily'] },
      { name: 'd3', reasons: ['daily'] },
      { name: 'd1b', reasons: ['daily'] },
    ]);
    expect(deletedNames(s)).toEqual(['d5a', 'd1a']);
  });

  it('a failed backup does not fill a bucket', () => {
    // The newest day has only a failure: the two daily buckets are 3 Jan and 2 Jan.
    const s = select({ keepDaily: 2 }, [
      ok('d1', '2025-01-01T10:00:00Z'),
      ok('d2', '2025-01-02T10:00:00Z'),
      ok('d3', '2025-01-03T10:00:00Z'),
      failed('f4', '2025-01-04T10:00:00Z'),
    ]);
    expect(keptNames(s)).toEqual(['f4', 'd3', 'd2']);
    expect(deletedNames(s)).toEqual(['d1']);
  });

  it('keepWeekly uses ISO weeks: Monday starts a week, Sunday ends one', () => {
    const backups = [
      ok('sat', '2025-12-27T12:00:00Z'),
      ok('sun', '2025-12-28T12:00:00Z'),
      ok('mon', '2025-12-29T12:00:00Z'),
    ];
    for (const keepWeekly of [2, 3]) {
      const s = select({ keepWeekly }, backups);
      expect(keptNames(s)).toEqual(['mon', 'sun']);
      expect(s.keep[1]!.reasons).toEqual(['weekly']);
      expect(deletedNames(s)).toEqual(['sat']);
    }
  });

  it('keepMonthly and keepYearly keep the newest of each month and year', () => {
    const s = select({ keepMonthly: 2, keepYearly: 2 }, [
      ok('nov15', '2024-11-15T12:00:00Z'),
      ok('dec31', '2024-12-31T23:00:00Z'),
      ok('jan01', '2025-01-01T01:00:00Z'),
      ok('jan20', '2025-01-20T12:00:00Z'),
      ok('feb03', '2025-02-03T12:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 'feb03', reasons: ['newest-success', 'monthly', 'yearly'] },
      { name: 'jan20', reasons: ['monthly'] },
      { name: 'dec31', reasons: ['yearly'] },
    ]);
    expect(deletedNames(s)).toEqual(['jan01', 'nov15']);
  });

  it('maxAge is a ceiling on the rules; alone it keeps every success younger than it', () => {
    const now = at('2025-06-10T00:00:00Z');
    const backups = [
      ok('a72', new Date(now - 72 * HOUR).toISOString()),
      ok('b48', new Date(now - 48 * HOUR).toISOString()),
      ok('c1', new Date(now - HOUR).toISOString()),
    ];
    for (const counts of [{ keepLast: 3 }, { keepDaily: 3 }]) {
      const withCount = select({ ...counts, maxAge: '48h' }, backups, undefined, now);
      expect(keptNames(withCount)).toEqual(['c1', 'b48']);
      expect(withCount.delete).toEqual([{ name: 'a72', reason: 'older-than-max-age' }]);
    }
    const alone = select({ maxAge: '48h' }, backups, undefined, now);
    expect(alone.keep).toEqual([
      { name: 'c1', reasons: ['newest-success', 'within-max-age'] },
      { name: 'b48', reasons: ['within-max-age'] }, // exactly 48 h old is not older than 48 h
    ]);
    expect(alone.delete).toEqual([{ name: 'a72', reason: 'older-than-max-age' }]);
  });

  it('a count of 0 is a rule that keeps nothing: only the guarantees remain', () => {
    const s = select({ keepLast: 0, maxAge: '1000h' }, [
      ok('s1', '2025-12-30T00:00:00Z'),
      ok('s2', '2025-12-31T00:00:00Z'),
    ]);
    expect(keptNames(s)).toEqual(['s2']);
    expect(s.delete).toEqual([{ name: 's1', reason: 'not-selected' }]);
  });
});

describe('the guarantees', () => {
  it('the newest success stays even when maxAge has passed; a newer failure stays with it', () => {
    const s = select({ keepLast: 1, maxAge: '24h' }, [
      ok('old', '2025-12-20T00:00:00Z'),
      ok('older', '2025-12-19T00:00:00Z'),
      failed('f', '2025-12-31T00:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 'f', reasons: ['failed-after-newest-success'] },
      { name: 'old', reasons: ['newest-success'] },
    ]);
    expect(s.delete).toEqual([{ name: 'older', reason: 'older-than-max-age' }]);
  });

  it('with no success at all, failures are all kept', () => {
    const s = select({ keepLast: 1 }, [
      failed('f1', '2025-01-01T00:00:00Z'),
      failed('p2', '2025-01-02T00:00:00Z', 'PartiallyFailed'),
    ]);
    expect(keptNames(s)).toEqual(['p2', 'f1']);
    expect(s.delete).toEqual([]);
  });

  it('keeps the newest verified backup, not an older verified one', () => {
    const s = select({ keepLast: 1 }, [
      ok('s1', '2025-01-01T00:00:00Z', { verifiedAt: at('2025-01-01T05:00:00Z') }),
      ok('s2', '2025-01-02T00:00:00Z', { verifiedAt: at('2025-01-02T05:00:00Z') }),
      ok('s3', '2025-01-03T00:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 's3', reasons: ['newest-success', 'last'] },
      { name: 's2', reasons: ['newest-verified'] },
    ]);
    expect(deletedNames(s)).toEqual(['s1']);
  });

  it('keeps what a running Restore or Verify reads, whatever its outcome', () => {
    const s = select({ keepLast: 1 }, [
      ok('s1', '2025-01-01T00:00:00Z', { inUse: true }),
      { ...failed('f2', '2025-01-02T00:00:00Z'), inUse: true },
      ok('s3', '2025-01-03T00:00:00Z'),
    ]);
    expect(keptNames(s)).toEqual(['s3', 'f2', 's1']);
    expect(s.keep[2]!.reasons).toEqual(['in-use']);
  });

  it('keeps backups still running and backups it cannot place in time; startedAt stands in', () => {
    const s = select({ keepLast: 1 }, [
      { name: 'running', startedAt: at('2025-01-04T00:00:00Z'), outcome: 'InProgress' },
      { name: 'nodate', outcome: 'Succeeded' },
      { name: 'started-only', startedAt: at('2025-01-03T00:00:00Z'), outcome: 'Succeeded' },
      ok('s1', '2025-01-01T00:00:00Z'),
    ]);
    expect(s.keep).toEqual([
      { name: 'running', reasons: ['in-progress'] },
      { name: 'started-only', reasons: ['newest-success', 'last'] },
      { name: 'nodate', reasons: ['undated'] },
    ]);
    expect(deletedNames(s)).toEqual(['s1']);
  });
});

describe('time zones', () => {
  it('days are calendar days of the given zone', () => {
    // 23:30 and 00:30 Berlin summer time: two days in Berlin, one (30 June) in UTC.
    const backups = [ok('a', '2025-06-30T21:30:00Z'), ok('b', '2025-06-30T22:30:00Z')];
    expect(keptNames(select({ keepDaily: 2 }, backups, 'Europe/Berlin'))).toEqual(['b', 'a']);
    expect(keptNames(select({ keepDaily: 2 }, backups, 'UTC'))).toEqual(['b']);
    expect(keptNames(select({ keepDaily: 2 }, backups))).toEqual(['b']);
  });

  // Berlin falls back on 2025-10-26 at 01:00Z (03:00 CEST → 02:00 CET): that day runs 22:00Z → 23:00Z, 25 hours.
  const prev = ok('prev', '2025-10-25T21:30:00Z'); // 23:30 on 25 October
  const hourly = Array.from({ length: 25 }, (_, i) =>
    ok(`h${i}`, new Date(at('2025-10-25T22:00:00Z') + i * HOUR).toISOString()),
  );

  it("Europe/Berlin's fall-back day, 25 hours long, is one daily bucket", () => {
    const s = select({ keepDaily: 2 }, [prev, ...hourly], 'Europe/Berlin');
    expect(keptNames(s)).toEqual(['h24', 'prev']);
    expect(s.delete).toHaveLength(24);
  });

  it('the hour repeated when clocks fall back is one hourly bucket', () => {
    // h2 is 02:00 CEST, h3 is 02:00 CET: one bucket, whose newest is h3. 24 buckets are h0…h24 less h2.
    const berlin = select({ keepHourly: 24 }, [prev, ...hourly], 'Europe/Berlin');
    expect(deletedNames(berlin)).toEqual(['h2', 'prev']);
    const utc = select({ keepHourly: 24 }, [prev, ...hourly], 'UTC');
    expect(deletedNames(utc)).toEqual(['h0', 'prev']);
  });
});

describe('a policy that cannot be used', () => {
  it('names each bad field and says what to write', () => {
    const problems = retentionPolicyProblems(
      { keepLast: 1.5, keepDaily: -1, maxAge: '7d' },
      'spec.retention',
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^spec\.retention\.keepLast: must be a whole number ≥ 0, got 1\.5$/);
    expect(problems[1]).toMatch(/^spec\.retention\.keepDaily: .* got -1$/);
    expect(problems[2]).toMatch(/^spec\.retention\.maxAge: invalid duration "7d".*"720h" for 30 days$/);
    expect(retentionPolicyProblems({ maxAge: '0s' })[0]).toMatch(/^retention\.maxAge: .*greater than zero/);
    expect(retentionPolicyProblems({ keepLast: 0, keepYearly: 3, maxAge: '8760h' })).toEqual([]);
  });

  it('selectRetention refuses a bad policy or zone rather than guess', () => {
    expect(() => select({ keepWeekly: -2 }, [])).toThrow(RangeError);
    expect(() => select({ keepWeekly: 2 }, [], 'Mars/Olympus')).toThrow(/timeZone: unknown time zone/);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Properties, against a deliberately naive reference: bucket names from Intl's formatted wall clock, ISO weeks
// by the Thursday rule, each rule as "group by bucket, take the newest of the first n groups".

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'] as const;
const formatters = new Map<string, Intl.DateTimeFormat>();
function wallFields(t: number, zone: string): { y: number; mo: number; d: number; h: number } {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      hourCycle: 'h23',
    });
    formatters.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(t).map((p) => [p.type, p.value]));
  return { y: Number(parts.year), mo: Number(parts.month), d: Number(parts.day), h: Number(parts.hour) };
}
function isoWeek(y: number, mo: number, d: number): string {
  const date = new Date(Date.UTC(y, mo - 1, d));
  const mondayBased = (date.getUTCDay() + 6) % 7;
  const thursday = new Date(date.getTime() + (3 - mondayBased) * 86_400_000);
  const week =
    1 + Math.floor((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / (7 * 86_400_000));
  return `${thursday.getUTCFullYear()}-W${week}`;
}
type Rule = 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';
function bucketName(rule: Rule, { y, mo, d, h }: ReturnType<typeof wallFields>): string {
  switch (rule) {
    case 'hourly':
      return `${y}-${mo}-${d} ${h}`;
    case 'daily':
      return `${y}-${mo}-${d}`;
    case 'weekly':
      return isoWeek(y, mo, d);
    case 'monthly':
      return `${y}-${mo}`;
    case 'yearly':
      return `${y}`;
  }
}
const RULE_FIELD = {
  hourly: 'keepHourly',
  daily: 'keepDaily',
  weekly: 'keepWeekly',
  monthly: 'keepMonthly',
  yearly: 'keepYearly',
} as const;
const time = (b: RetentionBackup) => b.completedAt ?? b.startedAt!;

/** The names the policy must keep: (rules ∩ young) ∪ {newest verified} ∪ {newest success} ∪ {in use} ∪ …. */
function referenceKept(
  policy: RetentionPolicy,
  backups: RetentionBackup[],
  zone: string,
  now: number,
): string[] {
  if (Object.values(policy).every((v) => v === undefined)) return backups.map((b) => b.name);
  const newestFirst = [...backups].sort((a, b) => time(b) - time(a) || (a.name < b.name ? -1 : 1));
  const successes = newestFirst.filter((b) => b.outcome === 'Succeeded');
  const maxAgeMs =
    policy.maxAge === undefined ? Number.POSITIVE_INFINITY : Number(policy.maxAge.slice(0, -1)) * HOUR;
  const young = (b: RetentionBackup) => now - time(b) <= maxAgeMs;
  const byRules = new Set<RetentionBackup>(successes.slice(0, policy.keepLast ?? 0));
  const fields = new Map(successes.map((b) => [b, wallFields(time(b), zone)]));
  for (const [rule, field] of Object.entries(RULE_FIELD) as [Rule, keyof RetentionPolicy][]) {
    const groups = new Map<string, RetentionBackup[]>();
    for (const b of successes) {
      const key = bucketName(rule, fields.get(b)!);
      const group = groups.get(key);
      if (group) group.push(b);
      else groups.set(key, [b]);
    }
    for (const group of [...groups.values()].slice(0, (policy[field] as number | undefined) ?? 0)) {
      byRules.add(group[0]!);
    }
  }
  const anyCount = ['keepLast', ...Object.values(RULE_FIELD)].some(
    (f) => policy[f as keyof RetentionPolicy] !== undefined,
  );
  const kept = new Set([...(anyCount ? byRules : successes)].filter(young));
  const newestSuccess = successes[0];
  if (newestSuccess) kept.add(newestSuccess);
  const newestVerified = successes.find((b) => b.verifiedAt !== undefined);
  if (newestVerified) kept.add(newestVerified);
  for (const b of newestFirst) {
    if (b.inUse || b.outcome === 'InProgress') kept.add(b);
    if (b.outcome !== 'Succeeded' && (!newestSuccess || time(b) > time(newestSuccess))) kept.add(b);
  }
  return newestFirst.filter((b) => kept.has(b)).map((b) => b.name);
}

const HOURS = 400 * 24;
interface History {
  zone: string;
  backups: RetentionBackup[];
  now: number;
}
/** 400 days of hourly backups: outages (no backup at all), ~6% failed, ~2% partial, ~1% verified, ~0.1% in use. */
const history: fc.Arbitrary<History> = fc
  .record({
    zone: fc.constantFrom(...ZONES),
    start: fc.integer({ min: at('2019-01-01T00:00:00Z') / HOUR, max: at('2029-01-01T00:00:00Z') / HOUR }),
    minute: fc.integer({ min: 0, max: 59 }),
    outages: fc.array(fc.record({ from: fc.nat(HOURS - 1), hours: fc.integer({ min: 1, max: 24 * 20 }) }), {
      maxLength: 4,
    }),
    // One word of dice per hour; not shrunk, so a failure reports its case without a long search.
    dice: fc.noShrink(fc.uint32Array({ minLength: HOURS, maxLength: HOURS })),
    lastRunning: fc.boolean(),
    after: fc.integer({ min: 0, max: 72 * 60 }),
  })
  .map(({ zone, start, minute, outages, dice, lastRunning, after }) => {
    const backups: RetentionBackup[] = [];
    for (let i = 0; i < HOURS; i++) {
      if (outages.some((o) => i >= o.from && i < o.from + o.hours)) continue;
      const t = start * HOUR + i * HOUR + minute * 60_000;
      // Bits 0–7 pick the outcome, 8–15 a verification, 16–25 a reader.
      const roll = dice[i]!;
      const r = roll & 0xff;
      const outcome: BackupOutcome = r < 15 ? 'Failed' : r < 20 ? 'PartiallyFailed' : 'Succeeded';
      const b: RetentionBackup = { name: `b${i}`, completedAt: t, outcome };
      if (outcome === 'Succeeded' && ((roll >>> 8) & 0xff) < 3) b.verifiedAt = t + HOUR;
      if (((roll >>> 16) & 0x3ff) === 0) b.inUse = true;
      backups.push(b);
    }
    const last = backups.at(-1);
    if (last && lastRunning)
      backups[backups.length - 1] = { name: last.name, startedAt: time(last), outcome: 'InProgress' };
    const now = (last ? time(last) : start * HOUR) + after * 60_000;
    return { zone, backups, now };
  });

const count = (max: number) => fc.option(fc.integer({ min: 0, max }), { nil: undefined });
const policyArb: fc.Arbitrary<RetentionPolicy> = fc
  .record({
    keepLast: count(12),
    keepHourly: count(48),
    keepDaily: count(21),
    keepWeekly: count(10),
    keepMonthly: count(15),
    keepYearly: count(3),
    maxAge: fc.option(
      fc.integer({ min: 1, max: HOURS + 48 }).map((h) => `${h}h`),
      { nil: undefined },
    ),
  })
  .map((p) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) as RetentionPolicy);

describe('properties over 400 days of hourly backups', { timeout: 300_000 }, () => {
  it('keeps exactly (keepLast ∪ GFS, within maxAge) ∪ newest verified ∪ newest success ∪ in use', () => {
    fc.assert(
      fc.property(history, policyArb, ({ zone, backups, now }, policy) => {
        const s = selectRetention(policy, backups, { now, timeZone: zone });
        expect(keptNames(s)).toEqual(referenceKept(policy, backups, zone, now));
        expect(s.keep.length + s.delete.length).toBe(backups.length);
        const maxAgeMs = policy.maxAge === undefined ? undefined : Number(policy.maxAge.slice(0, -1)) * HOUR;
        const byName = new Map(backups.map((b) => [b.name, b]));
        for (const d of s.delete) {
          const b = byName.get(d.name)!;
          // Nothing younger than maxAge is deleted for age; failures go only as superseded.
          if (d.reason === 'older-than-max-age') expect(now - time(b)).toBeGreaterThan(maxAgeMs!);
          expect(d.reason === 'failed-superseded').toBe(b.outcome !== 'Succeeded');
        }
      }),
      { numRuns: 40 },
    );
  });

  it('is idempotent: applied to what it kept, it deletes nothing more', () => {
    fc.assert(
      fc.property(history, policyArb, ({ zone, backups, now }, policy) => {
        const first = selectRetention(policy, backups, { now, timeZone: zone });
        const kept = new Set(keptNames(first));
        const again = selectRetention(
          policy,
          backups.filter((b) => kept.has(b.name)),
          { now, timeZone: zone },
        );
        expect(again.delete).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });

  it('is monotone: raising a keep count never deletes what was kept', () => {
    const field = fc.constantFrom(
      'keepLast',
      'keepHourly',
      'keepDaily',
      'keepWeekly',
      'keepMonthly',
      'keepYearly',
    ) as fc.Arbitrary<Exclude<keyof RetentionPolicy, 'maxAge'>>;
    fc.assert(
      fc.property(
        history,
        policyArb,
        field,
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 20 }),
        ({ zone, backups, now }, policy, f, base, more) => {
          const lower = { ...policy, [f]: policy[f] ?? base };
          const higher = { ...lower, [f]: lower[f]! + more };
          const before = selectRetention(lower, backups, { now, timeZone: zone });
          const after = new Set(keptNames(selectRetention(higher, backups, { now, timeZone: zone })));
          for (const name of keptNames(before)) expect(after.has(name)).toBe(true);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('properties over small arbitrary lists', () => {
  const outcome = fc.constantFrom<BackupOutcome>(
    'Succeeded',
    'Succeeded',
    'Failed',
    'PartiallyFailed',
    'InProgress',
  );
  const backupsArb = fc
    .array(
      fc.record({
        // Few distinct instants, so ties happen.
        t: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
        outcome,
        verified: fc.boolean(),
        inUse: fc.boolean(),
      }),
      { maxLength: 30 },
    )
    .map((rows) =>
      rows.map((r, i): RetentionBackup => {
        const b: RetentionBackup = { name: `n${i}`, outcome: r.outcome };
        if (r.t !== undefined) b.completedAt = at('2025-03-01T00:00:00Z') + r.t * 7 * HOUR;
        if (r.verified && r.outcome === 'Succeeded') b.verifiedAt = NOW;
        if (r.inUse && r.t !== undefined && r.t % 5 === 0) b.inUse = true;
        return b;
      }),
    );
  // The same backups, and the same backups in another order.
  const twoOrders = backupsArb.chain((bs) =>
    fc.tuple(fc.constant(bs), fc.shuffledSubarray(bs, { minLength: bs.length, maxLength: bs.length })),
  );

  it('holds the guarantees, decides each backup once, and ignores the input order', () => {
    fc.assert(
      fc.property(twoOrders, policyArb, fc.constantFrom(...ZONES), ([backups, shuffled], policy, zone) => {
        const s = selectRetention(policy, backups, { now: NOW, timeZone: zone });
        const decided = [...keptNames(s), ...deletedNames(s)].sort();
        expect(decided).toEqual(backups.map((b) => b.name).sort());
        const deleted = new Set(deletedNames(s));
        const dated = backups.filter((b) => b.completedAt !== undefined);
        const byName = new Map(backups.map((b) => [b.name, b]));
        const newestSuccessAt = Math.max(...dated.filter((b) => b.outcome === 'Succeeded').map(time));
        const newestVerifiedAt = Math.max(...dated.filter((b) => b.verifiedAt !== undefined).map(time));
        // Exactly one kept backup is marked newest success (newest verified), and it is from the newest instant.
        for (const [reason, newestAt] of [
          ['newest-success', newestSuccessAt],
          ['newest-verified', newestVerifiedAt],
        ] as const) {
          const marked = s.keep
            .filter((k) => k.reasons.includes(reason))
            .map((k) => time(byName.get(k.name)!));
          expect(marked).toEqual(Number.isFinite(newestAt) ? [newestAt] : []);
        }
        for (const b of backups) {
          if (!deleted.has(b.name)) continue;
          expect(b.inUse).not.toBe(true);
          expect(b.outcome === 'InProgress' || b.completedAt === undefined).toBe(false);
          // A failure goes only when a success is at least as new (a tie is ordered by name).
          if (b.outcome !== 'Succeeded') expect(time(b)).toBeLessThanOrEqual(newestSuccessAt);
        }
        expect(selectRetention(policy, shuffled, { now: NOW, timeZone: zone })).toEqual(s);
      }),
      { numRuns: 400 },
    );
  });
});
