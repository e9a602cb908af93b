import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { controllerFor } from './builder.ts';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { generationChanged } from './controller.ts';
import { InformerFactory } from './informer-factory.ts';
import { KubeApiError } from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import { Manager } from './manager.ts';
import { RuntimeMetrics } from './metrics.ts';
import {
  isInvalid,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  refusalOf,
  TerminalError,
} from './reconcile.ts';
import { MemoryApiServer } from './testing.ts';

const PARENTS = { group: 'example.io', version: 'v1', plural: 'parents', kind: 'Parent' };
const CHILDREN = { group: 'example.io', version: 'v1', plural: 'children', kind: 'Child' };

function parent(name: string, generation = 1): KubernetesObject {
  return { apiVersion: 'example.io/v1', kind: 'Parent', metadata: { name, namespace: 'ns', generation } };
}

function child(name: string, owner: string, controller = true): KubernetesObject {
  return {
    apiVersion: 'example.io/v1',
    kind: 'Child',
    metadata: {
      name,
      namespace: 'ns',
      ownerReferences: [{ apiVersion: 'example.io/v1', kind: 'Parent', name: owner, uid: 'u', controller }],
    },
  };
}

async function metricValue(m: RuntimeMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const all = await m.registry.getMetricsAsJSON();
  const v = all
    .find((x) => x.name === name)
    ?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return Number(v?.value ?? Number.NaN);
}

/** Records each request; answers with the next scripted outcome (a Result, or an error to throw). */
class Script implements Reconciler {
  readonly seen: string[] = [];
  readonly outcomes: (Result | Error)[] = [];
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    this.seen.push(`${req.namespace}/${req.name}#${ctx.retries}`);
    const next = this.outcomes.shift() ?? {};
    if (next instanceof Error) throw next;
    return next;
  }
}

async function setup() {
  const api = new MemoryApiServer();
  const clock = new FakeClock();
  const metrics = new RuntimeMetrics();
  const cache = new InformerFactory({ kc: {} as KubeConfigLike, client: api, clock });
  const mgr = new Manager({ leaderElection: false, metricsPort: false, probePort: false, metrics, cache });
  return { api, clock, metrics, mgr };
}

describe('controllerFor', () => {
  it('starts an informer source given to watchesSource with the manager, as its own informers', async () => {
    const { api, clock, mgr } = await setup();
    const r = new Script();
    const selected = mgr.cache.informer<KubernetesObject>(CHILDREN, { labelSelector: 'team=a' });
    controllerFor(mgr, PARENTS)
      .watchesSource(selected, (c) => ({
        namespace: 'ns',
        name: c.metadata?.ownerReferences?.[0]?.name ?? '',
      }))
      .withOptions({ clock })
      .complete(r);
    api.put('children', {
      ...child('c1', 'p'),
      metadata: { ...child('c1', 'p').metadata, labels: { team: 'a' } },
    });
    const running = mgr.start();
    await clock.advance(0);
    await flushMicrotasks();
    expect(selected.hasSynced()).toBe(true);
    expect(r.seen).toEqual(['ns/p#0']);
    await mgr.stop();
    await running;
  });

  it('reconciles the for kind and maps owned objects to their controller owner, filtered by predicates', async () => {
    const { api, clock, mgr } = await setup();
    const r = new Script();
    controllerFor(mgr, PARENTS, { predicates: [{ update: generationChanged }] })
      .owns(CHILDREN)
      .withOptions({ clock })
      .complete(r);
    api.put('parents', parent('p'));
    const running = mgr.start();
    await clock.advance(0);
    await flushMicrotasks();
    expect(r.seen).toEqual(['ns/p#0']);
    // A status-only update (same generation) is filtered out; a spec change is not.
    api.put('parents', { ...parent('p'), status: { x: 1 } } as KubernetesObject);
    await flushMicrotasks();
    api.put('parents', parent('p', 2));
    await flushMicrotasks();
    // A child with a controller ownerReference reconciles its owner; one without does not.
    api.put('children', child('c1', 'p'));
    api.put('children', child('c2', 'other', false));
    await flushMicrotasks();
    expect(r.seen).toEqual(['ns/p#0', 'ns/p#0', 'ns/p#0']);
    await mgr.stop();
    await running;
  });

  it('requeues after a Result, backs off after an error, and does not requeue a TerminalError', async () => {
    const { api, clock, metrics, mgr } = await setup();
    const r = new Script();
    r.outcomes.push({ requeueAfter: 60_000 }, new Error('boom'), new TerminalError('cannot be fixed'));
    controllerFor(mgr, PARENTS).named('parents').withOptions({ clock }).complete(r);
    api.put('parents', parent('p'));
    const running = mgr.start();
    await flushMicrotasks();
    await clock.advance(60_000);
    await clock.advance(5); // the error's backoff
    expect(r.seen).toEqual(['ns/p#0', 'ns/p#0', 'ns/p#1']);
    await clock.advance(3_600_000);
    expect(r.seen).toHaveLength(3);
    expect(
      await metricValue(metrics, 'controller_runtime_terminal_reconcile_errors_total', {
        controller: 'parents',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'parents' }),
    ).toBe(2);
    // A new event brings the key back.
    api.put('parents', parent('p', 2));
    await flushMicrotasks();
    expect(r.seen).toEqual(['ns/p#0', 'ns/p#0', 'ns/p#1', 'ns/p#0']);
    await mgr.stop();
    await running;
  });

  it('maps a watched kind and a source through their map functions', async () => {
    const { api, clock, mgr } = await setup();
    const r = new Script();
    const b = controllerFor(mgr, PARENTS).withOptions({ clock });
    b.watches(CHILDREN, (c) => [
      { namespace: 'ns', name: 'a' },
      { namespace: 'ns', name: String(c.metadata?.name) },
    ]);
    b.complete(r);
    const running = mgr.start();
    await flushMicrotasks();
    api.put('children', child('b', 'nobody', false));
    await flushMicrotasks();
    expect([...r.seen].sort()).toEqual(['ns/a#0', 'ns/b#0']);
    await mgr.stop();
    await running;
  });
});

describe('refusalOf / isInvalid', () => {
  it('classifies what retrying cannot change, once', () => {
    const err = (code: number, reason: string) => new KubeApiError(code, reason, 'm', undefined);
    expect(refusalOf(err(422, 'Invalid'))?.code).toBe(422);
    expect(refusalOf(err(403, 'Forbidden'))?.message).toBe('403 Forbidden: m');
    expect(refusalOf(err(404, 'NotFound'))?.code).toBe(404);
    expect(refusalOf(err(400, 'BadRequest'))?.code).toBe(400);
    expect(refusalOf(err(409, 'Conflict'))).toBeUndefined();
    expect(refusalOf(err(500, 'InternalError'))).toBeUndefined();
    expect(refusalOf(new Error('socket hang up'))).toBeUndefined();
    expect(isInvalid(err(422, 'Invalid'))).toBe(true);
    expect(isInvalid(err(403, 'Forbidden'))).toBe(false);
  });
});
