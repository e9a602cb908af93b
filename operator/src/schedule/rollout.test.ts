import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CountOrPercent,
  decideRollout,
  failureBudget,
  type InstanceRunState,
  MAX_LISTED_NAMES,
  ROLLOUT_REASON,
  type RolloutDecision,
  type RolloutInput,
  type RolloutInstance,
  type RolloutStrategy,
  validateRolloutStrategy,
  waveEnds,
} from './rollout.ts';

const T0 = new Date('2026-01-01T00:00:00Z');
const min = (m: number) => new Date(T0.getTime() + m * 60_000);
const name = (i: number) => `db-${String(i).padStart(3, '0')}`;

/** `n` instances db-000.., all NotStarted, then `states` overriding some by index. */
function fleet(n: number, states: Record<number, [InstanceRunState, number?]> = {}): RolloutInstance[] {
  return Array.from({ length: n }, (_, i) => {
    const [state, finished] = states[i] ?? ['NotStarted'];
    return { name: name(i), state, ...(finished !== undefined ? { finishedAt: min(finished) } : {}) };
  });
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => name(from + k));
const done = (from: number, to: number, state: InstanceRunState = 'Succeeded', at = 0) =>
  Object.fromEntries(range(from, to).map((_, k) => [from + k, [state, at]])) as Record<
    number,
    [InstanceRunState, number?]
  >;

const canary: RolloutStrategy = { waves: [1, '10%', '50%', '100%'], failureBudget: 1 };
const decide = (over: Partial<RolloutInput>): RolloutDecision =>
  decideRollout({ strategy: canary, instances: fleet(30), now: min(100), ...over });

describe('waves', () => {
  it('are cumulative, percentages of the fleet rounded up', () => {
    expect(waveEnds([1, '10%', '50%', '100%'], 30)).toEqual([1, 3, 15, 30]);
    // 10% of 5 is 0.5: the canary is one instance, not none; the rest form a final wave.
    expect(waveEnds(['10%'], 5)).toEqual([1, 5]);
    expect(waveEnds(['34%', '67%'], 3)).toEqual([2, 3]);
  });

  it('skip a wave that ends where the one before did, and stop at the fleet', () => {
    expect(waveEnds([5, '10%', '100%'], 30)).toEqual([5, 30]);
    expect(waveEnds([10, 50], 30)).toEqual([10, 30]);
    expect(waveEnds([1, '100%'], 0)).toEqual([]);
  });
});

describe('failure budget', () => {
  it('is a count, or a percentage of the fleet rounded down; unset is zero', () => {
    expect(failureBudget(2, 30)).toBe(2);
    expect(failureBudget('10%', 30)).toBe(3);
    expect(failureBudget('15%', 30)).toBe(4);
    expect(failureBudget('10%', 5)).toBe(0);
    expect(failureBudget(undefined, 30)).toBe(0);
  });
});

describe('validateRolloutStrategy', () => {
  it('accepts counts and percentages that grow', () => {
    expect(
      validateRolloutStrategy({
        waves: [1, 5, '10%', '100%'],
        failureBudget: '5%',
        pauseBetweenWaves: '10m',
      }),
    ).toEqual([]);
  });

  it('names the field of each problem', () => {
    expect(
      validateRolloutStrategy({
        waves: [0, '0%', '150%', 3, 2, '50%', '20%', 1.5, 'half'],
        failureBudget: -1,
        pauseBetweenWaves: '5 minutes',
      }),
    ).toEqual([
      'spec.rollout.waves[0]: 0 is not a whole number of instances of at least 1',
      'spec.rollout.waves[1]: "0%" must be a whole percentage from 1% to 100%, or a count',
      'spec.rollout.waves[2]: "150%" must be a whole percentage from 1% to 100%, or a count',
      'spec.rollout.waves[4]: 2 is less than the wave before (3); waves are cumulative',
      'spec.rollout.waves[6]: "20%" is less than the wave before (50%); waves are cumulative',
      'spec.rollout.waves[7]: 1.5 is not a whole number of instances of at least 1',
      'spec.rollout.waves[8]: "half" must be a whole percentage from 1% to 100%, or a count',
      'spec.rollout.failureBudget: -1 must be a whole number of instances (0 or more) or a percentage from 0% to 100%',
      'spec.rollout.pauseBetweenWaves: invalid duration "5 minutes": unexpected "5 minutes" (examples: "2h", "90m", "2h30m", "1.5h")',
    ]);
    expect(validateRolloutStrategy({ waves: [] })).toEqual([
      'spec.rollout.waves: list at least one wave, e.g. [1, "10%", "100%"]',
    ]);
    expect(validateRolloutStrategy({ waves: [1], pauseBetweenWaves: '-5m' })).toEqual([
      'spec.rollout.pauseBetweenWaves: "-5m" must not be negative',
    ]);
  });

  it('makes the run Invalid: nothing starts and the message says what to fix', () => {
    const d = decide({ strategy: { waves: ['0%'] } });
    expect(d.phase).toBe('Invalid');
    expect(d.reason).toBe(ROLLOUT_REASON.InvalidRollout);
    expect(d.start).toEqual([]);
    expect(d.message).toContain('spec.rollout.waves[0]');
    expect(d.message).toContain('nothing starts until it is fixed');
  });
});

describe('decideRollout', () => {
  it('starts the first wave, in name order whatever the input order', () => {
    const d = decide({ instances: fleet(30).reverse() });
    expect(d).toMatchObject({ phase: 'Progressing', reason: ROLLOUT_REASON.WaveRunning, start: ['db-000'] });
    expect(d.wave).toEqual({ index: 1, of: 4, size: 1 });
    expect(d.remaining.count).toBe(30);
  });

  it('starts no later wave while an instance of the current one runs', () => {
    const d = decide({ instances: fleet(30, { 0: ['Running'] }) });
    expect(d.start).toEqual([]);
    expect(d.wave?.index).toBe(1);
    expect(d.running).toEqual({ count: 1, names: ['db-000'] });
  });

  it('starts the next wave once every instance of the current one finished', () => {
    const d = decide({ instances: fleet(30, done(0, 1)) });
    expect(d.start).toEqual(['db-001', 'db-002']);
    expect(d.wave).toEqual({ index: 2, of: 4, size: 2 });
  });

  it('starts at most maxConcurrent at once', () => {
    const instances = fleet(30, { ...done(0, 3), 3: ['Running'], 4: ['Running'] });
    const d = decide({ instances, maxConcurrent: 5 });
    expect(d.start).toEqual(['db-005', 'db-006', 'db-007']);
    expect(decide({ instances, maxConcurrent: 2 }).start).toEqual([]);
    expect(decide({ instances }).start).toEqual(range(5, 15));
  });

  it('goes on while failures are within the budget', () => {
    const d = decide({ instances: fleet(30, { ...done(0, 3), 1: ['Failed', 0] }) });
    expect(d.phase).toBe('Progressing');
    expect(d.start).toEqual(range(3, 15));
    expect(d.failures).toEqual({ counted: 1, budget: 1 });
  });

  it('halts when failures exceed the budget, even inside a wave, and says what to do', () => {
    const instances = fleet(30, { ...done(0, 3), 3: ['Failed', 1], 4: ['Failed', 2], 5: ['Running'] });
    const d = decide({ instances });
    expect(d.phase).toBe('Halted');
    expect(d.reason).toBe(ROLLOUT_REASON.FailureBudgetExceeded);
    expect(d.start).toEqual([]);
    expect(d.wave?.index).toBe(3);
    expect(d.failed).toEqual({ count: 2, names: ['db-003', 'db-004'] });
    expect(d.running.names).toEqual(['db-005']);
    expect(d.remaining.count).toBe(24);
    expect(d.message).toContain('db-003, db-004');
    expect(d.message).toContain('kubectl vws resume');
    expect(d.message).toContain('kubectl vws abandon');
  });

  it('a zero budget (the default) halts on the first failure', () => {
    const d = decide({ strategy: { waves: [1, '100%'] }, instances: fleet(30, { 0: ['Failed', 1] }) });
    expect(d.phase).toBe('Halted');
    expect(d.failures).toEqual({ counted: 1, budget: 0 });
  });

  it('after a resume counts only failures that finished after it', () => {
    const instances = fleet(30, { ...done(0, 3), 3: ['Failed', 1], 4: ['Failed', 2] });
    const d = decide({ instances, resumedAt: min(3) });
    expect(d.phase).toBe('Progressing');
    expect(d.failures.counted).toBe(0);
    expect(d.start).toEqual(range(5, 15));
    // The failed instances are not started again.
    expect(d.start).not.toContain('db-003');
    const again = fleet(30, {
      ...done(0, 3),
      3: ['Failed', 1],
      4: ['Failed', 2],
      5: ['Failed', 4],
      6: ['Failed', 5],
    });
    expect(decide({ instances: again, resumedAt: min(3) })).toMatchObject({
      phase: 'Halted',
      failures: { counted: 2, budget: 1 },
    });
  });

  it('counts a failure without a finish time after any resume', () => {
    const instances = fleet(30, { 0: ['Failed'] });
    expect(decide({ instances, resumedAt: min(50), strategy: { waves: [1] } }).phase).toBe('Halted');
  });

  it('pauses between waves, then starts the next wave', () => {
    const strategy = { ...canary, pauseBetweenWaves: '5m' };
    const instances = fleet(30, { 0: ['Succeeded', 10] });
    const waiting = decide({ strategy, instances, now: min(12) });
    expect(waiting).toMatchObject({
      phase: 'Progressing',
      reason: ROLLOUT_REASON.PausedBetweenWaves,
      start: [],
      requeueAt: min(15),
    });
    expect(waiting.message).toContain('2026-01-01T00:15:00.000Z');
    expect(decide({ strategy, instances, now: min(15) }).start).toEqual(['db-001', 'db-002']);
  });

  it('measures the pause from the last instance of the wave to finish', () => {
    const strategy = { ...canary, pauseBetweenWaves: '5m' };
    const instances = fleet(30, { 0: ['Succeeded', 1], 1: ['Succeeded', 20], 2: ['Failed', 9] });
    expect(decide({ strategy, instances, now: min(22) }).requeueAt).toEqual(min(25));
  });

  it('abandoned: nothing more starts, what runs is listed, a later resume changes nothing', () => {
    const instances = fleet(30, { 0: ['Failed', 1], 1: ['Failed', 2], 2: ['Running'] });
    const d = decide({ instances, abandonedAt: min(5), resumedAt: min(6) });
    expect(d).toMatchObject({ phase: 'Abandoned', reason: ROLLOUT_REASON.RolloutAbandoned, start: [] });
    expect(d.running.names).toEqual(['db-002']);
    expect(d.message).toContain('start a new run');
  });

  it('passes over an instance removed before it started, keeping the waves as they were', () => {
    const instances = fleet(30, { 0: ['Succeeded', 1], 1: ['Removed'] });
    const d = decide({ instances });
    expect(d.start).toEqual(['db-002']);
    expect(d.removed).toEqual({ count: 1, names: ['db-001'] });
    expect(d.failures.counted).toBe(0);
    // A wave of removed instances only is finished.
    const gone = fleet(30, { 0: ['Succeeded', 1], 1: ['Removed'], 2: ['Removed'] });
    expect(decide({ instances: gone }).start).toEqual(range(3, 15));
  });

  it('does not count a cancelled instance as a failure, nor start it again', () => {
    const d = decide({ strategy: { waves: [1, '100%'] }, instances: fleet(3, { 0: ['Cancelled', 1] }) });
    expect(d.phase).toBe('Progressing');
    expect(d.start).toEqual(['db-001', 'db-002']);
    expect(d.cancelled.names).toEqual(['db-000']);
  });

  it('completes when every instance finished, saying so when some failed', () => {
    expect(decide({ instances: fleet(30, done(0, 30)) })).toMatchObject({
      phase: 'Completed',
      reason: ROLLOUT_REASON.RolloutCompleted,
      wave: { index: 4, of: 4, size: 15 },
    });
    const d = decide({ instances: fleet(30, { ...done(0, 30), 29: ['Failed', 1] }) });
    expect(d).toMatchObject({ phase: 'Completed', reason: ROLLOUT_REASON.CompletedWithFailures });
    expect(d.message).toContain('db-029');
  });

  it('an empty fleet is complete, with no wave', () => {
    const d = decide({ instances: [] });
    expect(d.phase).toBe('Completed');
    expect(d.wave).toBeUndefined();
    expect(d.start).toEqual([]);
  });

  it('bounds the status lists of a huge fleet, keeping whole counts', () => {
    const d = decide({ instances: fleet(5000, done(0, 3000, 'Failed', 1)) });
    expect(d.failed.count).toBe(3000);
    expect(d.failed.names).toEqual(range(0, MAX_LISTED_NAMES));
    expect(d.remaining.count).toBe(2000);
    expect(d.remaining.names).toHaveLength(MAX_LISTED_NAMES);
    const halted = decide({ instances: fleet(5000, done(0, 30, 'Failed', 1)) });
    expect(halted.message).toContain(`${range(0, MAX_LISTED_NAMES).join(', ')} and 10 more`);
    expect(d.message.length).toBeLessThan(2000);
  });
});

// ---- simulated runs ----

type Outcome = 'Succeeded' | 'Failed' | 'Cancelled';

interface Run {
  instances: Map<string, RolloutInstance>;
  /** Every decision's start, in order, with the step it came at. */
  batches: { step: number; names: string[]; decision: RolloutDecision }[];
  decisions: RolloutDecision[];
}

/**
 * Reconciles a fleet step by step, a minute apart: each step decides, creates what it says (Running),
 * then ends the running instances `finishes` picks with their outcome. `resumeAt` steps resume the run.
 */
function simulate(opts: {
  strategy: RolloutStrategy;
  n: number;
  outcome: (name: string, step: number) => Outcome;
  finishes?: (name: string, step: number) => boolean;
  maxConcurrent?: number;
  resumeAt?: readonly number[];
  steps: number;
  check?: (d: RolloutDecision, run: Run, resumedNow: boolean) => void;
}): Run {
  const run: Run = {
    instances: new Map(fleet(opts.n).map((i) => [i.name, i])),
    batches: [],
    decisions: [],
  };
  let resumedAt: Date | undefined;
  for (let step = 0; step < opts.steps; step++) {
    const now = min(step);
    const resumedNow = opts.resumeAt?.includes(step) ?? false;
    if (resumedNow) resumedAt = now;
    const d = decideRollout({
      strategy: opts.strategy,
      instances: [...run.instances.values()],
      now,
      ...(opts.maxConcurrent !== undefined ? { maxConcurrent: opts.maxConcurrent } : {}),
      ...(resumedAt ? { resumedAt } : {}),
    });
    opts.check?.(d, run, resumedNow);
    run.decisions.push(d);
    if (d.start.length > 0) run.batches.push({ step, names: d.start, decision: d });
    for (const s of d.start) {
      const i = run.instances.get(s);
      if (i?.state !== 'NotStarted') throw new Error(`${s} started again (was ${i?.state})`);
      run.instances.set(s, { name: s, state: 'Running' });
    }
    for (const i of run.instances.values())
      if (i.state === 'Running' && (opts.finishes?.(i.name, step) ?? true))
        run.instances.set(i.name, { name: i.name, state: opts.outcome(i.name, step), finishedAt: now });
    if (d.phase === 'Completed') break;
  }
  return run;
}

describe("the issue's scenario: 30 instances, wave 1 fails beyond the budget", () => {
  it('halts after wave 1; later waves never start; a resume after the fix runs the rest in their waves', () => {
    // db-000 and db-001 fail until the cause is fixed at step 55; the person resumes at step 60.
    const run = simulate({
      strategy: { waves: ['10%', '50%', '100%'], failureBudget: 1 },
      n: 30,
      outcome: (n, step) => (step < 55 && (n === 'db-000' || n === 'db-001') ? 'Failed' : 'Succeeded'),
      resumeAt: [60],
      steps: 100,
    });
    const halted = run.decisions[59];
    expect(halted).toMatchObject({
      phase: 'Halted',
      reason: ROLLOUT_REASON.FailureBudgetExceeded,
      start: [],
    });
    expect(halted?.failed.names).toEqual(['db-000', 'db-001']);
    expect(halted?.succeeded.names).toEqual(['db-002']);
    expect(halted?.remaining.count).toBe(27);
    // Halted on every step from the failures to the resume: later waves never started.
    expect(run.decisions.slice(1, 60).every((d) => d.phase === 'Halted' && d.start.length === 0)).toBe(true);
    expect(run.batches.map((b) => [b.step, b.names])).toEqual([
      [0, range(0, 3)],
      [60, range(3, 15)],
      [61, range(15, 30)],
    ]);
    expect(run.decisions.at(-1)).toMatchObject({
      phase: 'Completed',
      reason: ROLLOUT_REASON.CompletedWithFailures,
      failed: { count: 2, names: ['db-000', 'db-001'] },
      succeeded: { count: 28 },
    });
  });
});

// ---- properties ----

/** A valid wave list: counts and percentages, each kind growing. */
const wavesArb: fc.Arbitrary<CountOrPercent[]> = fc
  .array(
    fc.oneof(
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 100 }).map((p) => `${p}%`),
    ),
    {
      minLength: 1,
      maxLength: 5,
    },
  )
  .map((ws) => {
    const counts = ws.filter((w): w is number => typeof w === 'number').sort((a, b) => a - b);
    const percents = ws
      .filter((w): w is string => typeof w === 'string')
      .map((w) => Number.parseInt(w, 10))
      .sort((a, b) => a - b);
    return ws.map((w) => (typeof w === 'number' ? (counts.shift() ?? 1) : `${percents.shift() ?? 100}%`));
  });

const strategyArb: fc.Arbitrary<RolloutStrategy> = fc.record({
  waves: wavesArb,
  failureBudget: fc.oneof(
    fc.integer({ min: 0, max: 5 }),
    fc.integer({ min: 0, max: 50 }).map((p) => `${p}%`),
  ),
  pauseBetweenWaves: fc.constantFrom('0s', '1m', '3m'),
});

/**
 * The instance indexes a wave list puts in each wave, from the definition: a percentage p of n covers
 * the smallest k with k·100 ≥ p·n; waves are cumulative; the rest is a final wave.
 */
function oracleWaves(waves: readonly CountOrPercent[], n: number): number[][] {
  const cover = (w: CountOrPercent) => {
    if (typeof w === 'number') return Math.min(w, n);
    const p = Number.parseInt(w, 10);
    let k = 0;
    while (k * 100 < p * n) k++;
    return k;
  };
  const result: number[][] = [];
  let end = 0;
  for (const w of [...waves, '100%']) {
    const next = Math.max(end, cover(w));
    if (next > end) result.push(Array.from({ length: next - end }, (_, k) => end + k));
    end = next;
  }
  return result;
}

const RUNS = 300;

const index = (s: string) => Number(s.slice(3));
/** Whether `s` finishes at `step`: as the generated pattern says, and every fifth step at the latest. */
const finishes = (pattern: readonly boolean[], s: string, step: number) =>
  (pattern[(index(s) * 7 + step) % pattern.length] ?? true) || step % 5 === 0;

/** A strategy, a fleet size and a maxConcurrent (or none). */
const runArbs = [
  strategyArb,
  fc.integer({ min: 0, max: 40 }),
  fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
] as const;

describe('properties of simulated runs', () => {
  it('never starts more than the current wave allows, nothing once halted until a resume, nobody twice', () => {
    fc.assert(
      fc.property(
        ...runArbs,
        fc.array(fc.constantFrom<Outcome>('Succeeded', 'Succeeded', 'Failed', 'Cancelled'), {
          minLength: 40,
          maxLength: 40,
        }),
        fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 120 }), { maxLength: 3 }),
        (strategy, n, maxConcurrent, outcomes, finishing, resumeAt) => {
          const waveOf = new Map<string, number>();
          oracleWaves(strategy.waves, n).forEach((idx, w) => {
            for (const i of idx) waveOf.set(name(i), w);
          });
          let haltedSinceResume = false;
          simulate({
            strategy,
            n,
            outcome: (s) => outcomes[index(s)] ?? 'Succeeded',
            finishes: (s, step) => finishes(finishing, s, step),
            ...(maxConcurrent !== undefined ? { maxConcurrent } : {}),
            resumeAt,
            steps: 160,
            check: (d, run, resumedNow) => {
              if (resumedNow) haltedSinceResume = false;
              const states = [...run.instances.values()];
              // Only instances of one wave, the earliest with an unfinished instance.
              const waves = new Set(d.start.map((s) => waveOf.get(s)));
              expect(waves.size).toBeLessThanOrEqual(1);
              for (const s of d.start) {
                const w = waveOf.get(s) ?? -1;
                const earlierOpen = states.filter(
                  (i) =>
                    (waveOf.get(i.name) ?? -1) < w && (i.state === 'NotStarted' || i.state === 'Running'),
                );
                expect(earlierOpen).toEqual([]);
              }
              if (maxConcurrent !== undefined && d.start.length > 0)
                expect(
                  d.start.length + states.filter((i) => i.state === 'Running').length,
                ).toBeLessThanOrEqual(maxConcurrent);
              if (d.phase === 'Halted') haltedSinceResume = true;
              if (haltedSinceResume || d.phase !== 'Progressing') expect(d.start).toEqual([]);
            },
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('without failures, starts every instance exactly once, in name order, a wave at a time, and completes', () => {
    fc.assert(
      fc.property(
        ...runArbs,
        fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        (strategy, n, maxConcurrent, finishing) => {
          const run = simulate({
            strategy,
            n,
            outcome: () => 'Succeeded',
            finishes: (s, step) => finishes(finishing, s, step),
            ...(maxConcurrent !== undefined ? { maxConcurrent } : {}),
            steps: 1000,
          });
          const started = run.batches.flatMap((b) => b.names);
          expect(started).toEqual(range(0, n));
          expect(run.decisions.at(-1)).toMatchObject({
            phase: 'Completed',
            reason: ROLLOUT_REASON.RolloutCompleted,
          });
          // Batches never mix waves, and follow the oracle's waves in order.
          const waves = oracleWaves(strategy.waves, n).map((idx) => idx.map(name));
          const byWave = waves.map((w) => run.batches.filter((b) => b.names.every((s) => w.includes(s))));
          expect(byWave.reduce((k, bs) => k + bs.length, 0)).toBe(run.batches.length);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
