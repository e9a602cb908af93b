// The operator's memory and event loop under a decompression bomb (issue 28, hole 4): one Helm release
// record of about 600 KiB that inflates to `--mib` MiB, and an ApplicationInstance naming its release.
// Not a test: it prints numbers.
//
//   node bench/release-bomb.ts [--root <checkout>] [--mib 450]
//
// On a control plane of its own (bin/etcd, bin/kube-apiserver) the operator of `--root` (default this
// checkout) starts and leads; RSS (VmRSS) is sampled for 10 s (median: "before"); the record and the
// instance are created; once the instance has a Ready condition (the operator read the record) the peak RSS
// of the process (VmHWM), the longest event-loop stall meanwhile (prom-client's
// nodejs_eventloop_lag_max_seconds, reset by the scrape before the bomb: the webhook shares that loop) and
// the Ready reason are read, and RSS is sampled for 10 s more ("after"). Run it for two checkouts to
// compare (e.g. --root /work/main and this one), one at a time, under the shared heavy lock.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '@vworkspace/runtime';
import { ROOT, startControlPlane } from '../hack/lib/controlplane.ts';
import { eventually } from '../hack/lib/eventually.ts';
import { tinyInstance } from '../hack/lib/helm.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { releaseBomb, releaseSecret } from '../test/support/release-bomb.ts';
import { exitOnStopSignals } from './lib/stop-signals.ts';

exitOnStopSignals();
const { values } = parseArgs({
  options: {
    root: { type: 'string', default: ROOT },
    mib: { type: 'string', default: '450' },
  },
});
const root = resolve(values.root);
const inflatedMiB = Number(values.mib);
const OPERATOR_NS = 'vworkspace-bench';
const NS = 'bench-bomb';

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function medianRss(pid: number, seconds: number): Promise<number> {
  const samples: number[] = [];
  for (let s = 0; s < seconds; s++) {
    samples.push(status(pid, 'VmRSS'));
    await sleep(1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
}

/** nodejs_eventloop_lag_max_seconds since the previous scrape (prom-client resets it on each). */
async function eventLoopLagMax(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

async function main(): Promise<void> {
  const cp = await startControlPlane();
  const logDir = mkdtempSync(join(tmpdir(), 'vws-bench-bomb-'));
  let proc: OperatorProcess | undefined;
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const client = new RestClient(kc);
    for (const ns of [OPERATOR_NS, NS]) {
      await client.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      });
    }
    proc = await OperatorProcess.start(
      {
        kubeconfigPath: cp.kubeconfigPath,
        namespace: OPERATOR_NS,
        logDir,
        launch: { command: process.execPath, args: [join(root, 'operator/src/main.ts')] },
      },
      'operator',
    );
    await proc.waitReady(120_000);
    await proc.waitLeader(60_000);
    const pid = proc.child.pid ?? 0;
    const before = await medianRss(pid, 10);

    const data = await releaseBomb('bomb', NS, inflatedMiB);
    await eventLoopLagMax(proc.metricsPort);
    const start = Date.now();
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/secrets`,
      body: releaseSecret('bomb', data),
    });
    await client.request({
      method: 'POST',
      path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${NS}/applicationinstances`,
      body: tinyInstance('bomb', NS, {}),
    });
    const reason = await eventually(
      'the instance to get a Ready condition',
      async () => {
        const inst = await client.request<{ status?: { conditions?: { type: string; reason?: string }[] } }>({
          method: 'GET',
          path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${NS}/applicationinstances/bomb`,
        });
        return inst.status?.conditions?.find((c) => c.type === 'Ready')?.reason;
      },
      300_000,
      200,
    );
    const seconds = (Date.now() - start) / 1000;
    const lag = await eventLoopLagMax(proc.metricsPort);
    const peak = status(pid, 'VmHWM');
    const after = await medianRss(pid, 10);
    console.log(
      JSON.stringify({
        root,
        storedKiB: Math.round(Buffer.from(data, 'base64').length / 1024),
        inflatedMiB,
        ready: reason,
        secondsToCondition: Math.round(seconds * 10) / 10,
        eventLoopLagMaxSeconds: Math.round(lag * 1000) / 1000,
        rssMiB: { before: Math.round(before), peak: Math.round(peak), after: Math.round(after) },
      }),
    );
  } finally {
    await proc?.stop();
    await cp.stop();
    rmSync(logDir, { recursive: true, force: true });
  }
}

await main();
