// Admission latency: server-side dry-run creates of RunCommand Operations (through the operator's
// mutating and validating webhooks, which read the target and ask a SubjectAccessReview) beside dry-run
// creates of ConfigMaps (no webhook), each at a steady rate, interleaved, open loop (a request is sent
// on schedule whether or not the previous one has answered), measured at the client. Four settings:
// no webhooks (the CRD's own cost), the operator's webhooks, the same registrations pointing at a null
// webhook (bench/null-webhook.ts: what dispatch alone costs), and at a null webhook whose mutating
// answer carries the operator's own patch (what dispatch and applying the patch cost); the last three
// alternate run by run.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OPERATOR_NODE_FLAGS } from '@vworkspace/operator';
import { MUTATING_OPERATION_WEBHOOK } from '@vworkspace/operator/packaging';
import { makeServingCert } from '../../hack/lib/certs.ts';
import { ROOT } from '../../hack/lib/controlplane.ts';
import {
  applyWebhookConfigurations,
  csvWebhookDefinitions,
  webhookConfigurations,
} from '../../hack/lib/webhooks.ts';
import { annotationPatch, type NullPatch, STATS_PATH } from '../lib/admission-patch.ts';
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
  /** Requests per second of EACH kind. */
  rate: number;
  seconds: number;
  runs: number;
  logDir: string;
  operator?: OperatorVariant;
  /** Also take a CPU profile of kube-apiserver during the first run with each pair, into this directory. */
  profileDir?: string;
}

const NS = 'adm';

/** Who answers the webhooks' registrations in a measured run. */
type Pair = 'operator' | 'null' | 'patched';

async function timed(world: World, obj: Record<string, unknown>): Promise<number> {
  const t = performance.now();
  await world.api.request({ method: 'POST', path: pathOf(obj), body: obj, query: { dryRun: 'All' } });
  return performance.now() - t;
}

/** Sends `make(i)` every 1000/rate ms for `seconds`, starting `offsetMs` in; resolves with latencies (ms). */
async function steady(
  world: World,
  rate: number,
  seconds: number,
  offsetMs: number,
  make: (i: number) => Record<string, unknown>,
  errors: string[],
): Promise<number[]> {
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
  return (await Promise.all(pending)).filter((v): v is number => v !== undefined);
}

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
  try {
    await op.proc.waitReady(120_000);
    await createAll(world.api, [namespace(NS, 'admission')]);
    await createAll(world.api, [
      serviceAccount('vworkspace-runner', NS),
      instance('app', NS),
      releaseSecret('app', NS),
    ]);
    const operation = (i: number) => runCommand(`dry-${i}`, NS, 'app');
    const configMap = (i: number) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `dry-${i}`, namespace: NS },
      data: { key: 'value' },
    });
    const errors: string[] = [];
    const warmUp = async () => {
      for (let i = 0; i < 50; i++)
        await Promise.all([timed(world, operation(i)), timed(world, configMap(i))]);
    };
    // One run: interleaved series of Operations and ConfigMaps.
    const oneRun = async () => {
      const half = 500 / o.rate;
      const [opLat, cmLat] = await Promise.all([
        steady(world, o.rate, o.seconds, 0, operation, errors),
        steady(world, o.rate, o.seconds, half, configMap, errors),
      ]);
      await sleep(2000);
      return { op: opLat, cm: cmLat };
    };
    // First without the webhooks: what the API server itself spends on a dry-run create of the CRD
    // (schema, CEL rules, defaulting) beside a ConfigMap, so the webhooks' own share can be told apart.
    await warmUp();
    const bare: { op: number[]; cm: number[] }[] = [];
    for (let run = 0; run < o.runs; run++) bare.push(await oneRun());
    // Then the same two registrations pointing at the operator and at a null webhook (answers "allowed"
    // at once), alternating run by run so drift in the machine falls on both alike.
    const nullHook = await startNullWebhook(certs.dir, o.logDir, o.operator?.nodeArgs ?? []);
    // CPU seconds per run of the process answering (the operator or the null pair) and of the API server:
    // where the difference between the two is spent, beside the latencies.
    const cluster = clusterPids(world);
    const apiServer = cluster.get('kube-apiserver');
    const cpu: Record<Pair, { hook: number[]; api: number[] }> = {
      operator: { hook: [], api: [] },
      null: { hook: [], api: [] },
      patched: { hook: [], api: [] },
    };
    // The API server's own account of each run (its admission metrics): how long each webhook call took
    // from its side (connection, TLS, the webhook's answer) and each admission step in all (for the
    // mutating step: the calls plus decoding and applying the patch), so the p50s above can be taken apart.
    const apiSide: Record<Pair, Map<string, number>> = {
      operator: new Map(),
      null: new Map(),
      patched: new Map(),
    };
    const cpuOf = (pid: number | undefined) =>
      pid ? (sampleProcess(pid)?.cpuSeconds ?? Number.NaN) : Number.NaN;
    const measured = async (who: Pair, pid: number | undefined, run: number) => {
      const [hook0, api0] = [cpuOf(pid), cpuOf(apiServer)];
      const metrics0 = await scrapeApiServer(world.api);
      // With --profile: what the API server does differently with either pair (go tool pprof -top -diff_base).
      const profile =
        o.profileDir && run === 0
          ? apiServerCpuProfile(
              world,
              o.seconds - 2,
              join(o.profileDir, `kube-apiserver-admission-${who}.pprof`),
            ).catch((err: unknown) => notes.push(`no kube-apiserver profile with ${who}: ${String(err)}`))
          : undefined;
      const r = await oneRun();
      await profile;
      cpu[who].hook.push(cpuOf(pid) - hook0);
      cpu[who].api.push(cpuOf(apiServer) - api0);
      addGrowth(apiSide[who], metrics0, await scrapeApiServer(world.api), (k) =>
        k.startsWith('apiserver_admission_'),
      );
      return r;
    };
    const operatorHooks = webhookConfigurations(csvWebhookDefinitions(), webhookUrl(op), certs.caPem);
    const nullHooks = webhookConfigurations(csvWebhookDefinitions(), nullHook.url, certs.caPem);
    // Whose webhooks answer is proven before each run: the operator denies an Operation whose target is
    // absent, the null webhook admits it. The API server takes a moment to see a changed configuration.
    const use = async (configs: typeof operatorHooks, expectDenied: boolean, who: string) => {
      await applyWebhookConfigurations(world.api, configs);
      const probe = runCommand('dry-probe', NS, 'absent');
      const deadline = Date.now() + 60_000;
      for (;;) {
        const denied = await world.api
          .request({ method: 'POST', path: pathOf(probe), body: probe, query: { dryRun: 'All' } })
          .then(
            () => false,
            () => true,
          );
        if (denied === expectDenied) break;
        if (Date.now() > deadline)
          throw new Error(`${who}: the webhooks registered are not the ones answering after 60 s`);
        await sleep(500);
      }
      await warmUp();
    };
    // The second null pair answers the operator's own patch: read back once from a dry-run create
    // through the operator's webhooks (bench/lib/admission-patch.ts).
    await use(operatorHooks, true, 'the operator');
    const sent = operation(0);
    const admitted = await world.api.request<unknown>({
      method: 'POST',
      path: pathOf(sent),
      body: sent,
      query: { dryRun: 'All' },
    });
    const mutatePath = csvWebhookDefinitions().find(
      (d) => d.generateName === MUTATING_OPERATION_WEBHOOK,
    )?.webhookPath;
    const nullPatch: NullPatch = { path: mutatePath ?? '', patch: annotationPatch(sent, admitted) };
    if (!mutatePath || nullPatch.patch.length === 0)
      throw new Error(
        `no patch from the operator's mutating webhook (${MUTATING_OPERATION_WEBHOOK}) to copy`,
      );
    const patchFile = join(o.logDir, 'null-webhook-patch.json');
    writeFileSync(patchFile, `${JSON.stringify(nullPatch, null, 2)}\n`);
    const patchedHook = await startNullWebhook(certs.dir, o.logDir, o.operator?.nodeArgs ?? [], patchFile);
    const patchedHooks = webhookConfigurations(csvWebhookDefinitions(), patchedHook.url, certs.caPem);
    const runs: { op: number[]; cm: number[] }[] = [];
    const nulls: { op: number[]; cm: number[] }[] = [];
    const patched: { op: number[]; cm: number[] }[] = [];
    // The operator's metrics grown over its own runs only (the null webhook's runs do not touch it).
    const grown = new Map<string, number>();
    // The null pairs' own account of the measured runs, as the operator's histogram gives its own.
    const servedBy: Record<'null' | 'patched', Map<string, number>> = { null: new Map(), patched: new Map() };
    try {
      for (let run = 0; run < o.runs; run++) {
        await use(operatorHooks, true, 'the operator');
        const before = await scrape(op.proc);
        runs.push(await measured('operator', op.proc.child.pid, run));
        addGrowth(grown, before, await scrape(op.proc));
        await use(nullHooks, false, 'the null webhook');
        let served = await nullHook.stats();
        nulls.push(await measured('null', nullHook.pid, run));
        addGrowth(servedBy.null, served, await nullHook.stats());
        await use(patchedHooks, false, 'the null webhook with the patch');
        served = await patchedHook.stats();
        patched.push(await measured('patched', patchedHook.pid, run));
        addGrowth(servedBy.patched, served, await patchedHook.stats());
      }
    } finally {
      nullHook.stop();
      patchedHook.stop();
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
    // Per Operation admitted in a run (each run also sends as many ConfigMaps, which no webhook sees).
    const perOp = (xs: number[]) =>
      xs.map((x) => `${((x * 1000) / (o.rate * o.seconds)).toFixed(2)}`).join(', ');
    notes.push(
      `CPU ms per Operation, run by run: the operator ${perOp(cpu.operator.hook)} vs the null pair ${perOp(cpu.null.hook)} vs the null pair with the patch ${perOp(cpu.patched.hook)}; kube-apiserver with the operator ${perOp(cpu.operator.api)} vs with the null pair ${perOp(cpu.null.api)} vs with the null pair with the patch ${perOp(cpu.patched.api)} (ConfigMaps included)`,
    );
    notes.push(
      `the null pair with the patch answered ${nullPatch.path} with the operator's patch of ${JSON.stringify(nullPatch.patch).length} bytes (${patchFile})`,
    );
    // Means over the measured runs of the Operations' admission, as the API server timed it.
    const apiMean = (who: Pair, name: string, match: string) => {
      const count = metricSum(apiSide[who], `${name}_count`, match);
      return count > 0
        ? `${((metricSum(apiSide[who], `${name}_sum`, match) / count) * 1000).toFixed(2)}`
        : '-';
    };
    const apiView = (who: Pair) =>
      `${who}: mutating call ${apiMean(who, 'apiserver_admission_webhook_admission_duration_seconds', `name="${MUTATING_OPERATION_WEBHOOK}"`)}, validating call ${apiMean(who, 'apiserver_admission_webhook_admission_duration_seconds', 'type="validating"')}, mutating step ${apiMean(who, 'apiserver_admission_step_admission_duration_seconds', 'operation="CREATE",rejected="false",type="admit"')}, validating step ${apiMean(who, 'apiserver_admission_step_admission_duration_seconds', 'operation="CREATE",rejected="false",type="validate"')}`;
    notes.push(
      `the API server's mean ms per admitted request (admission metrics; the steps include every admission plugin, ConfigMaps too): ${(['operator', 'null', 'patched'] as const).map(apiView).join('; ')}`,
    );
    if (o.operator?.nodeArgs?.length)
      notes.push(
        `the null pair was process ${nullHook.pid}, the null pair with the patch ${patchedHook.pid}`,
      );
    if (errors.length) notes.push(`${errors.length} requests failed, e.g. ${errors[0]}`);
    notes.push(`${o.rate} req/s of each kind for ${o.seconds} s per run`);
    const q = (r: typeof runs, p: number, side: 'op' | 'cm') => r.map((x) => quantile(x[side], p));
    type Target = Parameters<typeof row>[4];
    /** A setting's Operation p50 beside its ConfigMap p50. */
    const beside = (label: string, r: typeof runs, target?: Target) =>
      row(label, ' ms', q(r, 0.5, 'op'), q(r, 0.5, 'cm'), target);
    /** The operator's Operation p50 beside another setting's. */
    const against = (label: string, r: typeof runs, target?: Target) =>
      row(label, ' ms', q(runs, 0.5, 'op'), q(r, 0.5, 'op'), target);
    return {
      scenario: 'admission',
      title: `admission at ${o.rate}/s`,
      params: { rate: o.rate, seconds: o.seconds, runs: o.runs },
      rows: [
        beside('dry-run create p50 (vs ConfigMap)', runs, (_, __, r) => ({
          text: 'ratio ≤ 2',
          met: (r ?? Number.NaN) <= 2,
        })),
        row('dry-run create p99 (vs ConfigMap)', ' ms', q(runs, 0.99, 'op'), q(runs, 0.99, 'cm')),
        beside('dry-run create p50 without the webhooks (the CRD itself, vs ConfigMap)', bare),
        against('dry-run create p50: with the webhooks vs without (what the webhooks add)', bare),
        beside(
          'dry-run create p50 through a null webhook pair (same registrations, TLS and server, answering allowed at once; vs ConfigMap)',
          nulls,
        ),
        against(
          "dry-run create p50: the operator's webhooks vs the null pair (what its checks add beyond dispatch)",
          nulls,
          (_, __, r) => ({ text: 'ratio ≤ 1.2', met: (r ?? Number.NaN) <= 1.2 }),
        ),
        beside(
          "dry-run create p50 through a null webhook pair that returns the operator's patch (vs ConfigMap)",
          patched,
        ),
        against(
          "dry-run create p50: the operator's webhooks vs a null pair that returns the same patch (what the checks add beyond dispatch and the patch)",
          patched,
        ),
      ],
      notes,
      durationSeconds: (Date.now() - t0) / 1000,
    };
  } finally {
    await op.proc.stop(STOP_GRACE_MS);
    await world.stop();
  }
}
