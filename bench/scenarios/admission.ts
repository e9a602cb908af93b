// Admission latency: server-side dry-run creates of RunCommand Operations beside dry-run creates of
// ConfigMaps (no webhook), each at a steady rate, interleaved, open loop (a request is sent on schedule
// whether or not the previous one has answered), measured at the client. The Operations go, request by
// request in a shuffled order, to four namespaces that four settings select: no webhook (the CRD's own
// cost), the operator's webhooks, the same registrations pointing at a null webhook pair
// (bench/null-webhook.ts: what dispatch alone costs), and at a null pair whose mutating answer carries the
// operator's own patch (what dispatch and applying the patch cost). All four are registered at once, each
// pair's webhooks selecting their own namespace, so whatever the shared machine does at any moment falls
// on every setting alike (docs/adr/0064).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OPERATOR_NODE_FLAGS } from '@vworkspace/operator';
import { MUTATING_OPERATION_WEBHOOK } from '@vworkspace/operator/packaging';
import { makeServingCert } from '../../hack/lib/certs.ts';
import { ROOT } from '../../hack/lib/controlplane.ts';
import { eventually } from '../../hack/lib/eventually.ts';
import {
  applyWebhookConfigurations,
  csvWebhookDefinitions,
  webhookConfigurations,
} from '../../hack/lib/webhooks.ts';
import { annotationPatch, type NullPatch, STATS_PATH } from '../lib/admission-patch.ts';
import { interleaved } from '../lib/interleave.ts';
import { instance, namespace, releaseSecret, runCommand, serviceAccount } from '../lib/objects.ts';
import { row, type ScenarioResult } from '../lib/result.ts';
import { quantile } from '../lib/stats.ts';
import {
  addGrowth,
  apiServerCpuProfile,
  clusterPids,
  createAll,
  metricSum,
  type OperatorVariant,
  pathOf,
  STOP_GRACE_MS,
  sampleProcess,
  scrape,
  scrapeApiServer,
  startOperator,
  startWorld,
  type World,
  webhookUrl,
} from '../lib/world.ts';

export interface AdmissionOptions {
  /** Operations per second (one in four to each setting) and ConfigMaps per second. */
  rate: number;
  seconds: number;
  runs: number;
  logDir: string;
  operator?: OperatorVariant;
  /** Also take a CPU profile of kube-apiserver during the first run, into this directory. */
  profileDir?: string;
}

/** Who admits an Operation: nobody (no webhook selects its namespace), or a webhook pair. */
type Setting = 'bare' | 'operator' | 'null' | 'patched';
const SETTINGS: readonly Setting[] = ['bare', 'operator', 'null', 'patched'];
/** A webhook pair: the settings that register webhooks. */
type Pair = Exclude<Setting, 'bare'>;
const PAIRS: readonly Pair[] = ['operator', 'null', 'patched'];

/** The namespace label each pair's webhooks select: its value is the setting. */
const SETTING_LABEL = 'bench.vworkspace.io/admission';
const namespaceOf = (s: Setting) => `adm-${s}`;
/** The webhooks' names per pair: the API server's admission metrics tell the pairs apart by them. */
const hookName = (pair: Pair, name: string) => (pair === 'operator' ? name : `${pair}.${name}`);

async function timed(world: World, obj: Record<string, unknown>): Promise<number> {
  const t = performance.now();
  await world.api.request({ method: 'POST', path: pathOf(obj), body: obj, query: { dryRun: 'All' } });
  return performance.now() - t;
}

/**
 * Sends `make(i)` every 1000/rate ms for `seconds`, starting `offsetMs` in; resolves with each request's
 * latency (ms) by its index, undefined where it failed (the error is kept in `errors`).
 */
async function steady(
  world: World,
  rate: number,
  seconds: number,
  offsetMs: number,
  make: (i: number) => Record<string, unknown>,
  errors: string[],
): Promise<(number | undefined)[]> {
  const start = performance.now() + offsetMs;
  const pending: Promise<number | undefined>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      timed(world, make(i)).catch((err: unknown) => {
        errors.push(String(err));
        return undefined;
      }),
    );
  }
  return Promise.all(pending);
}

const defined = (xs: readonly (number | undefined)[]) => xs.filter((v): v is number => v !== undefined);

/**
 * bench/null-webhook.ts as its own process (on the operator's Node flags, and the variant's: with
 * --profile it is profiled beside the operator), serving until stop(); with `patchFile`, answering the
 * patch it holds on its path.
 */
async function startNullWebhook(
  certDir: string,
  logDir: string,
  nodeArgs: readonly string[],
  patchFile?: string,
): Promise<{ url: string; pid: number | undefined; stop(): void; stats(): Promise<Map<string, number>> }> {
  const child = spawn(
    process.execPath,
    [
      ...OPERATOR_NODE_FLAGS,
      ...nodeArgs,
      join(ROOT, 'bench/null-webhook.ts'),
      certDir,
      ...(patchFile ? [patchFile] : []),
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  // A bench stopped by a signal exits through its 'exit' handlers (stop-signals.ts): take this one along.
  process.once('exit', stop);
  let err = '';
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const port = await new Promise<number>((ok, fail) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) ok(Number(m[1]));
    });
    child.once('exit', (code) =>
      fail(new Error(`null webhook exited ${code}: ${err.trim()} (logs: ${logDir})`)),
    );
  });
  // Its GET /stats as series: `PATH count` and `PATH seconds`.
  const stats = () =>
    new Promise<Map<string, number>>((ok, fail) => {
      const req = httpsGet(
        {
          host: '127.0.0.1',
          port,
          path: STATS_PATH,
          ca: readFileSync(join(certDir, 'ca.crt')),
          timeout: 10_000,
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => {
            const served = JSON.parse(body) as Record<string, { count: number; seconds: number }>;
            ok(
              new Map(
                Object.entries(served).flatMap(([path, s]) => [
                  [`${path} count`, s.count],
                  [`${path} seconds`, s.seconds],
                ]),
              ),
            );
          });
        },
      );
      req.on('error', fail);
    });
  return { url: `https://127.0.0.1:${port}`, pid: child.pid, stop, stats };
}

export async function admission(o: AdmissionOptions): Promise<ScenarioResult> {
  const t0 = Date.now();
  const world = await startWorld('vws-bench-admission', o.logDir);
  const certs = makeServingCert(join(o.logDir, 'admission-certs'));
  const op = await startOperator(world, 'operator-admission', {
    certDir: certs.dir,
    ...o.operator,
  });
  const notes: string[] = [];
  const stops: (() => void)[] = [];
  try {
    await op.proc.waitReady(120_000);
    for (const setting of SETTINGS) {
      const ns = namespaceOf(setting);
      await createAll(world.api, [namespace(ns, 'admission', { [SETTING_LABEL]: setting })]);
      await createAll(world.api, [
        serviceAccount('vworkspace-runner', ns),
        instance('app', ns),
        releaseSecret('app', ns),
      ]);
    }
    const operation = (setting: Setting, i: number, target = 'app') =>
      runCommand(`dry-${i}`, namespaceOf(setting), target);
    const configMap = (i: number) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `dry-${i}`, namespace: namespaceOf('bare') },
      data: { key: 'value' },
    });
    const dryRun = (obj: Record<string, unknown>) =>
      world.api.request<{ metadata?: { annotations?: Record<string, string> } }>({
        method: 'POST',
        path: pathOf(obj),
        body: obj,
        query: { dryRun: 'All' },
      });
    const errors: string[] = [];

    // Each pair: the CSV's own webhook definitions, selecting only its namespace; the API server takes a
    // moment to see a new configuration, so each pair is proven to answer before anything is measured.
    const defs = csvWebhookDefinitions();
    const mutatePath = defs.find((d) => d.generateName === MUTATING_OPERATION_WEBHOOK)?.webhookPath;
    const validateName = defs.find(
      (d) => d.type === 'ValidatingAdmissionWebhook' && d.webhookPath === '/validate-operation',
    )?.generateName;
    if (!mutatePath || !validateName)
      throw new Error('the CSV has no mutating or no validating webhook of Operations (/validate-operation)');
    const register = async (pair: Pair, url: string, answering: () => Promise<boolean>) => {
      const configs = webhookConfigurations(defs, url, certs.caPem, `bench-admission-${pair}`);
      for (const config of configs)
        for (const hook of config.webhooks) {
          hook.name = hookName(pair, String(hook.name));
          hook.namespaceSelector = { matchLabels: { [SETTING_LABEL]: pair } };
        }
      await applyWebhookConfigurations(world.api, configs);
      await eventually(`the ${pair} webhook pair to answer its namespace`, answering, 60_000, 500);
    };
    /** A null pair answers: a dry run in its namespace reached it (its own count grew). */
    const reaches = (hook: Awaited<ReturnType<typeof startNullWebhook>>, pair: Pair) => async () => {
      const count = async () => (await hook.stats()).get(`${mutatePath} count`) ?? 0;
      const before = await count();
      await dryRun(operation(pair, 0));
      return (await count()) > before;
    };

    // The operator's pair denies an Operation whose target is absent (a null pair admits it).
    await register('operator', webhookUrl(op), async () =>
      dryRun(operation('operator', 0, 'absent')).then(
        () => false,
        () => true,
      ),
    );
    const nullHook = await startNullWebhook(certs.dir, o.logDir, o.operator?.nodeArgs ?? []);
    stops.push(nullHook.stop);
    await register('null', nullHook.url, reaches(nullHook, 'null'));
    // The second null pair answers the operator's own patch: read back once from a dry-run create through
    // the operator's webhooks (bench/lib/admission-patch.ts).
    const sent = operation('operator', 0);
    const nullPatch: NullPatch = { path: mutatePath, patch: annotationPatch(sent, await dryRun(sent)) };
    if (nullPatch.patch.length === 0)
      throw new Error(
        `no patch from the operator's mutating webhook (${MUTATING_OPERATION_WEBHOOK}) to copy`,
      );
    const patchFile = join(o.logDir, 'null-webhook-patch.json');
    writeFileSync(patchFile, `${JSON.stringify(nullPatch, null, 2)}\n`);
    const patchedHook = await startNullWebhook(certs.dir, o.logDir, o.operator?.nodeArgs ?? [], patchFile);
    stops.push(patchedHook.stop);
    await register('patched', patchedHook.url, reaches(patchedHook, 'patched'));
    // And nothing judges the bare namespace: its dry run comes back as sent.
    const bare = await dryRun(operation('bare', 0, 'absent'));
    if (Object.keys(bare.metadata?.annotations ?? {}).length > 0)
      throw new Error(`a webhook judged ${namespaceOf('bare')}, which no webhook should select`);

    for (let i = 0; i < 50; i++)
      await Promise.all([...SETTINGS.map((s) => timed(world, operation(s, i))), timed(world, configMap(i))]);

    // CPU seconds per run of each pair's process and of the API server, and the metrics each keeps, grown
    // over the measured runs only: where the difference between the settings is spent.
    const cluster = clusterPids(world);
    const apiServer = cluster.get('kube-apiserver');
    const pids: Record<Pair, number | undefined> = {
      operator: op.proc.child.pid,
      null: nullHook.pid,
      patched: patchedHook.pid,
    };
    const cpuOf = (pid: number | undefined) =>
      pid ? (sampleProcess(pid)?.cpuSeconds ?? Number.NaN) : Number.NaN;
    const cpu: Record<Pair | 'apiServer', number[]> = { operator: [], null: [], patched: [], apiServer: [] };
    const perRequest: Record<Pair | 'apiServer', number[]> = {
      operator: [],
      null: [],
      patched: [],
      apiServer: [],
    };
    const grown = new Map<string, number>();
    const apiSide = new Map<string, number>();
    const servedBy: Record<'null' | 'patched', Map<string, number>> = { null: new Map(), patched: new Map() };
    const runs: { by: Record<Setting, number[]>; cm: number[] }[] = [];
    for (let run = 0; run < o.runs; run++) {
      const order = interleaved(SETTINGS, o.rate * o.seconds, run + 1);
      const before = {
        cpu: Object.fromEntries(PAIRS.map((p) => [p, cpuOf(pids[p])])) as Record<Pair, number>,
        api: cpuOf(apiServer),
        operator: await scrape(op.proc),
        apiMetrics: await scrapeApiServer(world.api),
        null: await nullHook.stats(),
        patched: await patchedHook.stats(),
      };
      // With --profile: what the API server spends across the four settings in the first run.
      const profile =
        o.profileDir && run === 0
          ? apiServerCpuProfile(
              world,
              o.seconds - 2,
              join(o.profileDir, 'kube-apiserver-admission.pprof'),
            ).catch((err: unknown) => notes.push(`no kube-apiserver profile: ${String(err)}`))
          : undefined;
      const [opLat, cmLat] = await Promise.all([
        steady(world, o.rate, o.seconds, 0, (i) => operation(order[i] as Setting, i), errors),
        steady(world, o.rate, o.seconds, 500 / o.rate, configMap, errors),
      ]);
      await profile;
      await sleep(2000);
      const by = { bare: [], operator: [], null: [], patched: [] } as Record<Setting, number[]>;
      opLat.forEach((ms, i) => {
        if (ms !== undefined) by[order[i] as Setting].push(ms);
      });
      runs.push({ by, cm: defined(cmLat) });
      const sent = (s: Setting) => order.filter((x) => x === s).length;
      for (const p of PAIRS) {
        cpu[p].push(cpuOf(pids[p]) - before.cpu[p]);
        perRequest[p].push(sent(p));
      }
      cpu.apiServer.push(cpuOf(apiServer) - before.api);
      perRequest.apiServer.push(opLat.length + cmLat.length);
      addGrowth(grown, before.operator, await scrape(op.proc));
      addGrowth(apiSide, before.apiMetrics, await scrapeApiServer(world.api), (k) =>
        k.startsWith('apiserver_admission_webhook_'),
      );
      addGrowth(servedBy.null, before.null, await nullHook.stats());
      addGrowth(servedBy.patched, before.patched, await patchedHook.stats());
    }

    // Where the webhooks' time goes, from the operator's own metrics over the measured runs (means: the
    // histogram buckets are too coarse for milliseconds): each handler, and the API calls it makes.
    const delta = (name: string, match: string) => {
      const d = (suffix: string) => metricSum(grown, `${name}_${suffix}`, match);
      return { count: d('count'), sum: d('sum') };
    };
    const handler = (path: string) => {
      const { count, sum } = delta('controller_runtime_webhook_latency_seconds', `webhook="${path}"`);
      return count > 0 ? `${((sum / count) * 1000).toFixed(2)} ms` : 'not called';
    };
    // API calls by verb: how many (the target comes from the cache, allowing reviews are kept a few
    // seconds, so most requests make none) and their mean.
    const calls = (verb: string) => {
      const { count, sum } = delta(
        'rest_client_request_duration_seconds',
        `client="admission-webhook",verb="${verb}"`,
      );
      return count > 0 ? `${count} × ${((sum / count) * 1000).toFixed(2)} ms` : 'none';
    };
    const nullMean = (who: 'null' | 'patched', path: string) => {
      const count = servedBy[who].get(`${path} count`) ?? 0;
      const seconds = servedBy[who].get(`${path} seconds`) ?? 0;
      return count > 0 ? `${((seconds / count) * 1000).toFixed(2)} ms` : 'not called';
    };
    notes.push(
      `inside the webhook process, mean per request, from its arrival to the answer written: the operator mutate ${handler('/mutate-operation')}, validate ${handler('/validate-operation')}; the null pair mutate ${nullMean('null', '/mutate-operation')}, validate ${nullMean('null', '/validate-operation')}; the null pair with the patch mutate ${nullMean('patched', '/mutate-operation')}, validate ${nullMean('patched', '/validate-operation')}; the operator's webhooks' API calls over the measured runs: GET ${calls('GET')}, POST (SubjectAccessReview) ${calls('POST')}`,
    );
    const perOp = (who: Pair | 'apiServer') =>
      cpu[who].map((x, i) => ((x * 1000) / (perRequest[who][i] ?? Number.NaN)).toFixed(2)).join(', ');
    notes.push(
      `CPU ms per Operation it answered, run by run: the operator ${perOp('operator')} vs the null pair ${perOp('null')} vs the null pair with the patch ${perOp('patched')}; kube-apiserver per request of any setting (ConfigMaps included) ${perOp('apiServer')}`,
    );
    notes.push(
      `the null pair with the patch answered ${nullPatch.path} with the operator's patch of ${JSON.stringify(nullPatch.patch).length} bytes (${patchFile})`,
    );
    // Means over the measured runs of each pair's calls, as the API server timed them (from its side:
    // connection, TLS, the webhook's answer; the mutating call includes applying the patch).
    const apiMean = (name: string) => {
      const match = `name="${name}"`;
      const count = metricSum(apiSide, 'apiserver_admission_webhook_admission_duration_seconds_count', match);
      return count > 0
        ? `${((metricSum(apiSide, 'apiserver_admission_webhook_admission_duration_seconds_sum', match) / count) * 1000).toFixed(2)}`
        : '-';
    };
    notes.push(
      `the API server's mean ms per webhook call (its admission metrics): ${PAIRS.map((p) => `${p}: mutating ${apiMean(hookName(p, MUTATING_OPERATION_WEBHOOK))}, validating ${apiMean(hookName(p, validateName))}`).join('; ')}`,
    );
    const p50 = (s: Setting) => runs.map((r) => quantile(r.by[s], 0.5));
    notes.push(
      `the operator's p50 over the null pair's, run by run (the same seconds of the same run): ${p50(
        'operator',
      )
        .map((x, i) => (x / (p50('null')[i] ?? Number.NaN)).toFixed(2))
        .join(', ')}`,
    );
    if (o.operator?.nodeArgs?.length)
      notes.push(
        `the null pair was process ${nullHook.pid}, the null pair with the patch ${patchedHook.pid}`,
      );
    if (errors.length) notes.push(`${errors.length} requests failed, e.g. ${errors[0]}`);
    notes.push(
      `${o.rate} Operations/s (in blocks of one per setting, each block shuffled: ${o.rate / SETTINGS.length}/s each) and ${o.rate} ConfigMaps/s for ${o.seconds} s per run`,
    );
    const q = (s: Setting | 'cm', p: number) => runs.map((r) => quantile(s === 'cm' ? r.cm : r.by[s], p));
    type Target = Parameters<typeof row>[4];
    /** A setting's Operation p50 beside another setting's (or the ConfigMaps'), run by run. */
    const against = (label: string, a: Setting, b: Setting | 'cm', target?: Target) =>
      row(label, ' ms', q(a, 0.5), q(b, 0.5), target);
    return {
      scenario: 'admission',
      title: `admission at ${o.rate}/s`,
      params: { rate: o.rate, seconds: o.seconds, runs: o.runs },
      rows: [
        against('dry-run create p50 (vs ConfigMap)', 'operator', 'cm', (_, __, r) => ({
          text: 'ratio ≤ 2',
          met: (r ?? Number.NaN) <= 2,
        })),
        row('dry-run create p99 (vs ConfigMap)', ' ms', q('operator', 0.99), q('cm', 0.99)),
        against('dry-run create p50 without the webhooks (the CRD itself, vs ConfigMap)', 'bare', 'cm'),
        against(
          'dry-run create p50: with the webhooks vs without (what the webhooks add)',
          'operator',
          'bare',
        ),
        against(
          'dry-run create p50 through a null webhook pair (same registrations, TLS and server, answering allowed at once; vs ConfigMap)',
          'null',
          'cm',
        ),
        against(
          "dry-run create p50: the operator's webhooks vs the null pair (what its checks add beyond dispatch)",
          'operator',
          'null',
          (_, __, r) => ({ text: 'ratio ≤ 1.2', met: (r ?? Number.NaN) <= 1.2 }),
        ),
        against(
          "dry-run create p50 through a null webhook pair that returns the operator's patch (vs ConfigMap)",
          'patched',
          'cm',
        ),
        against(
          "dry-run create p50: the operator's webhooks vs a null pair that returns the same patch (what the checks add beyond dispatch and the patch)",
          'operator',
          'patched',
        ),
      ],
      notes,
      durationSeconds: (Date.now() - t0) / 1000,
    };
  } finally {
    for (const stop of stops) stop();
    await op.proc.stop(STOP_GRACE_MS);
    await world.stop();
  }
}
