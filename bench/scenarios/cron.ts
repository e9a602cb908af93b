// Schedule lag: N CronOperations and N CronJobs, all `* * * * *`, in one cluster at once. Each minute
// is a run: for every slot, the lag of each run (first seen by the bench's watch minus the slot time)
// on both sides, and how many runs exist for the slot. The first slot after creation warms up and is
// not counted. Operations target an absent instance and Jobs are suspended, so neither side's runs do
// further work: what is measured is creating runs on time.
import { setTimeout as sleep } from 'node:timers/promises';
import { cronJob, cronOperation } from '../lib/objects.ts';
import { Recorder } from '../lib/recorder.ts';
import { row, type ScenarioResult } from '../lib/result.ts';
import { quantile } from '../lib/stats.ts';

import {
  createAll,
  metricSum,
  type OperatorVariant,
  STOP_GRACE_MS,
  scrape,
  startOperator,
  startWorld,
} from '../lib/world.ts';

export interface CronOptions {
  n: number;
  /** Measured slots (minutes), after one warm-up slot. */
  runs: number;
  logDir: string;
  operator?: OperatorVariant;
}

const NS = 'cron';
/** `<name>-<unix minutes>`: how CronJob names its Jobs and CronOperation its Operations. */
const slotOf = (name: string) => Number(/-(\d+)$/.exec(name)?.[1] ?? Number.NaN) * 60_000;

export async function cronLag(o: CronOptions): Promise<ScenarioResult> {
  const t0 = Date.now();
  const world = await startWorld(`vws-bench-cron-${o.n}`, o.logDir);
  const notes: string[] = [];
  try {
    await createAll(world.api, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }]);
    const op = await startOperator(world, `operator-cron-${o.n}`, {
      ...o.operator,
    });
    await op.proc.waitReady(120_000);
    await op.proc.waitLeader(60_000);
    const ops = new Recorder(world.kc, world.api, {
      group: 'ops.vworkspace.io',
      version: 'v1alpha1',
      plural: 'operations',
      namespace: NS,
    });
    const jobs = new Recorder(world.kc, world.api, {
      group: 'batch',
      version: 'v1',
      plural: 'jobs',
      namespace: NS,
    });
    await Promise.all([ops.start(), jobs.start()]);

    // Create everything early in a minute, so the first slot finds both sides settled.
    while (new Date().getUTCSeconds() > 5) await sleep(500);
    const objs = Array.from({ length: o.n }, (_, i) => [
      cronOperation(`c${i}`, NS),
      cronJob(`c${i}`, NS),
    ]).flat();
    const created = Date.now();
    await createAll(world.api, objs);
    notes.push(`created ${objs.length} schedules in ${((Date.now() - created) / 1000).toFixed(1)} s`);
    const firstSlot = Math.ceil(Date.now() / 60_000) * 60_000;
    const slots = Array.from({ length: o.runs }, (_, i) => firstSlot + (i + 1) * 60_000);
    // Wait for the last measured slot, plus a minute for late runs (later ones would be skipped anyway).
    await sleep(slots.at(-1)! + 60_000 - Date.now());
    const metrics = await scrape(op.proc);
    await Promise.all([ops.stop(), jobs.stop()]);
    await op.proc.stop(STOP_GRACE_MS);
    if (op.proc.crashed) notes.push('the operator exited on its own during the run');

    const lags = (rec: Recorder, slot: number) =>
      [...rec.seen.values()]
        .filter((s) => slotOf(s.obj.metadata?.name ?? '') === slot)
        .map((s) => (s.at - slot) / 1000);
    const per = slots.map((slot) => ({ op: lags(ops, slot), peer: lags(jobs, slot) }));
    const stat = (f: (v: number[]) => number, side: 'op' | 'peer') => per.map((p) => f(p[side]));
    const p50 = (v: number[]) => quantile(v, 0.5);
    const p99 = (v: number[]) => quantile(v, 0.99);
    const max = (v: number[]) => (v.length ? Math.max(...v) : Number.NaN);
    const min = (v: number[]) => (v.length ? Math.min(...v) : Number.NaN);
    const count = (v: number[]) => v.length;
    // Issue 11's target up to 500 a minute; issue 26's at 5,000: half the CronJob controller's lag.
    const bound = o.n <= 500 ? 1 : o.n >= 5000 ? 0.5 : undefined;
    const missedOp = metricSum(metrics, 'vworkspace_schedule_missed_runs_total');
    notes.push(`operator's vworkspace_schedule_missed_runs_total at the end: ${missedOp}`);
    return {
      scenario: `cron-${o.n}`,
      title: `cron lag, N=${o.n}/min`,
      params: { n: o.n, runs: o.runs, slots: slots.map((s) => new Date(s).toISOString()) },
      rows: [
        row('lag p50', ' s', stat(p50, 'op'), stat(p50, 'peer'), (_, __, r) => ({
          text: bound === undefined ? 'none at this size' : `ratio ≤ ${bound.toFixed(1)}`,
          met: bound === undefined ? true : (r ?? Number.NaN) <= bound,
        })),
        row('lag p99', ' s', stat(p99, 'op'), stat(p99, 'peer')),
        row('lag max', ' s', stat(max, 'op'), stat(max, 'peer')),
        row('lag of the first run of a slot', ' s', stat(min, 'op'), stat(min, 'peer')),
        row(`runs created per slot (of ${o.n})`, '', stat(count, 'op'), stat(count, 'peer'), (op) => ({
          text: o.n >= 1000 ? `0 skipped (${o.n} in every slot)` : `${o.n} in every slot`,
          met: op.min === o.n,
        })),
      ],
      notes,
      data: { lags: per },
      durationSeconds: (Date.now() - t0) / 1000,
    };
  } finally {
    await world.stop();
  }
}
