import { Writable } from 'node:stream';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { HANDOVER_BATCH, Informer } from './informer.ts';
import { KubeApiError } from './kube-client.ts';
import { createLogger } from './logger.ts';
import { MemoryResource } from './testing.ts';

interface Obj extends KubernetesObject {
  data?: Record<string, string>;
}

function cm(name: string, data: Record<string, string> = {}, namespace = 'ns'): Obj {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

function setup(
  opts: {
    resyncPeriodMs?: number;
    labelSelector?: string;
    fieldSelector?: string;
    transform?: (o: Obj) => Obj;
  } = {},
) {
  const clock = new FakeClock();
  const server = new MemoryResource<Obj>();
  const logLines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) logLines.push(JSON.parse(l));
      cb();
    },
  });
  const informer = new Informer<Obj>({
    name: 'configmaps',
    listerWatcher: server,
    clock,
    logger: createLogger({ destination, level: 'debug' }),
    backoff: { initialMs: 1000, maxMs: 30_000, jitter: 0 },
    random: () => 0,
    ...opts,
  });
  const events: string[] = [];
  informer.addEventHandler({
    add: (o) => {
      events.push(`add ${o.metadata!.name}`);
    },
    update: (a, b) => {
      events.push(
        `update ${b.metadata!.name} ${a.metadata!.resourceVersion}->${b.metadata!.resourceVersion}`,
      );
    },
    delete: (o) => {
      events.push(`delete ${o.metadata!.name}`);
    },
  });
  return { clock, server, informer, events, logLines };
}

describe('Informer', () => {
  it('lists, reports synced, then watches from the list resourceVersion with bookmarks', async () => {
    const { server, informer, events } = setup({ labelSelector: 'a=b', fieldSelector: 'metadata.name=x' });
    server.put(cm('a'));
    server.put(cm('b'));
    expect(informer.hasSynced()).toBe(false);
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    await flushMicrotasks();
    expect(events).toEqual(['add a', 'add b']);
    expect(server.lists).toEqual([{ labelSelector: 'a=b', fieldSelector: 'metadata.name=x' }]);
    expect(server.watches[0]).toMatchObject({
      resourceVersion: '102',
      allowWatchBookmarks: true,
      labelSelector: 'a=b',
      fieldSelector: 'metadata.name=x',
      timeoutSeconds: 300,
    });
    await informer.stop();
  });

  it('delivers watch events, skips same-resourceVersion updates, tracks bookmarks', async () => {
    const { server, informer, events } = setup();
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    server.put(cm('a', { v: '1' }));
    server.put(cm('a', { v: '2' }));
    server.active!.onEvent('MODIFIED', structuredClone(server.objects.get('ns/a')));
    server.remove('ns', 'a');
    server.active!.onEvent('BOOKMARK', { metadata: { resourceVersion: '999' } });
    expect(events).toEqual(['add a', 'update a 101->102', 'delete a']);
    expect(informer.resourceVersion).toBe('999');
    expect(informer.list()).toEqual([]);
    await informer.stop();
  });

  it('relists on a 410 ERROR event and reports what changed while events were missed', async () => {
    const { server, informer, events } = setup();
    server.put(cm('keep'));
    server.put(cm('gone'));
    server.put(cm('changed', { v: '1' }));
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    events.length = 0;
    server.remove('ns', 'gone', true);
    server.put(cm('changed', { v: '2' }), true);
    server.put(cm('new'), true);
    server.active!.onEvent('ERROR', {
      kind: 'Status',
      code: 410,
      reason: 'Expired',
      message: 'too old resource version',
    });
    await flushMicrotasks();
    expect(server.lists).toHaveLength(2);
    expect(events.sort()).toEqual(['add new', 'delete gone', 'update changed 103->105']);
    expect(
      informer
        .list()
        .map((o) => o.metadata!.name)
        .sort(),
    ).toEqual(['changed', 'keep', 'new']);
    expect(informer.stats.gone).toBe(1);
    // Watching resumes from the new list.
    expect(server.watches.at(-1)!.resourceVersion).toBe(String(server.rv));
    server.put(cm('after'));
    expect(events).toContain('add after');
    await informer.stop();
  });

  it('relists when the watch request itself fails with HTTP 410', async () => {
    const { server, informer } = setup();
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    server.active!.fail(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await flushMicrotasks();
    expect(server.lists).toHaveLength(2);
    expect(server.active).toBeDefined();
    await informer.stop();
  });

  it('retries a failing list with growing backoff and syncs once it succeeds', async () => {
    const { clock, server, informer } = setup();
    const forbidden = new KubeApiError(403, 'Forbidden', 'no', undefined);
    server.listFailures.push(forbidden, forbidden, new Error('ECONNRESET'));
    informer.start();
    await flushMicrotasks();
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      delays.push(clock.nextDue()! - clock.now());
      await clock.advance(clock.nextDue()! - clock.now());
    }
    expect(delays).toEqual([1000, 2000, 4000]);
    expect(informer.hasSynced()).toBe(true);
    expect(informer.stats.errors).toBe(3);
    await informer.stop();
  });

  it('restarts a failed watch from its last resourceVersion without relisting, and resets backoff on progress', async () => {
    const { clock, server, informer, events } = setup();
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    server.put(cm('a'));
    server.active!.fail(new KubeApiError(500, 'InternalError', 'etcd down', undefined));
    await flushMicrotasks();
    expect(server.active).toBeUndefined();
    expect(clock.nextDue()! - clock.now()).toBe(1000);
    await clock.advance(1000);
    expect(server.lists).toHaveLength(1);
    expect(server.watches.at(-1)!.resourceVersion).toBe('101');
    server.active!.fail(new Error('socket hang up'));
    await flushMicrotasks();
    expect(clock.nextDue()! - clock.now()).toBe(2000);
    await clock.advance(2000);
    server.put(cm('b'));
    server.active!.fail(new Error('reset'));
    await flushMicrotasks();
    expect(clock.nextDue()! - clock.now()).toBe(1000);
    await clock.advance(1000);
    expect(events).toEqual(['add a', 'add b']);
    await informer.stop();
  });

  it('re-watches at once after a clean end with events, and backs off after an immediate empty end', async () => {
    const { clock, server, informer } = setup();
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    server.put(cm('a'));
    server.active!.end();
    await flushMicrotasks();
    expect(server.watches).toHaveLength(2);
    server.active!.end();
    await flushMicrotasks();
    expect(server.watches).toHaveLength(2);
    await clock.advance(1000);
    expect(server.watches).toHaveLength(3);
    await informer.stop();
  });

  it('hands out the cached objects themselves, frozen: a caller or handler that changes one throws', async () => {
    const { server, informer, logLines } = setup();
    informer.addEventHandler({
      add: (o) => {
        o.data = { mutated: 'by handler' };
      },
    });
    server.put(cm('a', { v: '1' }));
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    const got = informer.get('a', 'ns')!;
    expect(informer.getByKey('ns/a')).toBe(got);
    expect(informer.list()[0]).toBe(got);
    expect(() => {
      got.data!.v = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      informer.list()[0]!.metadata!.name = 'renamed';
    }).toThrow(TypeError);
    expect(() => informer.list()[0]!.metadata!.labels).not.toThrow();
    expect(informer.get('a', 'ns')!.data).toEqual({ v: '1' });
    expect(logLines.filter((l) => l.msg === 'informer handler threw')).toHaveLength(1);
    // Copy on write: a spread or a clone of a cached object is the caller's own.
    const mine = { ...got, data: { ...got.data, v: '2' } };
    expect(mine.data.v).toBe('2');
    expect(structuredClone(got).data!.v).toBe('1');
    expect(Object.isFrozen(structuredClone(got))).toBe(false);
    await informer.stop();
  });

  it('keeps of managedFields only who owns which annotation, listed or watched, unless told otherwise', async () => {
    const owned = (name: string, v: string): Obj => ({
      ...cm(name, { v }),
      metadata: {
        name,
        namespace: 'ns',
        annotations: { 'x.io/a': v },
        managedFields: [
          {
            manager: 'kubectl',
            operation: 'Update',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:data': { 'f:v': {} } },
          },
          {
            manager: 'gitops',
            operation: 'Apply',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:x.io/a': {} } }, 'f:data': {} },
          },
        ],
      },
    });
    const lean = [
      {
        manager: 'gitops',
        operation: 'Apply',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:x.io/a': {} } } },
      },
    ];
    const { server, informer } = setup();
    server.put(owned('listed', '1'));
    informer.start();
    await informer.waitForSync();
    server.put(owned('watched', '2'));
    await flushMicrotasks();
    expect(informer.get('listed', 'ns')!.metadata!.managedFields).toEqual(lean);
    expect(informer.get('watched', 'ns')!.metadata!.managedFields).toEqual(lean);
    await informer.stop();

    const whole = setup({ transform: (o) => o });
    whole.server.put(owned('listed', '1'));
    whole.informer.start();
    await whole.informer.waitForSync();
    expect(whole.informer.get('listed', 'ns')!.metadata!.managedFields).toHaveLength(2);
    await whole.informer.stop();
  });

  it('finds objects by namespace and by custom indexes, kept current through updates, deletes and relists', async () => {
    const { server, informer } = setup();
    informer.addIndexer('owner', (o) => o.data?.owner);
    expect(informer.addIndexer('owner', () => 'other')).toBe(false);
    server.put(cm('a', { owner: 'x' }));
    server.put(cm('b', { owner: 'x' }, 'other'));
    server.put(cm('c', { owner: 'y' }));
    informer.start();
    await informer.waitForSync();
    const names = (os: Obj[]) => os.map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`).sort();
    expect(names(informer.list('ns'))).toEqual(['ns/a', 'ns/c']);
    expect(names(informer.byIndex('owner', 'x'))).toEqual(['ns/a', 'other/b']);
    server.put(cm('a', { owner: 'y' }));
    server.remove('other', 'b');
    expect(names(informer.byIndex('owner', 'x'))).toEqual([]);
    expect(names(informer.byIndex('owner', 'y'))).toEqual(['ns/a', 'ns/c']);
    // Missed changes come back through a relist, which rebuilds the indexes.
    server.put(cm('d', { owner: 'x' }, 'third'), true);
    server.remove('ns', 'c', true);
    server.active!.onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'old' });
    await flushMicrotasks();
    expect(names(informer.byIndex('owner', 'x'))).toEqual(['third/d']);
    expect(names(informer.byIndex('owner', 'y'))).toEqual(['ns/a']);
    expect(names(informer.list('third'))).toEqual(['third/d']);
    expect(informer.size).toBe(2);
    // An index added late is filled from the cache.
    informer.addIndexer('name', (o) => o.metadata?.name);
    expect(names(informer.byIndex('name', 'd'))).toEqual(['third/d']);
    expect(() => informer.byIndex('nope', 'x')).toThrow(/no index named "nope"/);
    await informer.stop();
  });

  it('hands a large cache to a late handler in batches that let timers run in between', async () => {
    const { server, informer } = setup();
    const n = HANDOVER_BATCH * 3 + 7;
    for (let i = 0; i < n; i++) server.put(cm(`o${i}`));
    informer.start();
    await informer.waitForSync();
    const seen: string[] = [];
    let timerFiredAfter: number | undefined;
    setImmediate(() => {
      timerFiredAfter = seen.length;
    });
    informer.addEventHandler({ add: (o) => void seen.push(o.metadata!.name!) });
    // Deleted before its turn: never handed over as an add.
    server.remove('ns', `o${n - 1}`);
    for (let i = 0; i < 10 && seen.length < n - 1; i++) await flushMicrotasks();
    expect(seen).toHaveLength(n - 1);
    expect(new Set(seen).size).toBe(n - 1);
    expect(timerFiredAfter).toBeGreaterThan(0);
    expect(timerFiredAfter).toBeLessThan(n - 1);
    await informer.stop();
  });

  it('logs a throwing or rejecting handler and keeps calling the others', async () => {
    const { server, informer, events, logLines } = setup();
    informer.addEventHandler({
      add: () => {
        throw new Error('sync boom');
      },
    });
    informer.addEventHandler({ add: async () => Promise.reject(new Error('async boom')) });
    const after: string[] = [];
    informer.addEventHandler({ add: (o) => void after.push(o.metadata!.name!) });
    server.put(cm('a'));
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    expect(events).toEqual(['add a']);
    expect(after).toEqual(['a']);
    const msgs = logLines.filter((l) => l.level === 'error').map((l) => l.msg);
    expect(msgs).toEqual(['informer handler threw', 'informer handler rejected']);
    await informer.stop();
  });

  it('normalises list Dates to the strings watch events carry', async () => {
    const { server, informer, events } = setup();
    server.put({
      ...cm('a'),
      metadata: { name: 'a', namespace: 'ns', creationTimestamp: '2025-03-01T10:00:00Z' as unknown as Date },
    });
    server.listTransform = (o) => ({
      ...o,
      metadata: { ...o.metadata, creationTimestamp: new Date(String(o.metadata!.creationTimestamp)) },
    });
    informer.start();
    await informer.waitForSync();
    expect(informer.get('a', 'ns')!.metadata!.creationTimestamp).toBe('2025-03-01T10:00:00Z');
    // The same object arriving by watch (strings, same resourceVersion) is not a change.
    server.active!.onEvent('MODIFIED', structuredClone(server.objects.get('ns/a')));
    await flushMicrotasks();
    expect(events).toEqual(['add a']);
    await informer.stop();
  });

  it('resyncs every cached object as update(old, old) on the period', async () => {
    const { clock, server, informer, events } = setup({ resyncPeriodMs: 60_000 });
    server.put(cm('a'));
    informer.start();
    await informer.waitForSync();
    await flushMicrotasks();
    await clock.advance(60_000);
    await clock.advance(60_000);
    expect(events).toEqual(['add a', 'update a 101->101', 'update a 101->101']);
    await informer.stop();
  });

  it('replays cached objects to a handler added after sync', async () => {
    const { server, informer } = setup();
    server.put(cm('a'));
    informer.start();
    await informer.waitForSync();
    const late: string[] = [];
    informer.addEventHandler({ add: (o) => void late.push(o.metadata!.name!) });
    await flushMicrotasks();
    expect(late).toEqual(['a']);
    await informer.stop();
  });

  it('waitForSync returns false when stopped before the first list succeeds', async () => {
    const { server, informer } = setup();
    server.listFailures.push(new Error('down'));
    informer.start();
    const waiting = informer.waitForSync();
    await flushMicrotasks();
    await informer.stop();
    expect(await waiting).toBe(false);
    const ac = new AbortController();
    ac.abort();
    expect(await informer.waitForSync(ac.signal)).toBe(false);
  });
});
