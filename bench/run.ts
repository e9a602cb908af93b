// `make bench`: the operator beside its peer (kube-controller-manager's CronJob and Job controllers,
// raw client writes), each scenario on its own kwok cluster, both sides in the same run; prints
// min / median / max over the runs and the ratio, writes results.json, the lag plot and table.md to
// the output directory, and with --docs the table and plot into docs/performance.md.
//
//   node bench/run.ts [--quick] [--only cron,operations,admission,footprint] [--runs N] [--out DIR] [--docs]
//                     [--env NAME=VALUE ...] [--node-arg FLAG ...] [--profile] [--operator-main PATH]
//                     [--sizes N,N | I:O:NS,...]
//   node bench/run.ts --merge DIR/results.json
//
// --env sets operator settings (e.g. KUBE_API_QPS=0), --node-arg adds a flag to the operator's node
// command line (e.g. --max-semi-space-size=4; admission's null webhooks get it too), --profile writes a CPU profile per operator
// process (node --cpu-prof) under DIR/profiles (footprint: of its convergence only), and for operations also kube-apiserver's over the first
// 10 s of each operator phase (admission: over its first run, all four settings interleaved) (`go tool pprof -top -cum DIR/profiles/kube-apiserver-*.pprof`), --operator-main runs another checkout's operator (a
// baseline), --sizes overrides the sizes of the chosen scenarios. --docs merges the results into
// docs/performance/results.json by scenario, after each scenario, and regenerates the table and the plot
// from it, so scenarios can be re-run one at a time and a stopped run keeps what it finished. --merge
// merges an earlier run's results.json (its output directory has one, written after every scenario)
// without measuring anything.
//
// Not part of `make test`: it takes long, and speed is never asserted, only reported against the
// targets of docs/performance.md. Run it under the shared lock (`flock /tmp/vws-heavy.lock`).

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../hack/lib/controlplane.ts';
import { markdown, plain, resultsJson, type ScenarioResult } from './lib/result.ts';
import { exitOnStopSignals } from './lib/stop-signals.ts';
import { ecdfPlot, type Panel } from './lib/svg.ts';
import type { OperatorVariant } from './lib/world.ts';
import { admission } from './scenarios/admission.ts';
import { cronLag } from './scenarios/cron.ts';
import { footprint } from './scenarios/footprint.ts';
import { operations } from './scenarios/operations.ts';

exitOnStopSignals();
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    runs: { type: 'string' },
    out: { type: 'string' },
    docs: { type: 'boolean', default: false },
    env: { type: 'string', multiple: true },
    profile: { type: 'boolean', default: false },
    'node-arg': { type: 'string', multiple: true },
    'operator-main': { type: 'string' },
    sizes: { type: 'string' },
    merge: { type: 'string' },
  },
});
const quick = values.quick ?? false;
const runs = Number(values.runs ?? 3);
const only = new Set((values.only ?? 'cron,operations,admission,footprint').split(','));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const out = values.out ?? join(ROOT, '.cache/bench', stamp);
await mkdir(out, { recursive: true });
const logDir = join(out, 'logs');
// Sizes: numbers for cron and operations; for footprint INSTANCES:OPERATIONS:NAMESPACES.
const sizes = values.sizes ? values.sizes.split(',').map(Number) : undefined;
const levelsGiven = values.sizes?.includes(':')
  ? values.sizes.split(',').map((l) => {
      const [instances, operations, namespaces] = l.split(':').map(Number);
      return { instances: instances ?? 0, operations: operations ?? 0, namespaces: namespaces ?? 1 };
    })
  : undefined;
const operator: OperatorVariant = {
  env: Object.fromEntries(
    (values.env ?? []).map((kv) => {
      const i = kv.indexOf('=');
      if (i < 1) throw new Error(`--env ${kv}: expected NAME=VALUE`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  ),
  ...(values.profile || values['node-arg']
    ? {
        nodeArgs: [
          ...(values['node-arg'] ?? []),
          ...(values.profile ? ['--cpu-prof', '--cpu-prof-dir', join(out, 'profiles')] : []),
        ],
      }
    : {}),
  ...(values['operator-main'] ? { main: values['operator-main'] } : {}),
};

const say = (m: string) => process.stdout.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const results: ScenarioResult[] = [];
// Settings other than the defaults name a variant: its rows sit beside the default ones.
const variant = Object.entries(operator.env ?? {})
  .map(([k, v]) => `${k}=${v}`)
  .join(' ');
const record = async (r: ScenarioResult) => {
  if (variant) {
    r.scenario += ` ${variant}`;
    r.title += ` (${variant})`;
  }
  results.push(r);
  say(
    `${r.title}: done in ${r.durationSeconds.toFixed(0)} s${r.notes.length ? `; ${r.notes.join('; ')}` : ''}`,
  );
  await writeFile(join(out, 'results.json'), resultsJson(machine(results)));
  if (values.docs) await mergeIntoDocs([r], machine([r]));
};

function machine(rs: ScenarioResult[]) {
  return {
    when: new Date().toISOString(),
    quick,
    runs,
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    results: rs,
  };
}

if (values.merge) {
  // An earlier run's results.json (written after each of its scenarios), merged without measuring.
  const earlier = JSON.parse(await readFile(values.merge, 'utf8')) as ReturnType<typeof machine>;
  await mergeIntoDocs(earlier.results, earlier);
  process.exit(0);
}

if (only.has('cron')) {
  for (const n of sizes ?? (quick ? [100] : [100, 500, 1000])) {
    say(`cron lag at N=${n} per minute (${runs} measured minutes) ...`);
    await record(await cronLag({ n, runs, logDir, operator }));
  }
}
if (only.has('operations')) {
  for (const n of sizes ?? (quick ? [500] : [500, 2000])) {
    say(`${n} Operations → child Jobs vs ${n} raw Jobs (${runs} runs) ...`);
    await record(
      await operations({
        n,
        runs,
        logDir,
        operator,
        ...(values.profile ? { profileDir: join(out, 'profiles') } : {}),
      }),
    );
  }
}
if (only.has('admission')) {
  say(`admission at 100 req/s, dry-run Operations (four settings) vs ConfigMaps (${runs} runs) ...`);
  await record(
    await admission({
      rate: 100,
      // Four settings share the Operations: 60 s gives each 1,500 requests a run.
      seconds: quick ? 20 : 60,
      runs,
      logDir,
      operator,
      ...(values.profile ? { profileDir: join(out, 'profiles') } : {}),
    }),
  );
}
if (only.has('footprint')) {
  const levels =
    levelsGiven ??
    (quick
      ? [
          { instances: 0, operations: 0, namespaces: 1 },
          { instances: 1000, operations: 1000, namespaces: 10 },
        ]
      : [
          { instances: 0, operations: 0, namespaces: 1 },
          { instances: 1000, operations: 1000, namespaces: 10 },
          { instances: 10_000, operations: 10_000, namespaces: 100 },
          { instances: 10_000, operations: 10_000, namespaces: 1 },
        ]);
  for (const level of levels) {
    say(
      `footprint and startup at ${level.instances} instances + ${level.operations} finished Operations in ${level.namespaces} namespace(s) (${runs} starts) ...`,
    );
    await record(
      await footprint({
        ...level,
        runs,
        logDir,
        // A profiler in the measured starts would change what they measure (idle CPU above all): with
        // --profile, only the convergence before them is profiled.
        operator: { ...operator, nodeArgs: values['node-arg'] ?? [] },
        ...(values.profile ? { profileDir: join(out, 'profiles') } : {}),
        ...(quick ? { idleMs: 30_000 } : {}),
      }),
    );
  }
}

process.stdout.write(`\n${plain(results)}\n`);
await writeFile(join(out, 'table.md'), markdown(results));
const svg = lagPlot(results);
if (svg) await writeFile(join(out, 'cron-lag.svg'), svg);
say(`results in ${out}`);

function lagPlot(rs: readonly ScenarioResult[]): string | undefined {
  const panels: Panel[] = rs
    .filter((r) => r.scenario.startsWith('cron-'))
    .map((r) => {
      const lags = (r.data?.lags ?? []) as { op: number[]; peer: number[] }[];
      return {
        title: `${String(r.params.n)} schedules a minute`,
        series: [
          { label: 'CronOperation', color: '#d62728', values: lags.flatMap((l) => l.op) },
          { label: 'CronJob', color: '#1f77b4', dashed: true, values: lags.flatMap((l) => l.peer) },
        ],
      };
    });
  if (!panels.length) return undefined;
  return ecdfPlot(
    panels,
    'Share of runs created within x seconds of their slot, all measured slots (operator solid, CronJob controller dashed).',
  );
}

/** Where a run's results were measured: merged into docs/performance/results.json with them. */
type Stamp = Pick<ReturnType<typeof machine>, 'when' | 'machine' | 'quick' | 'runs'>;

/**
 * Merges scenarios into docs/performance.md (the table between its markers), results.json and the lag
 * plot. By scenario: a re-run replaces its own rows and keeps the others'. `make bench` merges each
 * scenario as it finishes, so a run stopped half-way keeps what it measured.
 */
async function mergeIntoDocs(rs: readonly ScenarioResult[], stampOf: Stamp): Promise<void> {
  const resultsPath = join(ROOT, 'docs/performance/results.json');
  const previous = (
    await readFile(resultsPath, 'utf8').then(
      (t) => JSON.parse(t) as { results: (ScenarioResult & { measured?: unknown })[] },
      () => ({ results: [] }),
    )
  ).results;
  const merged = [...previous.filter((p) => !rs.some((r) => r.scenario === p.scenario))];
  const { when: at, machine: on, quick: q, runs: n } = stampOf; // the stamp only, never its results
  for (const r of rs) merged.push({ ...r, measured: { when: at, machine: on, quick: q, runs: n } });
  const order = (x: ScenarioResult) =>
    ['cron', 'operations', 'admission', 'footprint'].findIndex((k) => x.scenario.startsWith(k));
  merged.sort(
    (a, b) =>
      order(a) - order(b) || String(a.scenario).localeCompare(String(b.scenario), 'en', { numeric: true }),
  );
  await mkdir(join(ROOT, 'docs/performance'), { recursive: true });
  await writeFile(resultsPath, resultsJson({ results: merged }));
  const doc = join(ROOT, 'docs/performance.md');
  const text = await readFile(doc, 'utf8');
  const begin = '<!-- bench:table:begin -->';
  const end = '<!-- bench:table:end -->';
  const a = text.indexOf(begin);
  const b = text.indexOf(end);
  if (a < 0 || b < 0) throw new Error(`docs/performance.md lacks the ${begin} … ${end} markers`);
  const when = [
    ...new Set(
      merged.map((m) => String((m.measured as { when?: string } | undefined)?.when ?? '').slice(0, 10)),
    ),
  ].sort();
  const block = `${begin}\nMeasured ${when.join(', ')} on ${stampOf.machine.cpus} × ${stampOf.machine.cpu} (${stampOf.machine.memoryGiB} GiB), Node ${stampOf.machine.node}; each scenario's runs are in docs/performance/results.json.\n\n${markdown(merged)}${end}`;
  await writeFile(doc, text.slice(0, a) + block + text.slice(b + end.length));
  const plot = lagPlot(merged);
  if (plot) await writeFile(join(ROOT, 'docs/performance/cron-lag.svg'), plot);
  say(`docs/performance.md, cron-lag.svg and results.json updated (${rs.map((r) => r.scenario).join(', ')})`);
}
