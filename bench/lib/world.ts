// What every scenario stands on: its own kwok cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, the pinned binaries of bin/, as the demo and the e2e tests use them) with the
// project's CRDs, an unthrottled driver client, the operator as its own process (as in its pod), and
// the few process readings the tables need (RSS and CPU from /proc, metrics from /metrics).
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { OPERATOR_NODE_FLAGS } from '@vworkspace/operator';
import { isAlreadyExists, RestClient } from '@vworkspace/runtime';
import { ROOT } from '../../hack/lib/controlplane.ts';
import { type KwokCluster, startKwokCluster } from '../../hack/lib/kwok-cluster.ts';
import { OperatorProcess } from '../../test/support/operator-process.ts';

export const OPERATOR_NAMESPACE = 'vworkspace-system';

/** The project's own CRDs (the bench needs no upstream engine CRDs). */
export function ownCrdFiles(): string[] {
  const dir = join(ROOT, 'bundle/manifests');
  return readdirSync(dir)
    .filter((f) => /^[a-z0-9.-]+\.vworkspace\.io_[a-z]+\.yaml$/.test(f))
    .sort()
    .map((f) => join(dir, f));
}

export interface World {
  name: string;
  cluster: KwokCluster;
  kc: KubeConfig;
  /** The driver: no client-side limit, so the bench itself is never what throttles a measurement. */
  api: RestClient;
  logDir: string;
  stop(): Promise<void>;
}

export async function startWorld(name: string, logDir: string): Promise<World> {
  await mkdir(logDir, { recursive: true });
  const cluster = await startKwokCluster({ name, crdFiles: ownCrdFiles() });
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const api = new RestClient(kc, { qps: 0 });
  await create(api, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OPERATOR_NAMESPACE } });
  return {
    name,
    cluster,
    kc,
    api,
    logDir,
    stop: async () => {
      await api.close();
      await cluster.stop();
    },
  };
}

/** REST path of a namespaced collection. */
export function collection(apiVersion: string, plural: string, ns: string): string {
  return `${apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`}/namespaces/${ns}/${plural}`;
}

const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  Secret: 'secrets',
  ServiceAccount: 'serviceaccounts',
  ConfigMap: 'configmaps',
  Job: 'jobs',
  CronJob: 'cronjobs',
  ApplicationInstance: 'applicationinstances',
  Operation: 'operations',
  CronOperation: 'cronoperations',
};

/** The POST path of `obj` (namespaced by metadata.namespace, cluster-scoped otherwise). */
export function pathOf(obj: Record<string, unknown>): string {
  const apiVersion = String(obj.apiVersion);
  const plural = PLURALS[String(obj.kind)];
  if (!plural) throw new Error(`bench: no plural for ${String(obj.kind)}`);
  const ns = (obj.metadata as { namespace?: string }).namespace;
  if (!ns) return apiVersion.includes('/') ? `/apis/${apiVersion}/${plural}` : `/api/${apiVersion}/${plural}`;
  return collection(apiVersion, plural, ns);
}

/** Creates `obj`; an existing one is fine (setup steps are re-runnable). */
export async function create(api: RestClient, obj: Record<string, unknown>, query?: Record<string, string>) {
  try {
    return await api.request({ method: 'POST', path: pathOf(obj), body: obj, ...(query ? { query } : {}) });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return undefined;
  }
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** Creates every object, 32 at a time (setup, not measured). */
export function createAll(api: RestClient, objs: readonly Record<string, unknown>[]): Promise<void> {
  return pool(objs, 32, (o) => create(api, o));
}

// ---- processes -----------------------------------------------------------------------------------

export interface ProcSample {
  rssMiB: number;
  /** CPU seconds (user + system) since the process started. */
  cpuSeconds: number;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

export function sampleProcess(pid: number): ProcSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = statusKb(status, 'VmRSS');
    // The command name may contain spaces: the fields after its closing parenthesis are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return { rssMiB: rssKb / 1024, cpuSeconds: ticks / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** A process's resident memory split into anonymous and file-backed pages (/proc/<pid>/status), in MiB. */
export function residentSplit(pid: number): { anonMiB: number; fileMiB: number } | undefined {
  try {
    return parseResidentSplit(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** One `<field>: <n> kB` line of a /proc/<pid>/status text, in kB (NaN when absent). */
function statusKb(status: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? Number.NaN);
}

/** RssAnon and RssFile + RssShmem of a /proc/<pid>/status text, in MiB. */
export function parseResidentSplit(status: string): { anonMiB: number; fileMiB: number } {
  const kb = (field: string) => statusKb(status, field);
  return { anonMiB: kb('RssAnon') / 1024, fileMiB: (kb('RssFile') + kb('RssShmem')) / 1024 };
}

/** CPU used over `ms` as a share of one core, and the RSS at the end. */
export async function idleUsage(pid: number, ms: number): Promise<{ cpuCores: number; rssMiB: number }> {
  const a = sampleProcess(pid);
  const t0 = performance.now();
  await sleep(ms);
  const b = sampleProcess(pid);
  const dt = (performance.now() - t0) / 1000;
  if (!a || !b) return { cpuCores: Number.NaN, rssMiB: Number.NaN };
  return { cpuCores: (b.cpuSeconds - a.cpuSeconds) / dt, rssMiB: b.rssMiB };
}

/**
 * The cluster's own processes (kube-apiserver, etcd, kube-controller-manager, kube-scheduler,
 * kwok-controller) by program name: kwokctl starts them outside our process tree, each with a path of the
 * cluster's work directory on its command line.
 */
export function clusterPids(world: World): Map<string, number> {
  const pids = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.includes(world.cluster.workdir)))
        pids.set(cmd[0]?.split('/').pop() ?? entry, Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The kube-controller-manager of `world`. */
export function controllerManagerPid(world: World): number | undefined {
  return clusterPids(world).get('kube-controller-manager');
}

/** CPU seconds used so far by each named process, and by this bench process as `bench`. */
export function cpuSeconds(pids: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, pid] of pids) {
    const s = sampleProcess(pid);
    if (s) out.set(name, s.cpuSeconds);
  }
  const self = process.cpuUsage();
  out.set('bench', (self.user + self.system) / 1e6);
  return out;
}

/** CPU seconds each process used between two `cpuSeconds` readings, largest first. */
export function cpuGrowth(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>) {
  return [...after]
    .map(([name, s]): [string, number] => [name, s - (before.get(name) ?? s)])
    .sort((a, b) => b[1] - a[1]);
}

/**
 * A Go CPU profile of the cluster's kube-apiserver over the next `seconds` (its /debug/pprof, on by
 * default), written to `file`: read it with `go tool pprof -top -cum FILE`. Resolves when written.
 */
export async function apiServerCpuProfile(world: World, seconds: number, file: string): Promise<void> {
  const cluster = world.kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(`/debug/pprof/profile?seconds=${seconds}`, cluster.server);
  const opts: RequestOptions = { method: 'GET', timeout: (seconds + 30) * 1000 };
  await world.kc.applyToHTTPSOptions(opts);
  const body = await new Promise<Buffer>((ok, fail) => {
    const req = httpsRequest(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? ok(Buffer.concat(chunks))
          : fail(new Error(`kube-apiserver profile: HTTP ${res.statusCode}`)),
      );
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, body);
}

// ---- the operator --------------------------------------------------------------------------------

/** A graceful stop may drain queues and must let `--cpu-prof` write its profile before SIGKILL. */
export const STOP_GRACE_MS = 120_000;

export interface OperatorRun {
  proc: OperatorProcess;
  startedAt: number;
}

export interface OperatorOptions {
  env?: Record<string, string>;
  /** Webhook serving certificates (tls.crt, tls.key): the webhook is served on a port it picks (webhookUrl). */
  certDir?: string;
  /** Node flags, e.g. ['--cpu-prof', '--cpu-prof-dir', dir]. */
  nodeArgs?: string[];
  /** Another checkout's operator/src/main.ts (a baseline to compare with). */
  main?: string;
}

/** How every scenario starts its operators (bench/run.ts --profile, --operator-main, --env). */
export interface OperatorVariant {
  env?: Record<string, string>;
  nodeArgs?: string[];
  main?: string;
}

export async function startOperator(
  world: World,
  label: string,
  opts: OperatorOptions = {},
): Promise<OperatorRun> {
  const startedAt = Date.now();
  const proc = await OperatorProcess.start(
    {
      kubeconfigPath: world.cluster.kubeconfigPath,
      namespace: OPERATOR_NAMESPACE,
      logDir: world.logDir,
      env: {
        // Without webhooks no Operation carries a signed admission record: the scenarios that measure the
        // controllers alone run them anyway (ADR 0029's development switch).
        ...(opts.certDir
          ? // Port 0: the operator binds what the kernel gives and logs it; a free port picked here could
            // be taken before the operator binds it.
            { WEBHOOK_CERT_DIR: opts.certDir, WEBHOOK_PORT: '0', WEBHOOK_HOST: '127.0.0.1' }
          : { REQUIRE_ADMISSION_STAMP: 'false' }),
        ...opts.env,
      },
      ...(opts.nodeArgs?.length || opts.main
        ? {
            launch: {
              command: process.execPath,
              // The operator's own flags first: a --node-arg given later overrides one of them.
              args: [...OPERATOR_NODE_FLAGS, ...(opts.nodeArgs ?? []), opts.main ?? 'operator/src/main.ts'],
            },
          }
        : {}),
    },
    label,
  );
  return { proc, startedAt };
}

/** The webhook's base URL, from the port the operator logged once serving (it is, once waitReady resolved). */
export function webhookUrl(op: OperatorRun): string {
  const port = op.proc.webhookPort;
  if (port === undefined)
    throw new Error(
      `operator ${op.proc.logPath} logged no "admission webhook serving" (await waitReady first)`,
    );
  return `https://127.0.0.1:${port}`;
}

/** Prometheus text → samples by series (`name{labels}` exactly as exposed, `name` alone without labels). */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    out.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

/** The operator's metrics, by series (parseMetrics). */
export async function scrape(proc: OperatorProcess): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${proc.metricsPort}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  return parseMetrics(await res.text());
}

/** The API server's own metrics, by series (parseMetrics): who asked it what. */
export async function scrapeApiServer(api: RestClient): Promise<Map<string, number>> {
  return parseMetrics(
    String(await api.request<string>({ method: 'GET', path: '/metrics', accept: 'text/plain' })),
  );
}

/** The value of one label of a series key (`name{a="x",b="y"}`), '' when absent. */
export function labelOf(series: string, label: string): string {
  return new RegExp(`[{,]${label}="([^"]*)"`).exec(series)?.[1] ?? '';
}

/** Adds to `into` how much each series of `after` (those `keep` takes) grew since `before`: over several runs. */
export function addGrowth(
  into: Map<string, number>,
  before: Map<string, number>,
  after: Map<string, number>,
  keep: (series: string) => boolean = () => true,
): void {
  for (const [k, v] of after) if (keep(k)) into.set(k, (into.get(k) ?? 0) + v - (before.get(k) ?? 0));
}

/**
 * How much each series of the counter `name` grew between two scrapes, summed by `groupOf(series)`,
 * most first (series that did not grow left out).
 */
export function growthBy(
  before: Map<string, number>,
  after: Map<string, number>,
  name: string,
  groupOf: (series: string) => string,
): [string, number][] {
  const sums = new Map<string, number>();
  for (const [k, v] of after) {
    if (!k.startsWith(`${name}{`)) continue;
    const d = v - (before.get(k) ?? 0);
    if (d <= 0) continue;
    const g = groupOf(k);
    sums.set(g, (sums.get(g) ?? 0) + d);
  }
  return [...sums].sort((a, b) => b[1] - a[1]);
}

/**
 * Requests the API server answered between two scrapeApiServer()s, by "VERB resource[/subresource]"
 * (watches and the lease renewals of every component included), most first.
 */
export function requestsByResource(
  before: Map<string, number>,
  after: Map<string, number>,
): [string, number][] {
  return growthBy(before, after, 'apiserver_request_total', (k) => {
    const sub = labelOf(k, 'subresource');
    return `${labelOf(k, 'verb')} ${labelOf(k, 'resource')}${sub ? `/${sub}` : ''}`;
  });
}

/** Sum of every series of `name` whose labels contain `match` (e.g. 'controller="operation"'). */
export function metricSum(m: Map<string, number>, name: string, match = ''): number {
  let sum = 0;
  for (const [k, v] of m) {
    if ((k === name || k.startsWith(`${name}{`)) && k.includes(match)) sum += v;
  }
  return sum;
}

/**
 * Waits until the operator's queues are empty, nothing is in flight and it sends no API request (but its
 * Lease renewals) for `quietMs`: the reports that trail a burst (instance summaries, Events; ADR 0062) are
 * written before the next phase starts. A scrape the operator does not answer (its event loop blocked)
 * counts as busy; resolves to how many went unanswered.
 */
export async function waitQuiet(proc: OperatorProcess, quietMs: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let quietSince: number | undefined;
  let lastTotal = -1;
  let unanswered = 0;
  while (Date.now() < deadline) {
    const m = await scrape(proc).catch(() => undefined);
    if (!m) {
      if (proc.crashed) break;
      unanswered++;
      quietSince = undefined;
      await sleep(1000);
      continue;
    }
    const busy = metricSum(m, 'workqueue_depth') + metricSum(m, 'controller_runtime_active_workers');
    const total =
      metricSum(m, 'controller_runtime_reconcile_total') +
      metricSum(m, 'rest_client_requests_total') -
      metricSum(m, 'rest_client_requests_total', 'client="leader-election"');
    if (busy === 0 && total === lastTotal) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= quietMs) return unanswered;
    } else quietSince = undefined;
    lastTotal = total;
    await sleep(1000);
  }
  throw new Error(`operator not quiet within ${timeoutMs} ms`);
}
