// How a fleet run rolls out in waves, as a pure function of the strategy, the run's instances with
// their states, a person's resume or abandon, and now (ADR 0043, docs/rollout.md). A CronOperation's
// spec.rollout calls it once per reconcile of an unfinished run (rollout-run.ts, ADR 0046) and creates the
// Operations it names in `start`.
//
// - Waves are cumulative, as Argo Rollouts' setWeight steps are: [1, "10%", "50%", "100%"] means "1
//   instance done, then 10% of the fleet, then half, then all". A percentage is rounded up (a "10%"
//   canary of 5 instances is 1 instance, never 0); a wave past the previous one's end is empty and
//   skipped. Whatever the last wave leaves out forms a final wave: a run always covers its whole fleet.
// - The fleet is the run's snapshot, taken when the run started, in name order (the order the fleet's
//   Operations are created in today, and one a person can predict and name canaries for). Instances
//   added later belong to the next run; one removed before it started is passed over, not a failure.
// - The failure budget is the number of failed instances the run tolerates; a percentage is of the
//   snapshot, rounded down, like a Deployment's maxUnavailable: a budget limits harm, so rounding must not
//   grant more failures than were written. One failure more halts the run: nothing else starts, what
//   runs finishes (never cancelled half-way), and it stays Halted until a person resumes or abandons it.
// - A resume counts failures afresh from its time: a person who resumes has seen the failures so far.
//   A failed instance is never retried by the rollout. Abandon is final: nothing more starts.

import { parseGoDuration } from '../time/duration.ts';

/** A cumulative wave end or a budget: a count of instances or a percentage of the fleet ("10%"). */
export type CountOrPercent = number | string;

export interface RolloutStrategy {
  /** Cumulative ends of the waves, e.g. [1, "10%", "50%", "100%"]. */
  waves: readonly CountOrPercent[];
  /** Failed instances the run tolerates; one more halts it. Default 0: the first failure halts. */
  failureBudget?: CountOrPercent;
  /** How long to wait after a wave's last instance finished before the next wave starts (Go duration). */
  pauseBetweenWaves?: string;
}

export type InstanceRunState =
  | 'NotStarted'
  | 'Running'
  | 'Succeeded'
  | 'Failed'
  | 'Cancelled'
  /** In the snapshot, gone (deleted or no longer matching) before its Operation was created. */
  | 'Removed';

export interface RolloutInstance {
  name: string;
  state: InstanceRunState;
  /** When its Operation ended (Succeeded, Failed, Cancelled). */
  finishedAt?: Date;
}

export interface RolloutInput {
  strategy: RolloutStrategy;
  /** The run's snapshot of instances, unique names in any order (they are taken in name order). */
  instances: readonly RolloutInstance[];
  /**
   * At most this many of the run's Operations at once, its Running instances counted (spec.maxConcurrent;
   * the wiring subtracts the Operations of the object's other runs that still run).
   */
  maxConcurrent?: number;
  /** The latest resume of this run by a person. */
  resumedAt?: Date;
  /** When a person abandoned this run. */
  abandonedAt?: Date;
  now: Date;
}

export const ROLLOUT_PHASES = ['Progressing', 'Halted', 'Abandoned', 'Completed', 'Invalid'] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];

/** Reasons of the run's condition (the wiring adds them to api/reasons.ts). */
export const ROLLOUT_REASON = {
  WaveRunning: 'WaveRunning',
  PausedBetweenWaves: 'PausedBetweenWaves',
  FailureBudgetExceeded: 'FailureBudgetExceeded',
  RolloutAbandoned: 'RolloutAbandoned',
  RolloutCompleted: 'RolloutCompleted',
  CompletedWithFailures: 'CompletedWithFailures',
  InvalidRollout: 'InvalidRollout',
} as const;
export type RolloutReason = (typeof ROLLOUT_REASON)[keyof typeof ROLLOUT_REASON];

/** How many names a status list holds; the count is always whole. Bounds status for huge fleets. */
export const MAX_LISTED_NAMES = 20;

/** A count and the first MAX_LISTED_NAMES names, in rollout order. */
export interface NameList {
  count: number;
  names: string[];
}

export interface RolloutWave {
  /** 1-based. */
  index: number;
  /** Waves in the run, the final implicit one included, empty ones not. */
  of: number;
  /** Instances in this wave. */
  size: number;
}

export interface RolloutDecision {
  phase: RolloutPhase;
  reason: RolloutReason;
  /** What is happening and, when a person must act, what to do. */
  message: string;
  /** Instances whose Operation to create now, in rollout order. */
  start: string[];
  /** The wave being worked on (the last one once all are done); absent when the fleet is empty or invalid. */
  wave?: RolloutWave;
  /** Look again then (a pause between waves ends); otherwise changes of the Operations wake the run. */
  requeueAt?: Date;
  /** Failures counted against the budget (since the latest resume), and the budget in instances. */
  failures: { counted: number; budget: number };
  running: NameList;
  succeeded: NameList;
  failed: NameList;
  cancelled: NameList;
  removed: NameList;
  /** Not started yet, this wave's and later waves'. */
  remaining: NameList;
}

const PERCENT = /^(\d{1,3})%$/;

function percentOf(value: string): number | undefined {
  const m = PERCENT.exec(value);
  const p = m ? Number(m[1]) : Number.NaN;
  return p >= 0 && p <= 100 ? p : undefined;
}

/** Problems with a strategy, each naming its field under `path`; empty when it is usable. */
export function validateRolloutStrategy(s: RolloutStrategy, path = 'spec.rollout'): string[] {
  const problems: string[] = [];
  if (s.waves.length === 0) problems.push(`${path}.waves: list at least one wave, e.g. [1, "10%", "100%"]`);
  let lastCount = 0;
  let lastPercent = 0;
  s.waves.forEach((w, i) => {
    const at = `${path}.waves[${i}]`;
    if (typeof w === 'number') {
      if (!Number.isInteger(w) || w < 1)
        problems.push(`${at}: ${w} is not a whole number of instances of at least 1`);
      else if (w < lastCount)
        problems.push(`${at}: ${w} is less than the wave before (${lastCount}); waves are cumulative`);
      else lastCount = w;
      return;
    }
    const p = percentOf(w);
    if (p === undefined || p === 0)
      problems.push(`${at}: "${w}" must be a whole percentage from 1% to 100%, or a count`);
    else if (p < lastPercent)
      problems.push(`${at}: "${w}" is less than the wave before (${lastPercent}%); waves are cumulative`);
    else lastPercent = p;
  });
  const b = s.failureBudget;
  if (typeof b === 'number' ? !Number.isInteger(b) || b < 0 : b !== undefined && percentOf(b) === undefined)
    problems.push(
      `${path}.failureBudget: ${JSON.stringify(b)} must be a whole number of instances (0 or more) or a percentage from 0% to 100%`,
    );
  if (s.pauseBetweenWaves !== undefined) {
    try {
      if (parseGoDuration(s.pauseBetweenWaves) < 0)
        problems.push(`${path}.pauseBetweenWaves: "${s.pauseBetweenWaves}" must not be negative`);
    } catch (err) {
      problems.push(`${path}.pauseBetweenWaves: ${(err as Error).message}`);
    }
  }
  return problems;
}

/** Instances in `value` of a fleet of `total`: a percentage rounded up or down, a count as it is. */
function scaled(value: CountOrPercent, total: number, round: 'up' | 'down'): number {
  if (typeof value === 'number') return value;
  const exact = ((percentOf(value) ?? 0) * total) / 100;
  return round === 'up' ? Math.ceil(exact) : Math.floor(exact);
}

/**
 * The end (exclusive index in rollout order) of each non-empty wave of a fleet of `total`: cumulative,
 * percentages rounded up, clamped to the fleet, with a final wave for what the last one leaves out.
 */
export function waveEnds(waves: readonly CountOrPercent[], total: number): number[] {
  const ends: number[] = [];
  let end = 0;
  for (const w of waves) {
    const next = Math.min(total, Math.max(end, scaled(w, total, 'up')));
    if (next > end) ends.push(next);
    end = next;
  }
  if (end < total) ends.push(total);
  return ends;
}

/** Failures a budget of `value` tolerates in a fleet of `total`: a percentage rounded down. */
export function failureBudget(value: CountOrPercent | undefined, total: number): number {
  return value === undefined ? 0 : scaled(value, total, 'down');
}

const FINISHED: ReadonlySet<InstanceRunState> = new Set(['Succeeded', 'Failed', 'Cancelled', 'Removed']);

const listOf = (instances: readonly RolloutInstance[], state: InstanceRunState): NameList => {
  const names = instances.filter((i) => i.state === state).map((i) => i.name);
  return { count: names.length, names: names.slice(0, MAX_LISTED_NAMES) };
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The listed names, and how many more there are, for a message. */
const named = (list: NameList) =>
  `${list.names.join(', ')}${list.count > list.names.length ? ` and ${list.count - list.names.length} more` : ''}`;

/** What one reconcile of a fleet run does under its rollout strategy. */
export function decideRollout(input: RolloutInput): RolloutDecision {
  // Name order, by code unit (not locale), so every replica of the operator computes the same waves.
  const ordered = [...input.instances].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const total = ordered.length;
  const lists = {
    running: listOf(ordered, 'Running'),
    succeeded: listOf(ordered, 'Succeeded'),
    failed: listOf(ordered, 'Failed'),
    cancelled: listOf(ordered, 'Cancelled'),
    removed: listOf(ordered, 'Removed'),
    remaining: listOf(ordered, 'NotStarted'),
  };
  const problems = validateRolloutStrategy(input.strategy);
  if (problems.length > 0)
    return {
      phase: 'Invalid',
      reason: ROLLOUT_REASON.InvalidRollout,
      message: `${problems.join('; ')}; nothing starts until it is fixed`,
      start: [],
      failures: { counted: 0, budget: 0 },
      ...lists,
    };

  const budget = failureBudget(input.strategy.failureBudget, total);
  // Failures since the latest resume; one without a finish time counts (the safe side).
  const resumed = input.resumedAt?.getTime();
  const counted = ordered.filter(
    (i) =>
      i.state === 'Failed' &&
      (resumed === undefined || i.finishedAt === undefined || i.finishedAt.getTime() > resumed),
  ).length;
  const failures = { counted, budget };
  const ends = waveEnds(input.strategy.waves, total);
  // The wave being worked on: the first with an instance not finished (the last when all are).
  let w = ends.findIndex((end, k) =>
    ordered.slice(k === 0 ? 0 : ends[k - 1], end).some((i) => !FINISHED.has(i.state)),
  );
  const allDone = w === -1;
  if (allDone) w = ends.length - 1;
  const from = w <= 0 ? 0 : (ends[w - 1] ?? 0);
  const members = ordered.slice(from, ends[w] ?? 0);
  const wave = total === 0 ? undefined : { index: w + 1, of: ends.length, size: members.length };
  const base = { start: [] as string[], ...(wave ? { wave } : {}), failures, ...lists };
  const tally = `${lists.succeeded.count} succeeded, ${lists.failed.count} failed, ${lists.running.count} running, ${lists.remaining.count} not started`;

  if (allDone)
    return lists.failed.count === 0
      ? {
          ...base,
          phase: 'Completed',
          reason: ROLLOUT_REASON.RolloutCompleted,
          message: `every instance of the run finished: ${tally}`,
        }
      : {
          ...base,
          phase: 'Completed',
          reason: ROLLOUT_REASON.CompletedWithFailures,
          message: `every instance of the run finished, ${plural(lists.failed.count, 'failure')} among them (${named(lists.failed)}): ${tally}; the failed instances are not retried, run the operation on them again once the cause is fixed`,
        };
  if (input.abandonedAt)
    return {
      ...base,
      phase: 'Abandoned',
      reason: ROLLOUT_REASON.RolloutAbandoned,
      message: `abandoned at ${input.abandonedAt.toISOString()}: nothing more starts (${tally}); what runs finishes; start a new run to go on`,
    };
  if (counted > budget)
    return {
      ...base,
      phase: 'Halted',
      reason: ROLLOUT_REASON.FailureBudgetExceeded,
      message: `halted in wave ${w + 1} of ${ends.length}: ${plural(counted, 'instance')} failed${resumed === undefined ? '' : ' since the last resume'}, more than the failure budget of ${budget} (failed: ${named(lists.failed)}); nothing more starts, what runs finishes (${tally}). Find the cause in the failed Operations, fix it, then \`kubectl vws resume\` to go on with the remaining waves, or \`kubectl vws abandon\` to end the run`,
    };

  // A wave starts once the wave before has finished and the pause after it has passed.
  const previous = w === 0 ? [] : ordered.slice(w === 1 ? 0 : (ends[w - 2] ?? 0), from);
  const waveStarted = members.some((i) => i.state !== 'NotStarted' && i.state !== 'Removed');
  const pauseMs = input.strategy.pauseBetweenWaves ? parseGoDuration(input.strategy.pauseBetweenWaves) : 0;
  const lastEnd = previous.reduce(
    (t, i) => Math.max(t, i.finishedAt?.getTime() ?? Number.NEGATIVE_INFINITY),
    Number.NEGATIVE_INFINITY,
  );
  if (!waveStarted && pauseMs > 0 && Number.isFinite(lastEnd) && input.now.getTime() < lastEnd + pauseMs) {
    const requeueAt = new Date(lastEnd + pauseMs);
    return {
      ...base,
      phase: 'Progressing',
      reason: ROLLOUT_REASON.PausedBetweenWaves,
      message: `wave ${w} finished; wave ${w + 1} of ${ends.length} starts at ${requeueAt.toISOString()} (pauseBetweenWaves ${input.strategy.pauseBetweenWaves}): ${tally}`,
      requeueAt,
    };
  }

  const running = ordered.filter((i) => i.state === 'Running').length;
  const room = input.maxConcurrent === undefined ? Number.POSITIVE_INFINITY : input.maxConcurrent - running;
  const start = members
    .filter((i) => i.state === 'NotStarted')
    .slice(0, Math.max(0, room))
    .map((i) => i.name);
  return {
    ...base,
    start,
    phase: 'Progressing',
    reason: ROLLOUT_REASON.WaveRunning,
    message: `wave ${w + 1} of ${ends.length} (${plural(members.length, 'instance')}): ${tally}; ${plural(counted, 'failure')} of a budget of ${budget}`,
  };
}
