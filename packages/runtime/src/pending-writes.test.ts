import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { Client } from './client.ts';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { InformerFactory } from './informer-factory.ts';
import { KubeApiError, RestMapper } from './kube-client.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import { PendingWrites } from './pending-writes.ts';
import { MemoryApiServer } from './testing.ts';

interface Thing extends KubernetesObject {
  spec?: { owner?: string; n?: number };
  status?: { phase?: string };
}

const THINGS = { group: 'example.io', version: 'v1', plural: 'things', kind: 'Thing' };
const API_VERSION = 'example.io/v1';
const OWNER_INDEX = 'things:owner';

type Written = Thing & { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };

function thing(name: string, spec: Thing['spec'] = {}, labels?: Record<string, string>): Written {
  return {
    apiVersion: API_VERSION,
    kind: 'Thing',
    metadata: { name, namespace: 'ns', ...(labels ? { labels } : {}) },
    spec,
  };
}

const ref = (name: string) => ({
  apiVersion: API_VERSION,
  kind: 'Thing',
  metadata: { name, namespace: 'ns' },
});

/** A cache and a client over the in-memory API server; `selector` scopes a second informer. */
async function setup(opts: { selector?: string } = {}) {
  const api = new MemoryApiServer();
  const store = api.resource<Thing>('things');
  const cache = new InformerFactory({ kc: {} as KubeConfigLike, client: api, clock: new FakeClock() });
  const mapper = new RestMapper(api);
  mapper.register(API_VERSION, 'Thing', 'things', true);
  const client = new Client({ client: api, mapper, cache });
  const things = cache.informer<Thing>(THINGS);
  things.addIndexer(OWNER_INDEX, (t) => t.spec?.owner);
  const selected = opts.selector
    ? cache.informer<Thing>(THINGS, { labelSelector: opts.selector })
    : undefined;
  for (const inf of cache.informers) inf.start();
  for (const inf of cache.informers) await inf.waitForSync();
  const stop = async () => {
    for (const inf of cache.informers) await inf.stop();
  };
  return { api, store, cache, client, things, selected, stop };
}

describe('read your own writes', () => {
  it('a create is listed by index lookups before its ADDED event, and the event clears it', async () => {
    const { store, client, things, stop } = await setup();
    store.holding = true; // the watch lags behind
    await client.create(thing('run-1', { owner: 'cron-a' }));
    // What CreatedOperations was for: the owner's index shows the new object at once.
    expect(things.byIndex(OWNER_INDEX, 'cron-a').map((t) => t.metadata?.name)).toEqual(['run-1']);
    expect(things.list('ns').map((t) => t.metadata?.name)).toEqual(['run-1']);
    expect(things.get('run-1', 'ns')?.spec?.owner).toBe('cron-a');
    expect(things.pendingWrites).toBe(1);
    store.release();
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(0);
    expect(things.byIndex(OWNER_INDEX, 'cron-a').map((t) => t.metadata?.name)).toEqual(['run-1']);
    await stop();
  });

  it('a status write is read back while the cache still holds the old status', async () => {
    const { api, store, client, things, stop } = await setup();
    api.put('things', { ...thing('a'), status: { phase: 'Pending' } });
    await flushMicrotasks();
    store.holding = true;
    const current = things.get('a', 'ns');
    expect(current?.status?.phase).toBe('Pending');
    const written = await client
      .status()
      .applyIfChanged<Thing>({ ...ref('a'), status: current?.status }, { phase: 'Succeeded' });
    expect(written !== false && written.status?.phase).toBe('Succeeded');
    // What the `decided` maps and OwnWrites were for: get and list show the status just written.
    expect(things.get('a', 'ns')?.status?.phase).toBe('Succeeded');
    expect(things.list('ns').map((t) => t.status?.phase)).toEqual(['Succeeded']);
    // Unchanged status: no write at all.
    expect(
      await client
        .status()
        .applyIfChanged({ ...ref('a'), status: { phase: 'Succeeded' } }, { phase: 'Succeeded' }),
    ).toBe(false);
    store.release();
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(0);
    expect(things.get('a', 'ns')?.status?.phase).toBe('Succeeded');
    await stop();
  });

  it('a patch (marks on an object) is what reads show until its event; a second write replaces the first', async () => {
    const { api, store, client, things, stop } = await setup();
    api.put('things', thing('inst', {}, { trigger: 'yes' }));
    await flushMicrotasks();
    store.holding = true;
    await client.patch(ref('inst'), { metadata: { labels: { trigger: null }, annotations: { seen: '1' } } });
    expect(things.list('ns')[0]?.metadata?.labels).toEqual({});
    await client.patch(ref('inst'), { metadata: { annotations: { seen: '2' } } });
    expect(things.get('inst', 'ns')?.metadata?.annotations).toEqual({ seen: '2' });
    expect(things.pendingWrites).toBe(1);
    // The first write's event does not clear the entry: it waits for the second one's version.
    const [first, second] = store.held.splice(0);
    store.holding = false;
    store.active?.onEvent(first!.type, structuredClone(first!.obj));
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(1);
    expect(things.get('inst', 'ns')?.metadata?.annotations).toEqual({ seen: '2' });
    store.active?.onEvent(second!.type, structuredClone(second!.obj));
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(0);
    await stop();
  });

  it('a delete hides the object until its DELETED event', async () => {
    const { api, store, client, things, stop } = await setup();
    const put = api.put('things', thing('old', { owner: 'cron-a' }));
    await flushMicrotasks();
    store.holding = true;
    await client.delete(ref('old'), { uid: put.metadata?.uid ?? '' });
    expect(things.get('old', 'ns')).toBeUndefined();
    expect(things.list('ns')).toEqual([]);
    expect(things.byIndex(OWNER_INDEX, 'cron-a')).toEqual([]);
    store.release();
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(0);
    expect(things.list('ns')).toEqual([]);
    await stop();
  });

  it('an event with another uid clears the entry: the object was replaced by someone else', async () => {
    const { api, store, client, things, stop } = await setup();
    store.holding = true;
    await client.create(thing('x', { n: 1 }));
    // Another client deletes and recreates it; the watch delivers only the newcomer (events compacted).
    store.held.splice(0);
    store.remove('ns', 'x', true);
    const other = api.put('things', thing('x', { n: 2 }), true);
    store.holding = false;
    store.active?.onEvent('ADDED', structuredClone(other));
    await flushMicrotasks();
    expect(things.pendingWrites).toBe(0);
    expect(things.get('x', 'ns')?.spec?.n).toBe(2);
    await stop();
  });

  it('a relist that starts after the write clears it even when the watch never told', async () => {
    const { store, client, things, stop } = await setup();
    store.holding = true;
    await client.create(thing('y'));
    store.held.splice(0); // the event is lost
    store.holding = false;
    expect(things.pendingWrites).toBe(1);
    store.active?.fail(new KubeApiError(410, 'Expired', 'too old', undefined));
    await flushMicrotasks();
    await flushMicrotasks();
    expect(things.stats.lists).toBe(2);
    expect(things.pendingWrites).toBe(0);
    expect(things.get('y', 'ns')?.metadata?.name).toBe('y');
    await stop();
  });

  it('records nothing when the cache applied the answer before the write returned', async () => {
    const { client, things, stop } = await setup();
    // The in-memory server delivers the watch event before the HTTP answer.
    await client.create(thing('z'));
    expect(things.pendingWrites).toBe(0);
    await client.patch(ref('z'), { spec: { n: 3 } });
    expect(things.pendingWrites).toBe(0);
    expect(things.get('z', 'ns')?.spec?.n).toBe(3);
    await stop();
  });

  it('records only in caches whose label selector holds the object', async () => {
    const { store, client, things, selected, stop } = await setup({ selector: 'tier=prod' });
    store.holding = true;
    await client.create(thing('dev', {}, { tier: 'dev' }));
    await client.create(thing('prod', {}, { tier: 'prod' }));
    expect(things.pendingWrites).toBe(2);
    expect(selected?.pendingWrites).toBe(1);
    expect(selected?.list('ns').map((t) => t.metadata?.name)).toEqual(['prod']);
    store.release();
    await stop();
  });

  it('a failed write records nothing', async () => {
    const { api, store, client, things, stop } = await setup();
    store.holding = true;
    api.failNext.set('POST', new KubeApiError(422, 'Invalid', 'spec.n: must be positive', undefined));
    await expect(client.create(thing('bad'))).rejects.toThrow('must be positive');
    expect(things.pendingWrites).toBe(0);
    expect(things.list('ns')).toEqual([]);
    await stop();
  });

  it('records a write of an object nested as deep as the API server stores (10,000 levels)', async () => {
    const { things, stop } = await setup();
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 10_000; i++) deep = { x: deep };
    const written = { ...thing('deep'), metadata: { name: 'deep', namespace: 'ns', resourceVersion: '7' } };
    things.recordWrite({ ...written, spec: deep } as Thing);
    expect(things.get('deep', 'ns')?.metadata?.resourceVersion).toBe('7');
    expect(things.pendingWrites).toBe(1);
    await stop();
  });

  it('refuses to read a kind nobody watches instead of answering "nothing there"', async () => {
    const { client, stop } = await setup();
    expect(() => client.get({ ...THINGS, plural: 'others', kind: 'Other' }, { name: 'a' })).toThrow(
      'not cached',
    );
    await stop();
  });
});

describe('PendingWrites (equality only, resourceVersions opaque)', () => {
  const obj = (rv: string, uid = 'u1'): Thing => ({
    metadata: { name: 'a', namespace: 'ns', resourceVersion: rv, uid },
  });

  it('clears on the recorded version only: a version that sorts before or after it does not', () => {
    const p = new PendingWrites<Thing>();
    p.record('ns/a', obj('x10'), obj('x9'));
    p.observe('ns/a', 'MODIFIED', obj('x9'));
    p.observe('ns/a', 'MODIFIED', obj('x100'));
    expect(p.size).toBe(1);
    p.observe('ns/a', 'MODIFIED', obj('x10'));
    expect(p.size).toBe(0);
  });

  it('a relist that started before the write keeps it, unless it listed the written version', () => {
    const p = new PendingWrites<Thing>();
    const mark = p.mark();
    p.record('ns/a', obj('7'), undefined);
    p.relisted(mark, new Map());
    expect(p.get('ns/a')?.obj?.metadata?.resourceVersion).toBe('7');
    p.relisted(mark, new Map([['ns/a', obj('7')]]));
    expect(p.size).toBe(0);
  });

  it('a write whose version the cache applied while it was in flight is not recorded', () => {
    const p = new PendingWrites<Thing>();
    const done = p.begin('ns/a');
    p.observe('ns/a', 'MODIFIED', obj('5'));
    p.observe('ns/a', 'MODIFIED', obj('6')); // a later change by someone else, applied too
    p.record('ns/a', obj('5'), obj('6'));
    done();
    expect(p.size).toBe(0);
  });

  it("the replaced object's late events do not clear a create of the same name; a newer uid does", () => {
    const p = new PendingWrites<Thing>();
    p.record('ns/a', obj('9', 'new'), obj('5', 'old'));
    p.observe('ns/a', 'DELETED', obj('8', 'old'));
    expect(p.get('ns/a')?.obj?.metadata?.uid).toBe('new');
    p.observe('ns/a', 'ADDED', obj('12', 'newer'));
    expect(p.size).toBe(0);
  });

  it('a tombstone survives updates of the same uid and goes with DELETED', () => {
    const p = new PendingWrites<Thing>();
    p.tombstone('ns/a', 'u1');
    p.observe('ns/a', 'MODIFIED', obj('3', 'u1')); // finalizers still running
    expect(p.get('ns/a')).toMatchObject({ obj: undefined, uid: 'u1' });
    p.observe('ns/a', 'DELETED', obj('4', 'u1'));
    expect(p.size).toBe(0);
  });

  it('returns the cached array itself when nothing is pending in the namespace', () => {
    const p = new PendingWrites<Thing>();
    p.record('other/a', { metadata: { name: 'a', namespace: 'other', resourceVersion: '1' } }, undefined);
    const cached = [obj('1')];
    expect(
      p.overlay(
        cached,
        () => 'ns/a',
        'ns',
        () => true,
      ),
    ).toBe(cached);
  });
});
