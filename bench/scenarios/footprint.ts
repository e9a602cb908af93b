// Footprint and startup: I ApplicationInstances and O finished Operations spread over K namespaces
// (K = 1: all in one namespace). The operator converges once (not measured; no client-side limit, so
// the first status write of every instance does not take minutes), then is restarted `runs` times with
// its default settings: time to /readyz, to its first reconcile and to every cached object reconciled
// once, whether it kept the Lease, then RSS and CPU while idle, beside kube-controller-manager's over
// the same window (it caches the same objects' metadata for its garbage collector and quota).
import { setTimeout as sleep } from 'node:timers/promises';
import { instance, namespace, runCommand } from '../lib/objects.ts';
import { row, type ScenarioResult } from '../lib/result.ts';

import {
  clusterPids,
  collection,
  controllerManagerPid,
  createAll,
  idleUsage,
  metricSum,
  type OperatorVariant,
  pool,
  residentSplit,
  STOP_GRACE_MS,
  sampleProcess,
  scrape,
  startOperator,
  startWorld,
  type World,
  waitQuiet,
} from '../lib/world.ts';

export interface FootprintOptions {
  instances: number;
  operations: number;
  namespaces: number;
  runs: number;
  logDir: string;
  /** How long idle CPU is measured (default 60 s). */
  idleMs?: number;
  operator?: OperatorVariant;
  /** A CPU profile of the convergence (not of the measured starts) is written here. */
  profileDir?: string;
}

/**
 * The targets a size is held to: issue 26's scale × 10 from 20k + 20k (also all in one namespace),
 * issue 11's from 10k + 10k; smaller sizes are measured against none.
 */
export function footprintTarget(instances: number): { rssMiB: number; readySeconds: number } | undefined {
  if (instances >= 20_000) return { rssMiB: 1024, readySeconds: 60 };
  if (instances >= 10_000) return { rssMiB: 250, readySeconds: 30 };
  return undefined;
}

const FINISHED = new Date(Date.UTC(2025, 0, 1)).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** kube-apiserver's and etcd's RSS and CPU so far: where the bound is when the operator is not. */
function clusterUsage(world: World): string {
  const pids = clusterPids(world);
  return ['kube-apiserver', 'etcd']
    .map((name) => {
      const pid = pids.get(name);
      const s = pid === undefined ? undefined : sampleProcess(pid);
      return `${name} ${s ? `${s.rssMiB.toFixed(0)} MiB RSS, ${s.cpuSeconds.toFixed(0)} CPU s` : 'not found'}`;
    })
    .join('; ');
}

async function populate(world: World, o: FootprintOptions): Promise<void> {
  const nss = Array.from({ length: o.namespaces }, (_, i) => `fp${i}`);
  await createAll(
    world.api,
    nss.map((n) => namespace(n, 'footprint')),
  );
  const nsOf = (i: number) => nss[i % nss.length]!;
  await createAll(
    world.api,
    Array.from({ length: o.instances }, (_, i) => instance(`app${i}`, nsOf(i))),
  );
  const ops = Array.from({ length: o.operations }, (_, i) => runCommand(`done${i}`, nsOf(i), `app${i}`));
  await createAll(world.api, ops);
  // Finished before the operator ever ran: it only has to cache and look at them.
  await pool(ops, 32, (op) => {
    const meta = op.metadata as { name: string; namespace: string };
    return world.api.request({
      method: 'PATCH',
      path: `${collection('ops.vworkspace.io/v1alpha1', 'operations', meta.namespace)}/${meta.name}/status`,
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          phase: 'Succeeded',
          startedAt: FINISHED,
          finishedAt: FINISHED,
          attempts: 1,
          conditions: [
            {
              type: 'Succeeded',
              status: 'True',
              reason: 'Completed',
              message: 'bench',
              lastTransitionTime: FINISHED,
            },
          ],
        },
      },
    });
  });
}

export async function footprint(o: FootprintOptions): Promise<ScenarioResult> {
  const t0 = Date.now();
  const label = `${o.instances}+${o.operations}${o.namespaces === 1 && o.instances > 0 ? ', one namespace' : ''}`;
  const world = await startWorld(`vws-bench-fp-${o.instances}-${o.namespaces}`, o.logDir);
  const notes: string[] = [];
  const ready: number[] = [];
  const first: number[] = [];
  const all: number[] = [];
  const rss: number[] = [];
  const cpu: number[] = [];
  const peerRss: number[] = [];
  const peerCpu: number[] = [];
  const heap: number[] = [];
  const heapTotal: number[] = [];
  let leaseLost = 0;
  try {
    const setup = Date.now();
    await populate(world, o);
    notes.push(`created in ${((Date.now() - setup) / 1000).toFixed(0)} s`);
    notes.push(`after creating: ${clusterUsage(world)}`);
    const converging = Date.now();
    const converge = await startOperator(world, `operator-fp-${label}-converge`, {
      ...o.operator,
      env: { ...o.operator?.env, KUBE_API_QPS: '0' },
      nodeArgs: [
        ...(o.operator?.nodeArgs ?? []),
        ...(o.profileDir ? ['--cpu-prof', '--cpu-prof-dir', o.profileDir] : []),
      ],
    });
    // Its peak resident memory while it writes every instance's first status (a start after that is
    // what the rows measure).
    let peakMiB = 0;
    const sampler = setInterval(() => {
      const s = converge.proc.child.pid ? sampleProcess(converge.proc.child.pid) : undefined;
      if (s && s.rssMiB > peakMiB) peakMiB = s.rssMiB;
    }, 1000);
    try {
      await converge.proc.waitReady(600_000);
      const unanswered = await waitQuiet(converge.proc, 5_000, 30 * 60_000);
      notes.push(
        `first convergence (no client-side limit) in ${((Date.now() - converging) / 1000).toFixed(0)} s, peak RSS ${peakMiB.toFixed(0)} MiB, ${unanswered} metrics scrapes unanswered within 10 s`,
      );
    } finally {
      clearInterval(sampler);
      await converge.proc.stop(STOP_GRACE_MS);
    }
    const kcm = controllerManagerPid(world);
    for (let run = 0; run < o.runs; run++) {
      const op = await startOperator(world, `operator-fp-${label}-${run}`, {
        ...o.operator,
      });
      try {
        // Poll readiness and the reconcile counters together, so each moment is seen within ~100 ms.
        let readyAt: number | undefined;
        let firstAt: number | undefined;
        let allAt: number | undefined;
        const deadline = Date.now() + 10 * 60_000;
        while (allAt === undefined && Date.now() < deadline && !op.proc.crashed) {
          // Its ports are chosen by the process (port 0) and known once it logs them.
          if (!op.proc.portsBound) {
            await sleep(100);
            continue;
          }
          const r = await fetch(`http://127.0.0.1:${op.proc.probePort}/readyz`, {
            signal: AbortSignal.timeout(2000),
          }).catch(() => undefined);
          if (r?.ok) readyAt ??= Date.now();
          const m = await scrape(op.proc).catch(() => undefined);
          if (m) {
            const total = metricSum(m, 'controller_runtime_reconcile_total');
            if (total > 0) firstAt ??= Date.now();
            const opDone = metricSum(m, 'controller_runtime_reconcile_total', 'controller="operation"');
            const instDone = metricSum(
              m,
              'controller_runtime_reconcile_total',
              'controller="applicationinstance"',
            );
            if (readyAt !== undefined && opDone >= o.operations && instDone >= o.instances)
              allAt = Date.now();
          }
          await sleep(100);
        }
        ready.push(((readyAt ?? Number.NaN) - op.startedAt) / 1000);
        first.push(((firstAt ?? Number.NaN) - op.startedAt) / 1000);
        all.push(((allAt ?? Number.NaN) - op.startedAt) / 1000);
        await waitQuiet(op.proc, 5_000, 10 * 60_000).catch(() => notes.push(`run ${run}: never quiet`));
        const pid = op.proc.child.pid;
        const idleMs = o.idleMs ?? 60_000;
        const [mine, peer] = await Promise.all([
          pid ? idleUsage(pid, idleMs) : Promise.resolve({ cpuCores: Number.NaN, rssMiB: Number.NaN }),
          kcm ? idleUsage(kcm, idleMs) : Promise.resolve({ cpuCores: Number.NaN, rssMiB: Number.NaN }),
        ]);
        const m = await scrape(op.proc).catch(() => undefined);
        const mib = (name: string) => (m?.get(name) ?? Number.NaN) / 2 ** 20;
        const used = mib('nodejs_heap_size_used_bytes');
        const committed = mib('nodejs_heap_size_total_bytes');
        heap.push(used);
        heapTotal.push(committed);
        rss.push(mine.rssMiB);
        // Where the resident memory is: what the rows cannot say (the JS heap is only part of it).
        const split = pid ? residentSplit(pid) : undefined;
        notes.push(
          `run ${run} idle: RSS ${mine.rssMiB.toFixed(0)} MiB` +
            (split
              ? ` (anonymous ${split.anonMiB.toFixed(0)}, file-backed ${split.fileMiB.toFixed(0)})`
              : '') +
            `; JS heap ${used.toFixed(0)} MiB used of ${committed.toFixed(0)} committed; ` +
            `external ${mib('nodejs_external_memory_bytes').toFixed(0)} MiB; ` +
            `outside the JS heap ${(mine.rssMiB - committed).toFixed(0)} MiB (code, malloc, stacks)`,
        );
        cpu.push(mine.cpuCores * 1000);
        peerRss.push(peer.rssMiB);
        peerCpu.push(peer.cpuCores * 1000);
        if (op.proc.crashed) leaseLost++;
      } finally {
        await op.proc.stop(STOP_GRACE_MS);
      }
    }
    notes.push(`after the last start: ${clusterUsage(world)}`);
    if (!kcm) notes.push('kube-controller-manager process not found: no peer readings');
    notes.push(`operator exited on its own (lease lost or crash) in ${leaseLost} of ${o.runs} starts`);
    const target = footprintTarget(o.instances);
    return {
      scenario: `footprint-${o.instances}-${o.operations}-${o.namespaces}`,
      title: `${label}`,
      params: { ...o, logDir: undefined },
      rows: [
        row('RSS idle', ' MiB', rss, peerRss, (op) => ({
          text: target ? `≤ ${target.rssMiB} MiB` : 'none at this size',
          met: target ? op.median <= target.rssMiB : true,
        })),
        row('JS heap used, idle', ' MiB', heap),
        row('JS heap committed, idle', ' MiB', heapTotal),
        row('CPU idle', ' millicores', cpu, peerCpu, (_, __, r) => ({
          text: 'ratio ≤ 1',
          met: (r ?? Number.NaN) <= 1,
        })),
        row('start → /readyz', ' s', ready, undefined, (op) => ({
          text: target ? `< ${target.readySeconds} s, no lease loss` : 'none at this size',
          met: target ? op.max < target.readySeconds && leaseLost === 0 : true,
        })),
        // With nothing cached there is no first reconcile to wait for (the row read ∞).
        ...(o.instances + o.operations > 0 ? [row('start → first reconcile', ' s', first)] : []),
        row('start → every object reconciled once', ' s', all),
      ],
      notes,
      durationSeconds: (Date.now() - t0) / 1000,
    };
  } finally {
    await world.stop();
  }
}
