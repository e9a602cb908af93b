// `make demo`: the main job, end to end, on an embedded local cluster.
//
// A kwok cluster (real etcd, kube-apiserver, controller-manager and scheduler; kwok plays the
// kubelet, so Jobs really run to completion) with the project's and the upstream CRDs; the
// operator as its own process, exactly as in a pod (settings from the environment, webhook
// certificate in OLM's layout, webhooks registered from the bundle's CSV by URL); a sample
// ApplicationInstance backed by a real Helm release of a tiny chart; then a RunCommand (a real Job)
// and a velero Backup (Velero does not run here: a documented simulator moves the real velero.io
// Backup's status the way Velero does, and the demo says so). It ends by stopping the operator
// gracefully and deleting the cluster.
//
// VWS_NODE=real (hack/demo.sh's default as root; `make demo NODE=kwok` for kwok): the same on a real
// node (hack/lib/real-node.ts): the RunCommand's container really runs, and its output is shown; the
// Backup is then no simulation but hack/demo-database.ts's story: a real PostgreSQL, a real velero
// Backup, the namespace deleted, the Restore, the same rows on screen.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { operatorNodeArgs } from '@vworkspace/operator';
import { type KubeStatus, RestClient, statusCode } from '@vworkspace/runtime';
import { databaseStory } from './demo-database.ts';
import { makeServingCert } from './lib/certs.ts';
import { defaultCrdFiles, ROOT } from './lib/controlplane.ts';
import { EngineSimulator } from './lib/engine-simulator.ts';
import { eventually } from './lib/eventually.ts';
import { helm, TINY_CHART, tinyInstance } from './lib/helm.ts';
import { startKwokCluster } from './lib/kwok-cluster.ts';
import { loggedField } from './lib/operator-log.ts';
import { type RealNode, startRealNode } from './lib/real-node.ts';
import { applyWebhookConfigurations, csvWebhookDefinitions, webhookConfigurations } from './lib/webhooks.ts';

const started = Date.now();
const say = (msg: string) =>
  process.stdout.write(`[demo ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Obj {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    conditions?: Condition[];
    outputs?: Record<string, string>;
    childRef?: { kind: string; name: string; namespace?: string };
    release?: Record<string, unknown>;
  };
}

/** Generous limits: a cold first run shares two cores with the cluster it just started. */
const WAIT = 120_000;
const OPS = '/apis/ops.vworkspace.io/v1alpha1/namespaces/shop/operations';
const AIS = '/apis/apps.vworkspace.io/v1alpha1/namespaces/shop/applicationinstances';

const dir = join(ROOT, '.cache/demo');
await rm(dir, { recursive: true, force: true });
await mkdir(dir, { recursive: true });
const real = process.env.VWS_NODE === 'real';
let cluster: RealNode | { kubeconfigPath: string; stop(): Promise<void> } | undefined;
let operator: ChildProcess | undefined;
let simulator: EngineSimulator | undefined;
const opLog: string[] = [];
try {
  if (real) {
    say(
      'starting a real node (etcd, kube-apiserver, controller-manager, scheduler, containerd, runc, kubelet, kube-proxy, CoreDNS: built from source) ...',
    );
    cluster = await startRealNode({ log: (l) => say(`  ${l}`) });
  } else {
    say(
      'starting a kwok cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok: binaries built from source) ...',
    );
    cluster = await startKwokCluster({ name: 'vworkspace-demo', crdFiles: defaultCrdFiles() });
  }
  say(`cluster ready with the project's and the upstream CRDs; KUBECONFIG=${cluster.kubeconfigPath}`);
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const api = new RestClient(kc);
  for (const name of ['vworkspace-system', 'shop', 'velero']) {
    await api.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } });
  }

  const certs = makeServingCert(join(dir, 'serving-certs'));
  say('starting the operator (node operator/src/main.ts, settings from the environment, as in its pod) ...');
  operator = spawn(process.execPath, operatorNodeArgs(join(ROOT, 'operator/src/main.ts')), {
    env: {
      ...process.env,
      KUBECONFIG: cluster.kubeconfigPath,
      OPERATOR_NAMESPACE: 'vworkspace-system',
      // Port 0: the operator binds what the kernel gives and logs it (read back below); a free port
      // picked here could be taken before the operator binds it.
      METRICS_PORT: '0',
      PROBE_PORT: '0',
      WEBHOOK_PORT: '0',
      WEBHOOK_CERT_DIR: certs.dir,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Whole lines only (a chunk may end inside one): the ports are read from the JSON lines.
  const keep = () => {
    let partial = '';
    return (d: Buffer) => {
      const lines = (partial + String(d)).split('\n');
      partial = lines.pop() ?? '';
      opLog.push(...lines.filter(Boolean));
    };
  };
  operator.stdout?.on('data', keep());
  operator.stderr?.on('data', keep());
  const exited = new Promise<number | null>((ok) => operator?.on('exit', (code) => ok(code)));
  await eventually(
    'operator readiness (/readyz)',
    async () => {
      const probes = loggedField<{ probes: number }>(opLog.join('\n'), 'manager starting', 'ports')?.probes;
      if (probes === undefined) return undefined;
      return (await fetch(`http://127.0.0.1:${probes}/readyz`).catch(() => undefined))?.ok ? true : undefined;
    },
    WAIT,
  );
  const lease = await eventually(
    'leader Lease',
    async () => {
      const l = await api.request<{ spec?: { holderIdentity?: string } }>({
        method: 'GET',
        path: '/apis/coordination.k8s.io/v1/namespaces/vworkspace-system/leases/vworkspace-operator',
      });
      return l.spec?.holderIdentity;
    },
    WAIT,
  );
  say(`operator ready (/readyz 200) and leading (Lease held by ${lease})`);

  // Logged before /readyz answered: readiness includes the webhook serving.
  const webhookPort = loggedField<number>(opLog.join('\n'), 'admission webhook serving', 'port');
  if (webhookPort === undefined)
    throw new Error('the operator is ready but logged no "admission webhook serving"');
  const defs = csvWebhookDefinitions();
  await applyWebhookConfigurations(
    api,
    webhookConfigurations(defs, `https://127.0.0.1:${webhookPort}`, certs.caPem),
  );
  say(`admission webhooks registered from the bundle's CSV (${defs.map((d) => d.generateName).join(', ')})`);

  say('installing the tiny chart with the real helm CLI (release "web" in namespace shop) ...');
  await helm(cluster.kubeconfigPath, ['install', 'web', TINY_CHART, '-n', 'shop']);
  await api.request({
    method: 'POST',
    path: '/api/v1/namespaces/shop/serviceaccounts',
    body: { metadata: { name: 'vworkspace-runner' } },
  });
  await api.request({
    method: 'POST',
    path: AIS,
    body: tinyInstance('web', 'shop'),
  });
  const ready = await eventually(
    'ApplicationInstance Ready',
    async () => {
      const ai = await api.request<Obj>({ method: 'GET', path: `${AIS}/web` });
      const c = ai.status?.conditions?.find((x) => x.type === 'Ready');
      return c?.status === 'True' ? c : undefined;
    },
    WAIT,
  );
  say(`ApplicationInstance shop/web: Ready=${ready.status} ${ready.reason} — ${ready.message}`);

  say('asking for a Backup with a bad parameter (the webhook answers) ...');
  const bad = await api
    .request({
      method: 'POST',
      path: OPS,
      body: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'Operation',
        metadata: { name: 'bad-backup' },
        spec: {
          type: 'Backup',
          engine: 'velero',
          targetRef: { name: 'web' },
          parameters: { ttl: 'forever' },
        },
      },
    })
    .then(
      () => 'admitted (unexpected)',
      (err: unknown) => {
        const body = (err as { body?: KubeStatus | string }).body;
        const status = typeof body === 'string' ? (JSON.parse(body) as KubeStatus) : body;
        return `HTTP ${statusCode(err)}: ${status?.message ?? String(err)}`;
      },
    );
  say(`  denied: ${bad}`);

  if (!real) {
    say(
      'Velero does not run on kwok: a simulator moves the real velero.io Backup through the phases Velero uses',
    );
    simulator = new EngineSimulator(api, { intervalMs: 500 });
    simulator.start();
  }

  const operations = [
    {
      name: 'hello',
      spec: {
        type: 'RunCommand',
        engine: 'job',
        targetRef: { name: 'web' },
        parameters: {
          image: 'docker.io/library/busybox:1.37.0',
          command: ['sh', '-c', 'echo hello from shop/web; uname -sr; id'],
        },
      },
    },
    // On a real node the Backup is the database story's, below: Velero really runs there.
    ...(real
      ? []
      : [
          {
            name: 'nightly',
            spec: {
              type: 'Backup',
              engine: 'velero',
              targetRef: { name: 'web' },
              parameters: { ttl: '72h' },
            },
          },
        ]),
  ];
  for (const o of operations) {
    await api.request({
      method: 'POST',
      path: OPS,
      body: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'Operation',
        metadata: { name: o.name },
        spec: o.spec,
      },
    });
    say(`submitted Operation shop/${o.name}: ${o.spec.type} via ${o.spec.engine}`);
  }

  const seen = new Map<string, string>();
  const finished = await eventually(
    'the Operations to finish',
    async () => {
      const done: Obj[] = [];
      for (const o of operations) {
        const op = await api.request<Obj>({ method: 'GET', path: `${OPS}/${o.name}` });
        const reason =
          op.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason ??
          op.status?.conditions?.find((c) => c.type === 'Blocked' && c.status === 'True')?.reason ??
          op.status?.conditions?.find((c) => c.type === 'Accepted')?.reason ??
          '';
        const line = `${op.status?.phase ?? 'Pending'}${reason ? ` (${reason})` : ''}`;
        if (seen.get(o.name) !== line) {
          seen.set(o.name, line);
          const child = op.status?.childRef
            ? ` child ${op.status.childRef.kind}/${op.status.childRef.name}`
            : '';
          say(`  ${o.name.padEnd(8)} ${line}${child}`);
        }
        if (['Succeeded', 'Failed', 'Cancelled'].includes(op.status?.phase ?? '')) done.push(op);
      }
      return done.length === operations.length ? done : undefined;
    },
    180_000,
  );
  for (const op of finished) {
    say(
      `Operation shop/${op.metadata.name}: ${op.status?.phase}; outputs ${JSON.stringify(op.status?.outputs ?? {})}`,
    );
    // On a real node the message carries the container's exit code and the last lines of its output.
    const done = op.status?.conditions?.find((c) => c.type === 'Succeeded');
    if (op.spec?.type === 'RunCommand') say(`  ${done?.reason}: ${done?.message}`);
  }
  if (finished.some((op) => op.status?.phase !== 'Succeeded'))
    throw new Error('an Operation did not succeed');
  if (real && cluster && 'registryPrefix' in cluster)
    await databaseStory({
      node: cluster,
      kc,
      api,
      dir,
      say,
      createInstance: async (namespace, release, capabilities) => {
        await api.request({
          method: 'POST',
          path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${namespace}/applicationinstances`,
          body: {
            ...tinyInstance(release, namespace, capabilities),
            spec: {
              appRef: {
                catalogId: 'postgres',
                chart: {
                  sourceType: 'helm',
                  url: 'https://charts.example.com/postgres',
                  name: 'postgres',
                  version: '1.0.0',
                },
              },
              release: { name: release },
            },
          },
        });
      },
    });

  say('stopping the operator with SIGTERM (graceful: drains, releases the Lease) ...');
  operator.kill('SIGTERM');
  const code = await exited;
  const after = await api.request<{ spec?: { holderIdentity?: string } }>({
    method: 'GET',
    path: '/apis/coordination.k8s.io/v1/namespaces/vworkspace-system/leases/vworkspace-operator',
  });
  say(
    `operator exited with code ${code}; Lease holder now ${JSON.stringify(after.spec?.holderIdentity ?? '')}`,
  );
  if (code !== 0) throw new Error(`operator exited with ${code}`);
  say('demo finished');
} catch (err) {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  if (opLog.length) process.stderr.write(`last operator log lines:\n${opLog.slice(-25).join('\n')}\n`);
  process.exitCode = 1;
} finally {
  await simulator?.stop();
  if (operator && operator.exitCode === null) operator.kill('SIGKILL');
  say('deleting the cluster ...');
  await cluster?.stop();
}
