// The sharding simulation behind docs/adr/0051-sharding-across-replicas.md: prints, as Markdown tables,
// load imbalance and namespaces moved per assignment scheme, and handover time and double runs per way of
// losing a shard's holder and per fencing. A deterministic discrete-event simulation (virtual clock,
// seeded randomness; bench/lib/sharding/): no cluster, no timers, the same numbers on any machine.
//
//   node bench/sharding.ts [--runs N] [--namespaces N]
//
// --runs: seeds per cell (default 1000 for handovers, a tenth of it for assignments); --namespaces: how
// many namespaces are placed (default 1000).

import { parseArgs } from 'node:util';
import { SCHEMES } from './lib/sharding/assignment.ts';
import { CLIENT_GO_DEFAULTS, FENCINGS, LOSSES } from './lib/sharding/handover.ts';
import { handover, loadImbalance, movements, type Placement } from './lib/sharding/measure.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '1000' }, namespaces: { type: 'string', default: '1000' } },
});
const runs = Number(values.runs);
const count = Number(values.namespaces);
const assignRuns = Math.max(1, Math.round(runs / 10));
const REPLICAS = [2, 3, 5];
const SHARDS = 32;

const placements: { name: string; p: Placement }[] = [
  ...SCHEMES.map((scheme) => ({
    name: scheme === 'ring' ? 'ring, 100 virtual nodes' : scheme,
    p: { scheme, shards: 0 },
  })),
  { name: `${SHARDS} fixed shards, rendezvous`, p: { scheme: 'rendezvous', shards: SHARDS } },
  ...[SHARDS, 2 * SHARDS].map((shards) => ({
    name: `${shards} fixed shards, bounded-rendezvous`,
    p: { scheme: 'bounded-rendezvous' as const, shards },
  })),
];

const pct = (v: number) => `${(100 * v).toFixed(1)} %`;
const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : '—');

console.log(
  `## Load: max/mean namespaces per replica, ${count} namespaces, mean (worst) of ${assignRuns} seeds\n`,
);
console.log(`| placement | ${REPLICAS.map((r) => `${r} replicas`).join(' | ')} |`);
console.log(`|---|${REPLICAS.map(() => '---').join('|')}|`);
for (const { name, p } of placements) {
  const cells = REPLICAS.map((r) => {
    const row = loadImbalance(p, count, r, assignRuns);
    return `${row.mean.toFixed(3)} (${row.worst.toFixed(3)})`;
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}

console.log(
  `\n## Namespaces moved when one replica leaves / joins (needless moves in brackets), ${assignRuns} seeds\n`,
);
console.log(`| placement | ${REPLICAS.map((r) => `${r} → ${r - 1} | ${r} → ${r + 1}`).join(' | ')} |`);
console.log(`|---|${REPLICAS.map(() => '---|---').join('|')}|`);
for (const { name, p } of placements) {
  const cells = REPLICAS.map((r) => {
    const m = movements(p, count, r, assignRuns);
    return `${pct(m.leave)} (${pct(m.leaveNeedless)}) | ${pct(m.join)} (${pct(m.joinNeedless)})`;
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}

const base = CLIENT_GO_DEFAULTS;
console.log(
  `\n## Handover of one shard: ${base.replicas} replicas, lease ${base.leaseDurationMs / 1000} s / renew deadline ` +
    `${base.renewDeadlineMs / 1000} s / retry ${base.retryPeriodMs / 1000} s, clock drift ±${pct(base.clockDrift)}, ` +
    `pauses ${base.pauseMs[0] / 1000}–${base.pauseMs[1] / 1000} s, seeds 1..${runs}\n`,
);
console.log(
  '| loss | fencing | takeovers / runs | handover p50 | p99 | shortest since last renewal | runs with a double run | stale writes landed | refused by the term |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
const table = (cfg: typeof base, label = '') => {
  for (const loss of LOSSES) {
    for (const fencing of FENCINGS) {
      const r = handover(cfg, loss, fencing, runs);
      console.log(
        `| ${loss}${label} | ${fencing} | ${r.takeovers} / ${r.runs} | ${s(r.p50Ms)} | ${s(r.p99Ms)} | ` +
          `${s(r.minSinceRenewalMs)} | ${r.doubleRunRuns} | ${r.staleWrites} | ${r.refusedWrites} |`,
      );
    }
  }
};
table(base);

console.log(
  `\n## The margin leaseDuration − renewDeadline against clock drift (renewals fail, seeds 1..${runs})\n`,
);
console.log('| clock drift | fencing | takeovers / runs | runs with a double run | stale writes landed |');
console.log('|---|---|---|---|---|');
for (const clockDrift of [0.01, 0.2, 0.4]) {
  for (const fencing of FENCINGS) {
    const r = handover({ ...base, clockDrift }, 'renewals-fail', fencing, runs);
    console.log(
      `| ±${pct(clockDrift)} | ${fencing} | ${r.takeovers} / ${r.runs} | ${r.doubleRunRuns} | ${r.staleWrites} |`,
    );
  }
}
