// The numbers ADR 0051 quotes, as functions of seeds: load imbalance and keys moved per assignment
// scheme, and handover time and double runs per way of losing a holder and per fencing. Pure; the
// printing is bench/sharding.ts.

import { quantile } from '../stats.ts';
import { assign, imbalance, moved, type Scheme } from './assignment.ts';
import { type Fencing, type HandoverConfig, type Loss, simulateHandover } from './handover.ts';
import { seeded } from './random.ts';

/** How namespaces reach replicas: straight onto the replicas, or onto fixed shards that the scheme places. */
export interface Placement {
  scheme: Scheme;
  /** 0: namespaces hashed straight onto replicas; S > 0: namespace → shard (hash mod S), shard → replica. */
  shards: number;
}

export function members(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `vworkspace-operator-${i}`);
}

/** `count` namespace names that differ per seed (so a table is not the verdict on one name list). */
export function namespaces(count: number, seed: number): string[] {
  return Array.from({ length: count }, (_, i) => `tenant-${seed}-${i}`);
}

/** Each namespace's replica under a placement. */
export function place(
  p: Placement,
  keys: readonly string[],
  replicas: readonly string[],
): Map<string, string> {
  if (p.shards === 0) return assign(p.scheme, keys, replicas);
  const shardNames = Array.from({ length: p.shards }, (_, i) => `shard-${i}`);
  const shardOwner = assign(p.scheme, shardNames, replicas);
  const shardOf = assign('modulo', keys, shardNames);
  return new Map(keys.map((k) => [k, shardOwner.get(shardOf.get(k)!)!]));
}

export interface LoadRow {
  mean: number;
  worst: number;
}

/** max/mean namespaces per replica, mean and worst over seeds 1..runs. */
export function loadImbalance(p: Placement, count: number, replicas: number, runs: number): LoadRow {
  const values: number[] = [];
  const ms = members(replicas);
  for (let seed = 1; seed <= runs; seed++) values.push(imbalance(place(p, namespaces(count, seed), ms), ms));
  return { mean: values.reduce((a, b) => a + b, 0) / values.length, worst: Math.max(...values) };
}

export interface MoveRow {
  /** Mean share of namespaces that changed replica when one replica left (a random one per seed). */
  leave: number;
  /** Of those, the mean share whose replica was NOT the one leaving (needless moves). */
  leaveNeedless: number;
  /** Mean share that changed replica when one replica joined. */
  join: number;
  /** Of those, the mean share that moved to a replica other than the new one (needless moves). */
  joinNeedless: number;
}

export function movements(p: Placement, count: number, replicas: number, runs: number): MoveRow {
  const sum = { leave: 0, leaveNeedless: 0, join: 0, joinNeedless: 0 };
  for (let seed = 1; seed <= runs; seed++) {
    const keys = namespaces(count, seed);
    const ms = members(replicas);
    const before = place(p, keys, ms);
    const gone = ms[Math.floor(seeded(seed)() * ms.length)]!;
    const afterLeave = place(
      p,
      keys,
      ms.filter((m) => m !== gone),
    );
    const left = moved(before, afterLeave);
    sum.leave += left.length / count;
    sum.leaveNeedless += left.filter((k) => before.get(k) !== gone).length / count;
    const newcomer = `vworkspace-operator-${replicas}`;
    const afterJoin = place(p, keys, [...ms, newcomer]);
    const joined = moved(before, afterJoin);
    sum.join += joined.length / count;
    sum.joinNeedless += joined.filter((k) => afterJoin.get(k) !== newcomer).length / count;
  }
  return {
    leave: sum.leave / runs,
    leaveNeedless: sum.leaveNeedless / runs,
    join: sum.join / runs,
    joinNeedless: sum.joinNeedless / runs,
  };
}

export interface HandoverRow {
  loss: Loss;
  fencing: Fencing;
  runs: number;
  /** Runs in which another replica took the shard. */
  takeovers: number;
  p50Ms: number;
  p99Ms: number;
  /** Shortest time from the old holder's last renewal landing to the new holder's acquisition landing. */
  minSinceRenewalMs: number;
  /** Runs with at least one write landing after a later term began. */
  doubleRunRuns: number;
  staleWrites: number;
  refusedWrites: number;
}

/** Seeds 1..runs of one loss and one fencing. */
export function handover(base: HandoverConfig, loss: Loss, fencing: Fencing, runs: number): HandoverRow {
  const times: number[] = [];
  let minSince = Number.POSITIVE_INFINITY;
  const row = { doubleRunRuns: 0, staleWrites: 0, refusedWrites: 0 };
  for (let seed = 1; seed <= runs; seed++) {
    const r = simulateHandover({ ...base, loss, fencing }, seed);
    if (r.handoverMs !== undefined) times.push(r.handoverMs);
    if (r.sinceLastRenewalMs !== undefined) minSince = Math.min(minSince, r.sinceLastRenewalMs);
    if (r.staleWrites > 0) row.doubleRunRuns++;
    row.staleWrites += r.staleWrites;
    row.refusedWrites += r.refusedWrites;
  }
  return {
    loss,
    fencing,
    runs,
    takeovers: times.length,
    p50Ms: quantile(times, 0.5),
    p99Ms: quantile(times, 0.99),
    minSinceRenewalMs: minSince,
    ...row,
  };
}
