// Lease leader election against the shared real API server: two electors on one Lease are sampled
// continuously and must never lead at once; a stopped leader is replaced after the lease runs out;
// a released lease is taken over at once (well before it would have run out).

import type { RestClient } from '@vworkspace/runtime';
import { KubeLeaseLock, LeaderElector } from '@vworkspace/runtime';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createNamespace, eventually, restClient } from './support.ts';

interface Lease {
  metadata: { resourceVersion: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

interface Running {
  elector: LeaderElector;
  stop(): Promise<void>;
}

function run(client: RestClient, ns: string, id: string, timing: object, releaseOnCancel = true): Running {
  const elector = new LeaderElector({
    lock: new KubeLeaseLock(client, ns, 'runtime-test'),
    identity: id,
    releaseOnCancel,
    ...timing,
  });
  const ac = new AbortController();
  const done = elector.run(ac.signal);
  return {
    elector,
    async stop() {
      ac.abort();
      await done;
    },
  };
}

/** Samples every 10 ms that at most one elector leads; returns a stop function and the evidence. */
function sampler(electors: () => LeaderElector[]) {
  let samples = 0;
  let violations = 0;
  const t = setInterval(() => {
    samples++;
    if (electors().filter((e) => e.isLeader()).length > 1) violations++;
  }, 10);
  return {
    stop: () => clearInterval(t),
    get samples() {
      return samples;
    },
    get violations() {
      return violations;
    },
  };
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('LeaderElector on a real Lease', () => {
  it('never two leaders; a crashed leader is replaced after the lease expires', async () => {
    const client = restClient(inject('kubeconfig'));
    const ns = await createNamespace(client);
    const timing = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
    // releaseOnCancel=false: stopping `a` looks like a crash, its lease must run out.
    const a = run(client, ns, 'replica-a', timing, false);
    const all: Running[] = [a];
    const s = sampler(() => all.map((r) => r.elector));
    cleanup.push(async () => s.stop());
    cleanup.push(async () => {
      for (const r of all) await r.stop();
    });

    await eventually('a leads', () => a.elector.isLeader());
    const b = run(client, ns, 'replica-b', timing);
    all.push(b);
    // Several lease durations: a keeps renewing, b keeps waiting.
    const until = Date.now() + 10_000;
    await eventually('10 s of a leading', () => Date.now() > until, 20_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.elector.getLeader()).toBe('replica-a');

    const lease = await client.request<Lease>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/runtime-test`,
    });
    expect(lease.spec).toMatchObject({
      holderIdentity: 'replica-a',
      leaseDurationSeconds: 4,
      leaseTransitions: 0,
    });
    expect(lease.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    await a.stop();
    expect(a.elector.isLeader()).toBe(false);
    await eventually('b takes over after the lease ran out', () => b.elector.isLeader(), 30_000);
    const after = await client.request<Lease>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/runtime-test`,
    });
    expect(after.spec).toMatchObject({ holderIdentity: 'replica-b', leaseTransitions: 1 });
    expect(s.samples).toBeGreaterThan(100);
    expect(s.violations).toBe(0);
  });

  it('a released lease is taken over at once, long before it would have expired', async () => {
    const client = restClient(inject('kubeconfig'));
    const ns = await createNamespace(client);
    // A 60 s lease: a takeover within 20 s can only come from the release.
    const timing = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 500 };
    const a = run(client, ns, 'replica-a', timing);
    const all: Running[] = [a];
    const s = sampler(() => all.map((r) => r.elector));
    cleanup.push(async () => s.stop());
    cleanup.push(async () => {
      for (const r of all) await r.stop();
    });
    await eventually('a leads', () => a.elector.isLeader());
    const b = run(client, ns, 'replica-b', timing);
    all.push(b);
    await eventually('b has seen a as leader', () => b.elector.getLeader() === 'replica-a');

    await a.stop();
    const released = await client.request<Lease>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/runtime-test`,
    });
    // Either still released, or b already took it.
    expect(['', 'replica-b']).toContain(released.spec.holderIdentity ?? '');
    // 20 s is a third of the lease: only the release explains a takeover this soon.
    await eventually('b leads', () => b.elector.isLeader(), 20_000);
    expect(s.violations).toBe(0);
  });
});
