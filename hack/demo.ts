// `make demo`: the main job on an embedded local control plane.
//
// Starts a real etcd + kube-apiserver with the project's and the upstream CRDs, runs the
// operator as its own process (as it runs in a pod: settings from the environment, a webhook
// certificate in the OLM layout), installs a tiny chart with the real helm CLI, creates an
// ApplicationInstance for it and shows what the operator reports, then shuts everything down
// gracefully and checks that the operator released its leader Lease.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { helm, TINY_CHART } from '../test/support/helm.ts';
import { makeServingCert } from './lib/certs.ts';
import { type ControlPlane, freePort, ROOT, startControlPlane } from './lib/controlplane.ts';

const started = Date.now();
const say = (msg: string) =>
  process.stdout.write(`[demo ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

const dir = join(ROOT, '.cache/demo');
await rm(dir, { recursive: true, force: true });
await mkdir(dir, { recursive: true });
let cp: ControlPlane | undefined;
let operator: ChildProcess | undefined;
try {
  say('starting etcd + kube-apiserver (real binaries from bin/) and installing CRDs ...');
  cp = await startControlPlane({ dir: join(dir, 'cluster') });
  say(`control plane ready at ${cp.server}; KUBECONFIG=${cp.kubeconfigPath}`);
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);

  await core.createNamespace({ body: { metadata: { name: 'vworkspace-system' } } });
  await core.createNamespace({ body: { metadata: { name: 'shop' } } });
  const certs = makeServingCert(join(dir, 'serving-certs'));
  const [metricsPort, probePort, webhookPort] = [await freePort(), await freePort(), await freePort()];

  say('starting the operator (node operator/src/main.ts) ...');
  operator = spawn(process.execPath, [join(ROOT, 'operator/src/main.ts')], {
    env: {
      ...process.env,
      KUBECONFIG: cp.kubeconfigPath,
      OPERATOR_NAMESPACE: 'vworkspace-system',
      METRICS_PORT: String(metricsPort),
      PROBE_PORT: String(probePort),
      WEBHOOK_PORT: String(webhookPort),
      WEBHOOK_CERT_DIR: certs.dir,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const opLog: string[] = [];
  const keep = (d: Buffer) => opLog.push(...String(d).split('\n').filter(Boolean));
  operator.stdout?.on('data', keep);
  operator.stderr?.on('data', keep);
  const exited = new Promise<number | null>((ok) => operator?.on('exit', (code) => ok(code)));

  await until('operator readiness (/readyz)', async () =>
    (await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined))?.ok ? true : undefined,
  );
  say(`operator ready: http://127.0.0.1:${probePort}/readyz = 200`);
  const coord = kc.makeApiClient(CoordinationV1Api);
  const lease = await until('leader Lease', async () => {
    const l = await coord.readNamespacedLease({
      name: 'vworkspace-operator',
      namespace: 'vworkspace-system',
    });
    return l.spec?.holderIdentity ? l : undefined;
  });
  say(`leader elected: Lease vworkspace-system/vworkspace-operator held by ${lease.spec?.holderIdentity}`);
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const master = metrics.split('\n').find((l) => l.startsWith('leader_election_master_status'));
  say(`metrics: ${master ?? '(leader_election_master_status missing)'}`);

  say('installing a tiny chart with the real helm CLI (release "web" in namespace shop) ...');
  await helm(cp.kubeconfigPath, ['install', 'web', TINY_CHART, '-n', 'shop']);
  await custom.createNamespacedCustomObject({
    group: 'apps.vworkspace.io',
    version: 'v1alpha1',
    namespace: 'shop',
    plural: 'applicationinstances',
    body: {
      apiVersion: 'apps.vworkspace.io/v1alpha1',
      kind: 'ApplicationInstance',
      metadata: { name: 'web', annotations: { 'ops.vworkspace.io/backup': 'velero' } },
      spec: {
        appRef: {
          catalogId: 'tiny',
          chart: {
            sourceType: 'helm',
            url: 'https://charts.example.com/stable',
            name: 'tiny',
            version: '1.0.0',
          },
        },
        release: { name: 'web', namespace: 'shop' },
      },
    },
  });
  say('ApplicationInstance shop/web created; waiting for the operator to read the Helm release record ...');
  interface Ai {
    status?: {
      conditions?: { type: string; status: string; reason: string; message: string }[];
      release?: { revision: number; status: string; chartVersion: string; appVersion: string };
    };
  }
  const readAi = async () =>
    (await custom.getNamespacedCustomObject({
      group: 'apps.vworkspace.io',
      version: 'v1alpha1',
      namespace: 'shop',
      plural: 'applicationinstances',
      name: 'web',
    })) as Ai;
  const ready = await until('ApplicationInstance Ready', async () => {
    const ai = await readAi();
    const c = ai.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.status === 'True' ? { c, release: ai.status?.release } : undefined;
  });
  say(`shop/web Ready=${ready.c.status} reason=${ready.c.reason}: ${ready.c.message}`);
  say(`shop/web status.release: ${JSON.stringify(ready.release)}`);

  say('helm upgrade with a broken manifest (the release fails) ...');
  await helm(cp.kubeconfigPath, ['upgrade', 'web', TINY_CHART, '-n', 'shop', '--set', 'broken=true']).catch(
    () => undefined,
  );
  const failed = await until('ApplicationInstance ReleaseFailed', async () => {
    const c = (await readAi()).status?.conditions?.find((x) => x.type === 'Ready');
    return c?.reason === 'ReleaseFailed' ? c : undefined;
  });
  say(`shop/web Ready=${failed.status} reason=${failed.reason}: ${failed.message}`);

  say('stopping the operator with SIGTERM (graceful shutdown releases the Lease) ...');
  operator.kill('SIGTERM');
  const code = await exited;
  const after = await coord.readNamespacedLease({
    name: 'vworkspace-operator',
    namespace: 'vworkspace-system',
  });
  say(
    `operator exited with code ${code}; Lease holder now ${JSON.stringify(after.spec?.holderIdentity ?? '')}`,
  );
  if (code !== 0)
    throw new Error(`operator exited with ${code}; last log lines:\n${opLog.slice(-20).join('\n')}`);
  say('demo finished');
} catch (err) {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
} finally {
  if (operator && operator.exitCode === null) operator.kill('SIGKILL');
  await cp?.stop();
}
