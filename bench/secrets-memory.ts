// Resident memory of the operator process with many large Helm release records in the cluster (issue 10,
// item 5; the figure it reported: docs/performance.md). Not a test: it prints numbers.
//
//   node bench/secrets-memory.ts [--root <checkout>] [--records 100] [--kib 530] [--named 10]
//
// On a control plane of its own (bin/etcd, bin/kube-apiserver): the operator of `--root` (default this
// checkout) runs once with no release records in the cluster and once with `--records` records of about
// `--kib` KiB each (Helm's encoding: base64 of base64 of gzipped JSON, incompressible content), spread
// over ten namespaces; `--named` of them are named by ApplicationInstances (whose Ready needs their
// record). RSS (VmRSS) is sampled every second for 20 s once every named instance is Ready, and the
// median reported. Run it for two checkouts to compare (e.g. --root /work/main and this one).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '@vworkspace/runtime';
import { ROOT, startControlPlane } from '../hack/lib/controlplane.ts';
import { eventually } from '../hack/lib/eventually.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { exitOnStopSignals } from './lib/stop-signals.ts';

exitOnStopSignals();
const { values } = parseArgs({
  options: {
    root: { type: 'string', default: ROOT },
    records: { type: 'string', default: '100' },
    kib: { type: 'string', default: '530' },
    named: { type: 'string', default: '10' },
  },
});
const root = resolve(values.root);
const records = Number(values.records);
const kib = Number(values.kib);
const named = Number(values.named);
const NAMESPACES = 10;
const OPERATOR_NS = 'vworkspace-bench';

/** Helm's data.release for a record whose stored value is about `bytes` long. */
function helmPayload(release: string, namespace: string, bytes: number): string {
  const encode = (fill: number) => {
    const json = JSON.stringify({
      name: release,
      namespace,
      version: 1,
      info: { status: 'deployed' },
      chart: { metadata: { name: 'bench', version: '1.0.0', appVersion: '1.0' } },
      // Rendered values and manifests; random, so gzip cannot shrink them away.
      config: { blob: randomBytes(fill).toString('base64') },
    });
    const helm = gzipSync(Buffer.from(json)).toString('base64');
    return Buffer.from(helm).toString('base64');
  };
  let fill = Math.floor(bytes / 2);
  for (let i = 0; i < 3; i++) fill = Math.max(1, Math.floor((fill * bytes) / encode(fill).length));
  return encode(fill);
}

function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function measure(
  kubeconfigPath: string,
  client: RestClient,
  label: string,
  withRecords: boolean,
): Promise<number> {
  const proc = await OperatorProcess.start(
    {
      kubeconfigPath,
      namespace: OPERATOR_NS,
      logDir: mkdtempSync(join(tmpdir(), 'vws-bench-')),
      launch: { command: process.execPath, args: [join(root, 'operator/src/main.ts')] },
    },
    `operator-${label}`,
  );
  try {
    await proc.waitReady(120_000);
    await proc.waitLeader(60_000);
    for (let i = 0; i < named; i++) {
      const ns = `bench-${i % NAMESPACES}`;
      await eventually(
        `instance app${i} Ready`,
        async () => {
          const inst = await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>(
            {
              method: 'GET',
              path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${ns}/applicationinstances/app${i}`,
            },
          );
          const ready = inst.status?.conditions?.find((c) => c.type === 'Ready');
          return withRecords ? ready?.status === 'True' : ready !== undefined;
        },
        120_000,
        500,
      );
    }
    const samples: number[] = [];
    for (let s = 0; s < 20; s++) {
      samples.push(rssMiB(proc.child.pid ?? 0));
      await sleep(1000);
    }
    samples.sort((a, b) => a - b);
    return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
  } finally {
    await proc.stop();
  }
}

async function main(): Promise<void> {
  const cp = await startControlPlane();
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const client = new RestClient(kc);
    for (const ns of [OPERATOR_NS, ...Array.from({ length: NAMESPACES }, (_, i) => `bench-${i}`)]) {
      await client.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      });
    }
    for (let i = 0; i < named; i++) {
      await client.request({
        method: 'POST',
        path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/bench-${i % NAMESPACES}/applicationinstances`,
        body: {
          apiVersion: 'apps.vworkspace.io/v1alpha1',
          kind: 'ApplicationInstance',
          metadata: { name: `app${i}` },
          spec: { appRef: { catalogId: 'bench' }, release: { name: `app${i}` } },
        },
      });
    }
    const empty = await measure(cp.kubeconfigPath, client, 'no-records', false);

    let stored = 0;
    for (let i = 0; i < records; i++) {
      const ns = `bench-${i % NAMESPACES}`;
      const release = helmPayload(`app${i}`, ns, kib * 1024);
      stored += release.length;
      await client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/secrets`,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'helm.sh/release.v1',
          metadata: {
            name: `sh.helm.release.v1.app${i}.v1`,
            labels: { owner: 'helm', name: `app${i}`, version: '1', status: 'deployed' },
          },
          data: { release },
        },
      });
    }
    const full = await measure(cp.kubeconfigPath, client, 'records', true);
    console.log(
      JSON.stringify({
        root,
        records,
        storedMiB: Math.round((stored / 1024 / 1024) * 10) / 10,
        namedByInstances: named,
        rssMiB: { noRecords: Math.round(empty), withRecords: Math.round(full) },
      }),
    );
  } finally {
    await cp.stop();
  }
}

await main();
