// The runtime's scale features against the shared real API server: informers shared per kind, frozen
// cached objects, indexes kept current by real list and watch, a large cache handed to a late handler
// in batches that let other work run, and the REST client's keep-alive pool and QPS budget.

import type { KubernetesObject } from '@kubernetes/client-node';
import { HANDOVER_BATCH, InformerFactory, RestClient } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createNamespace,
  eventually,
  loadKubeConfig,
  randomName,
  restClient,
  startTcpProxy,
  type TcpProxy,
} from './support.ts';

interface ConfigMap extends KubernetesObject {
  data?: Record<string, string>;
}

let admin: RestClient;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(() => {
  admin = restClient(inject('kubeconfig'));
});

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
});

const cms = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;

function configMap(name: string, label: string, owner: string): ConfigMap {
  return { metadata: { name, labels: { test: label } }, data: { owner } };
}

describe('shared informers on a real API server', () => {
  it('share one informer per kind and selector, hand out frozen objects and keep indexes current through watch events', async () => {
    const label = randomName('idx');
    const [a, b] = [await createNamespace(admin), await createNamespace(admin)];
    const factory = new InformerFactory({ kc: loadKubeConfig(inject('kubeconfig')), client: admin });
    const resource = { group: '', version: 'v1', plural: 'configmaps' };
    const informer = factory.informer<ConfigMap>(resource, { labelSelector: `test=${label}` });
    expect(factory.informer<ConfigMap>(resource, { labelSelector: `test=${label}` })).toBe(informer);
    expect(factory.informer<ConfigMap>(resource)).not.toBe(informer);
    expect(factory.informers).toHaveLength(2);
    informer.addIndexer('owner', (o) => o.data?.owner);
    cleanup.push(() => informer.stop());

    await admin.request({ method: 'POST', path: cms(a), body: configMap('one', label, 'x') });
    await admin.request({ method: 'POST', path: cms(b), body: configMap('two', label, 'x') });
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    const names = (os: ConfigMap[]) => os.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();
    expect(names(informer.byIndex('owner', 'x'))).toEqual([`${a}/one`, `${b}/two`].sort());
    expect(names(informer.list(a))).toEqual([`${a}/one`]);

    const listed = informer.get('one', a)!;
    expect(Object.isFrozen(listed)).toBe(true);
    expect(() => {
      listed.data!.owner = 'y';
    }).toThrow(TypeError);

    // Changes arrive by watch: the index follows them.
    await admin.request({
      method: 'PATCH',
      path: `${cms(a)}/one`,
      body: { data: { owner: 'y' } },
      contentType: 'application/merge-patch+json',
    });
    await admin.request({ method: 'POST', path: cms(a), body: configMap('three', label, 'x') });
    await admin.request({ method: 'DELETE', path: `${cms(b)}/two` });
    await eventually('the index to follow the watch', () =>
      names(informer.byIndex('owner', 'x')).join() === `${a}/three` ? true : undefined,
    );
    expect(names(informer.byIndex('owner', 'y'))).toEqual([`${a}/one`]);
    const watched = informer.get('one', a)!;
    expect(watched).not.toBe(listed);
    expect(Object.isFrozen(watched.data)).toBe(true);
  });

  it('hands a cache of more than one batch to a late handler, letting timers run between batches', async () => {
    const label = randomName('bulk');
    const ns = await createNamespace(admin);
    const n = HANDOVER_BATCH * 2 + 50;
    const names = Array.from({ length: n }, (_, i) => `cm-${i}`);
    for (let i = 0; i < n; i += 50)
      await Promise.all(
        names
          .slice(i, i + 50)
          .map((name) => admin.request({ method: 'POST', path: cms(ns), body: configMap(name, label, 'z') })),
      );
    const factory = new InformerFactory({ kc: loadKubeConfig(inject('kubeconfig')), client: admin });
    const informer = factory.informer<ConfigMap>(
      { group: '', version: 'v1', plural: 'configmaps', namespace: ns },
      { labelSelector: `test=${label}` },
    );
    cleanup.push(() => informer.stop());
    informer.start();
    await informer.waitForSync();
    expect(informer.size).toBe(n);

    const seen: string[] = [];
    let seenWhenTimerRan: number | undefined;
    setImmediate(() => {
      seenWhenTimerRan = seen.length;
    });
    informer.addEventHandler({ add: (o) => void seen.push(o.metadata?.name ?? '') });
    await eventually('every object handed over', () => (seen.length === n ? true : undefined));
    expect(new Set(seen)).toEqual(new Set(names));
    expect(seenWhenTimerRan).toBe(HANDOVER_BATCH);
  });
});

describe('RestClient transport on a real API server', () => {
  let proxy: TcpProxy;

  beforeAll(async () => {
    const kc = loadKubeConfig(inject('kubeconfig'));
    proxy = await startTcpProxy(kc.getCurrentCluster()!.server);
    cleanup.push(() => proxy.close());
  });

  it('sends many requests over one keep-alive connection', async () => {
    const client = new RestClient(loadKubeConfig(inject('kubeconfig'), proxy.server), { qps: 0 });
    cleanup.push(() => client.close());
    const before = proxy.accepted;
    for (let i = 0; i < 40; i++) await client.request({ method: 'GET', path: '/api/v1/namespaces/default' });
    expect(proxy.accepted - before).toBe(1);
  });

  it('makes requests beyond the burst wait for the QPS budget, and only those', async () => {
    const waited: string[] = [];
    const done: string[] = [];
    const client = new RestClient(loadKubeConfig(inject('kubeconfig'), proxy.server), {
      qps: 2,
      burst: 3,
      metrics: {
        rateLimited: (verb) => waited.push(verb),
        request: (verb, code) => done.push(`${verb} ${code}`),
      },
    });
    cleanup.push(() => client.close());
    await Promise.all(
      Array.from({ length: 5 }, () => client.request({ method: 'GET', path: '/api/v1/namespaces/default' })),
    );
    expect(waited).toEqual(['GET', 'GET']);
    expect(done).toEqual(Array(5).fill('GET 200'));
  });
});
