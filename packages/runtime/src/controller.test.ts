import { Writable } from 'node:stream';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { Activity } from './activity.ts';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { Controller, generationChanged, ownerKeys, type ReconcileResult } from './controller.ts';
import { Informer } from './informer.ts';
import { createLogger } from './logger.ts';
import { RuntimeMetrics } from './metrics.ts';
import type { ReconcileContext } from './reconcile.ts';
import { MemoryResource } from './testing.ts';

function obj(
  name: string,
  generation = 1,
  extra: Partial<KubernetesObject['metadata']> = {},
): KubernetesObject {
  return { apiVersion: 'v1', kind: 'Thing', metadata: { name, namespace: 'ns', generation, ...extra } };
}

/** A Job owned by Thing ns/owner, its labels telling one version of it from the next. */
function ownedChild(labels: Record<string, string>): KubernetesObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'child',
      namespace: 'ns',
      labels,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Thing', name: 'owner', uid: 'u' }],
    },
  };
}

function setup(reconcile: (ctx: ReconcileContext) => Promise<ReconcileResult | undefined>, workers = 1) {
  const clock = new FakeClock();
  const server = new MemoryResource<KubernetesObject>();
  const informer = new Informer<KubernetesObject>({
    name: 'things',
    listerWatcher: server,
    clock,
    backoff: { jitter: 0 },
  });
  const metrics = new RuntimeMetrics();
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  const controller = new Controller({
    name: 'thing',
    reconcile,
    workers,
    clock,
    metrics,
    logger: createLogger({ destination, level: 'debug' }),
  });
  return { clock, server, informer, controller, metrics, lines };
}

async function metricValue(m: RuntimeMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const all = await m.registry.getMetricsAsJSON();
  const metric = all.find((x) => x.name === name);
  const v = metric?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return Number(v?.value ?? Number.NaN);
}

describe('Controller', () => {
  it('starts workers only after the informer synced and reconciles every cached object once', async () => {
    const seen: string[] = [];
    const { clock, server, informer, controller } = setup(async (ctx) => {
      seen.push(ctx.key);
      return undefined;
    });
    server.put(obj('a'));
    server.put(obj('b'));
    server.listFailures.push(new Error('not yet'));
    controller.watch(informer);
    const running = controller.start();
    informer.start();
    await flushMicrotasks();
    expect(seen).toEqual([]);
    // The informer retries the list after its backoff; only then do workers run.
    expect(informer.hasSynced()).toBe(false);
    await clock.advance(1_000);
    expect(informer.hasSynced()).toBe(true);
    await flushMicrotasks();
    await flushMicrotasks();
    expect(seen.sort()).toEqual(['ns/a', 'ns/b']);
    await controller.stop();
    await running;
    await informer.stop();
  });

  it('tells each reconcile when the workers of the current run started; a restart starts a new run', async () => {
    const startedAt: number[] = [];
    const { clock, server, informer, controller } = setup(async (ctx) => {
      startedAt.push(ctx.workersStartedAt);
      return undefined;
    });
    const t0 = clock.now();
    server.put(obj('a'));
    controller.watch(informer);
    informer.start();
    await clock.advance(5_000);
    const first = controller.start();
    await flushMicrotasks();
    await clock.advance(60_000);
    server.put(obj('a', 2));
    await flushMicrotasks();
    await controller.stop();
    await first;
    await clock.advance(60_000);
    const second = controller.start();
    await flushMicrotasks();
    expect(startedAt.map((t) => t - t0)).toEqual([5_000, 5_000, 125_000]);
    await controller.stop();
    await second;
    await informer.stop();
  });

  it('maps results like controller-runtime: error and requeue back off, requeueAfter and success forget', async () => {
    const outcomes: (ReconcileResult | Error)[] = [
      new Error('boom'),
      new Error('boom again'),
      { requeue: true },
      { requeueAfterMs: 60_000 },
      {},
    ];
    const retriesSeen: number[] = [];
    const { clock, informer, controller, metrics, server } = setup(async (ctx) => {
      retriesSeen.push(ctx.retries);
      const next = outcomes.shift();
      if (next instanceof Error) throw next;
      return next;
    });
    server.put(obj('a'));
    controller.watch(informer);
    informer.start();
    const running = controller.start();
    await informer.waitForSync();
    await flushMicrotasks();
    // error → 5 ms, error → 10 ms, requeue → 20 ms, then requeueAfter 60 s with backoff forgotten.
    await clock.advance(5);
    await clock.advance(10);
    await clock.advance(20);
    expect(retriesSeen).toEqual([0, 1, 2, 3]);
    await clock.advance(59_999);
    expect(retriesSeen).toHaveLength(4);
    await clock.advance(1);
    expect(retriesSeen).toEqual([0, 1, 2, 3, 0]);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_total', {
        controller: 'thing',
        result: 'error',
      }),
    ).toBe(2);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_total', {
        controller: 'thing',
        result: 'requeue',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_total', {
        controller: 'thing',
        result: 'requeue_after',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_total', {
        controller: 'thing',
        result: 'success',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'thing' }),
    ).toBe(2);
    await controller.stop();
    await running;
    await informer.stop();
  });

  it('logs reconcile errors with the key, controller and reconcileID', async () => {
    const { informer, controller, server, lines } = setup(async () => {
      throw new Error('kaput');
    });
    server.put(obj('a'));
    controller.watch(informer);
    informer.start();
    const running = controller.start();
    await informer.waitForSync();
    await flushMicrotasks();
    const err = lines.find((l) => l.msg === 'Reconciler error');
    expect(err).toMatchObject({
      controller: 'thing',
      key: 'ns/a',
      namespace: 'ns',
      name: 'a',
      level: 'error',
    });
    expect(typeof err!.reconcileID).toBe('string');
    await controller.stop();
    await running;
    await informer.stop();
  });

  it('create predicates filter add events, the initial list included; updates still pass', async () => {
    const seen: string[] = [];
    const { server, informer, controller } = setup(async (ctx) => {
      seen.push(ctx.key);
      return undefined;
    });
    const labelled = (o: KubernetesObject) => o.metadata?.labels?.ready === 'yes';
    controller.watch(informer, { createPredicate: labelled });
    server.put(obj('listed'));
    server.put(obj('listed-ready', 1, { labels: { ready: 'yes' } }));
    informer.start();
    const running = controller.start();
    await informer.waitForSync();
    await flushMicrotasks();
    expect(seen).toEqual(['ns/listed-ready']);
    server.put(obj('added'));
    await flushMicrotasks();
    expect(seen).toEqual(['ns/listed-ready']);
    // The add was filtered, the update that makes it ready is not.
    server.put(obj('added', 1, { labels: { ready: 'yes' } }));
    await flushMicrotasks();
    expect(seen).toEqual(['ns/listed-ready', 'ns/added']);
    await controller.stop();
    await running;
    await informer.stop();
  });

  it('update predicates filter events; mappers route children to owners', async () => {
    const seen: string[] = [];
    const { server, informer, controller } = setup(async (ctx) => {
      seen.push(ctx.key);
      return undefined;
    });
    const children = new MemoryResource<KubernetesObject>();
    const childInformer = new Informer<KubernetesObject>({ name: 'children', listerWatcher: children });
    controller.watch(informer, { updatePredicate: generationChanged });
    controller.watch(childInformer, { map: ownerKeys('Thing') });
    informer.start();
    childInformer.start();
    server.put(obj('a'));
    const running = controller.start();
    await informer.waitForSync();
    await childInformer.waitForSync();
    await flushMicrotasks();
    expect(seen).toEqual(['ns/a']);
    server.put(obj('a', 1, { labels: { status: 'only' } }));
    await flushMicrotasks();
    expect(seen).toEqual(['ns/a']);
    server.put(obj('a', 2));
    await flushMicrotasks();
    expect(seen).toEqual(['ns/a', 'ns/a']);
    children.put({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'child',
        namespace: 'ns',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Thing', name: 'owner', uid: 'u' },
          { apiVersion: 'v1', kind: 'Other', name: 'x', uid: 'u2' },
        ],
      },
    });
    await flushMicrotasks();
    expect(seen).toEqual(['ns/a', 'ns/a', 'ns/owner']);
    await controller.stop();
    await running;
    await informer.stop();
    await childInformer.stop();
  });

  it('batchMs: the events of a burst become one reconcile, due batchMs after the first', async () => {
    const seen: string[] = [];
    const { clock, informer, controller } = setup(async (ctx) => {
      seen.push(ctx.key);
      return undefined;
    });
    const children = new MemoryResource<KubernetesObject>();
    const childInformer = new Informer<KubernetesObject>({
      name: 'children',
      listerWatcher: children,
      clock,
    });
    controller.watch(informer, { map: () => undefined });
    controller.watch(childInformer, { map: ownerKeys('Thing'), batchMs: 1_000 });
    informer.start();
    childInformer.start();
    const running = controller.start();
    await informer.waitForSync();
    await childInformer.waitForSync();
    const child = (phase: string) => ownedChild({ phase });
    children.put(child('created'));
    await flushMicrotasks();
    await clock.advance(400);
    children.put(child('accepted'));
    children.put(child('running'));
    await flushMicrotasks();
    await clock.advance(599);
    expect(seen).toEqual([]);
    await clock.advance(1);
    await flushMicrotasks();
    expect(seen).toEqual(['ns/owner']);
    await clock.advance(5_000);
    expect(seen).toEqual(['ns/owner']);
    await controller.stop();
    await running;
    await informer.stop();
    await childInformer.stop();
  });

  it('trail: mapped keys wait for a lull of the foreground controller, at most maxMs', async () => {
    const seen: [string, number][] = [];
    const { clock, informer, controller } = setup(async (ctx) => {
      seen.push([ctx.key, clock.now()]);
      return undefined;
    });
    const activity = new Activity({ quietMs: 1_000, clock });
    // The foreground: a controller that touches the activity whenever it queues or reconciles a key.
    const fgServer = new MemoryResource<KubernetesObject>();
    const fgInformer = new Informer<KubernetesObject>({ name: 'work', listerWatcher: fgServer, clock });
    const foreground = new Controller({ name: 'work', reconcile: async () => undefined, clock, activity });
    foreground.watch(fgInformer);
    const children = new MemoryResource<KubernetesObject>();
    const childInformer = new Informer<KubernetesObject>({
      name: 'children',
      listerWatcher: children,
      clock,
    });
    controller.watch(informer, { map: () => undefined });
    controller.watch(childInformer, {
      map: ownerKeys('Thing'),
      batchMs: 100,
      trail: { activity, maxMs: 5_000 },
    });
    for (const i of [informer, childInformer, fgInformer]) i.start();
    const running = [controller.start(), foreground.start()];
    for (const i of [informer, childInformer, fgInformer]) await i.waitForSync();
    const start = clock.now();
    const child = (n: number) => ownedChild({ n: String(n) });
    const work = (n: number): KubernetesObject => ({
      apiVersion: 'v1',
      kind: 'Work',
      metadata: { name: `w${n}`, namespace: 'ns' },
    });
    // A burst of foreground work every 400 ms for 2 s: the child's event waits for the lull after it.
    children.put(child(0));
    for (let n = 0; n < 5; n++) {
      fgServer.put(work(n));
      await flushMicrotasks();
      await clock.advance(400);
    }
    expect(seen).toEqual([]);
    await clock.advance(1_000);
    expect(seen).toEqual([['ns/owner', start + 1_600 + 1_000]]);
    // Foreground work that never pauses: the next event is released maxMs after it.
    const again = clock.now();
    children.put(child(1));
    for (let n = 5; n < 20; n++) {
      fgServer.put(work(n));
      await flushMicrotasks();
      await clock.advance(400);
    }
    expect(seen.slice(1)).toEqual([['ns/owner', again + 5_000]]);
    await controller.stop();
    await foreground.stop();
    await Promise.all(running);
    for (const i of [informer, childInformer, fgInformer]) await i.stop();
  });

  it('never runs one key on two workers, runs different keys in parallel', async () => {
    const active = new Set<string>();
    let maxParallel = 0;
    let overlap = false;
    const gates: (() => void)[] = [];
    const { server, informer, controller } = setup(async (ctx) => {
      if (active.has(ctx.key)) overlap = true;
      active.add(ctx.key);
      maxParallel = Math.max(maxParallel, active.size);
      await new Promise<void>((r) => gates.push(r));
      active.delete(ctx.key);
      return undefined;
    }, 3);
    for (const n of ['a', 'b', 'c']) server.put(obj(n));
    controller.watch(informer);
    informer.start();
    const running = controller.start();
    await informer.waitForSync();
    await flushMicrotasks();
    server.put(obj('a', 2));
    server.put(obj('a', 3));
    await flushMicrotasks();
    expect(maxParallel).toBe(3);
    while (gates.length > 0) {
      gates.shift()!();
      await flushMicrotasks();
    }
    expect(overlap).toBe(false);
    await controller.stop();
    await running;
    await informer.stop();
  });

  it('stop drains in-flight work; drain:false drops queued keys; the timeout aborts the reconcile signal', async () => {
    const started: string[] = [];
    let release!: () => void;
    let signalSeen: AbortSignal | undefined;
    const { clock, server, informer, controller } = setup(async (ctx) => {
      started.push(ctx.key);
      signalSeen = ctx.signal;
      await new Promise<void>((r) => {
        release = r;
      });
      return undefined;
    });
    server.put(obj('a'));
    server.put(obj('b'));
    controller.watch(informer);
    informer.start();
    const running = controller.start();
    await informer.waitForSync();
    await flushMicrotasks();
    expect(started).toEqual(['ns/a']);
    let stopped = false;
    const stopping = controller.stop({ drain: false, timeoutMs: 5_000 }).then(() => {
      stopped = true;
    });
    await flushMicrotasks();
    expect(stopped).toBe(false);
    await clock.advance(5_000);
    expect(signalSeen!.aborted).toBe(true);
    await stopping;
    release();
    await running;
    // 'b' was queued and dropped, never started.
    expect(started).toEqual(['ns/a']);
    await informer.stop();
  });

  it('stop returns at once when the workers never ran (a standby replica), dropping queued keys', async () => {
    const started: string[] = [];
    const { controller } = setup(async (ctx) => {
      started.push(ctx.key);
      return undefined;
    });
    controller.enqueue('ns/a');
    let stopped = false;
    const stopping = controller.stop({ timeoutMs: 5_000 }).then(() => {
      stopped = true;
    });
    await flushMicrotasks();
    expect(stopped).toBe(true);
    await stopping;
    expect(started).toEqual([]);
  });
});
