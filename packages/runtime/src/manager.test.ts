import { EventEmitter } from 'node:events';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { Controller } from './controller.ts';
import { Informer } from './informer.ts';
import { Manager, type Runnable } from './manager.ts';
import { LeaseStore, MemoryLeaseLock, MemoryResource } from './testing.ts';

const thing = (name: string): KubernetesObject => ({
  apiVersion: 'v1',
  kind: 'Thing',
  metadata: { name, namespace: 'ns' },
});

async function get(port: number, path: string): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}${path}`)).status;
}

/** One replica: an informer, a controller that records what it reconciles, a webhook runnable. */
function replica(
  id: string,
  server: MemoryResource<KubernetesObject>,
  clock: FakeClock,
  le?: { store: LeaseStore },
) {
  const informer = new Informer<KubernetesObject>({
    name: 'things',
    listerWatcher: server,
    clock,
    backoff: { jitter: 0 },
  });
  const reconciled: string[] = [];
  const controller = new Controller({
    name: 'thing',
    clock,
    reconcile: async (ctx) => {
      reconciled.push(ctx.key);
      return undefined;
    },
  });
  controller.watch(informer);
  const lock = le ? new MemoryLeaseLock(le.store, clock) : undefined;
  const mgr = new Manager({
    clock,
    metricsPort: 0,
    probePort: 0,
    bindHost: '127.0.0.1',
    leaderElection: lock
      ? {
          namespace: 'ns',
          identity: id,
          lock,
          leaseDurationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: 2_000,
        }
      : false,
  });
  const webhook = { running: false };
  const runnable: Runnable = {
    name: 'webhook',
    needLeaderElection: false,
    start: (signal) =>
      new Promise<void>((resolve) => {
        webhook.running = true;
        signal.addEventListener('abort', () => {
          webhook.running = false;
          resolve();
        });
      }),
  };
  mgr.addInformer(informer);
  mgr.addController(controller);
  mgr.add(runnable);
  return { mgr, informer, controller, reconciled, webhook, lock };
}

describe('Manager', () => {
  it('serves probes and metrics, is ready once informers sync, runs controllers, stops in order', async () => {
    const clock = new FakeClock();
    const server = new MemoryResource<KubernetesObject>();
    server.put(thing('a'));
    server.listFailures.push(new Error('apiserver not up yet'));
    const r = replica('solo', server, clock);
    let finished = false;
    const done = r.mgr.start().then(() => {
      finished = true;
    });
    await flushMicrotasks();
    const { probes, metrics } = r.mgr.ports;
    expect(await get(probes!, '/healthz')).toBe(200);
    expect(await get(probes!, '/readyz')).toBe(500);
    expect(r.webhook.running).toBe(true);
    await clock.advance(1_000);
    expect(await get(probes!, '/readyz')).toBe(200);
    await flushMicrotasks();
    expect(r.reconciled).toEqual(['ns/a']);
    expect(await get(metrics!, '/metrics')).toBe(200);
    await r.mgr.stop();
    await done;
    expect(finished).toBe(true);
    expect(r.webhook.running).toBe(false);
    await expect(fetch(`http://127.0.0.1:${probes}/healthz`)).rejects.toThrow();
  });

  it('runs controllers only on the leader; the webhook runs everywhere; a stopped leader hands over at once', async () => {
    const clock = new FakeClock();
    const server = new MemoryResource<KubernetesObject>();
    server.put(thing('a'));
    const store = new LeaseStore();
    const a = replica('a', server, clock, { store });
    const b = replica('b', server, clock, { store });
    const doneA = a.mgr.start();
    await flushMicrotasks();
    const doneB = b.mgr.start();
    await clock.advance(10_000);
    expect(a.mgr.isLeader()).toBe(true);
    expect(b.mgr.isLeader()).toBe(false);
    expect(a.reconciled).toEqual(['ns/a']);
    expect(b.reconciled).toEqual([]);
    expect(a.webhook.running && b.webhook.running).toBe(true);
    expect(await get(b.mgr.ports.probes!, '/readyz')).toBe(200);

    await a.mgr.stop();
    await doneA;
    expect(store.record!.holderIdentity).toBe('');
    // b's next retry (≤ 2 s × 2.2) finds the lease released.
    await clock.advance(4_400);
    expect(b.mgr.isLeader()).toBe(true);
    await flushMicrotasks();
    expect(b.reconciled).toEqual(['ns/a']);
    await b.mgr.stop();
    await doneB;
  });

  it('losing the lease stops the controllers only; the webhook and readiness stay; it leads again with a fresh queue', async () => {
    const clock = new FakeClock();
    const server = new MemoryResource<KubernetesObject>();
    server.put(thing('a'));
    const store = new LeaseStore();
    const a = replica('a', server, clock, { store });
    let settled = false;
    const done = a.mgr.start().then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    await clock.advance(100);
    expect(a.mgr.isLeader()).toBe(true);
    expect(a.reconciled).toEqual(['ns/a']);
    const firstQueue = a.controller.queue;

    a.lock!.broken = true;
    await clock.advance(12_000);
    expect(a.mgr.isLeader()).toBe(false);
    expect(firstQueue.shuttingDown).toBe(true);
    expect(a.webhook.running).toBe(true);
    expect(await get(a.mgr.ports.probes!, '/readyz')).toBe(200);
    expect(settled).toBe(false);

    // The API server answers again: the replica campaigns, leads, and reconciles every object afresh.
    a.lock!.broken = false;
    await clock.advance(20_000);
    await flushMicrotasks();
    expect(a.mgr.isLeader()).toBe(true);
    expect(a.controller.queue).not.toBe(firstQueue);
    expect(a.controller.queue.shuttingDown).toBe(false);
    expect(a.reconciled).toEqual(['ns/a', 'ns/a']);
    expect(settled).toBe(false);

    await a.mgr.stop();
    await done;
    expect(a.webhook.running).toBe(false);
    expect(store.record!.holderIdentity).toBe('');
  });

  it('SIGTERM stops gracefully; a second signal exits at once', async () => {
    const clock = new FakeClock();
    const r = replica('solo', new MemoryResource<KubernetesObject>(), clock);
    const signals = new EventEmitter();
    const exits: number[] = [];
    const uninstall = r.mgr.installSignalHandlers(signals, (c) => exits.push(c));
    const done = r.mgr.start();
    await flushMicrotasks();
    signals.emit('SIGTERM');
    await done;
    expect(r.webhook.running).toBe(false);
    signals.emit('SIGINT');
    expect(exits).toEqual([1]);
    uninstall();
    expect(signals.listenerCount('SIGTERM')).toBe(0);
  });

  it('refuses leader election without a client or a lock, before opening ports', async () => {
    const mgr = new Manager({ leaderElection: { namespace: 'ns' }, metricsPort: 0, probePort: 0 });
    await expect(mgr.start()).rejects.toThrow(/needs a client or a lock/);
    expect(mgr.ports).toEqual({});
  });
});
