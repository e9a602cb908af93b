// The supervised informer against a real kube-apiserver + etcd that this file starts for itself
// (it restarts the API server, which the shared control plane must never do).
//
// Proves: events keep arriving after the API server restarts; after a network partition during
// which objects changed and etcd was compacted, the informer gets a real 410 Gone from the server,
// relists, reports exactly what it missed (including the delete), and keeps delivering.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { RestClient } from '@vworkspace/runtime';
import { Informer, kubeListerWatcher } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../../../hack/lib/controlplane.ts';
import {
  createNamespace,
  eventually,
  loadKubeConfig,
  restClient,
  startTcpProxy,
  type TcpProxy,
} from './support.ts';

type ConfigMap = V1ConfigMap;

let cp: ControlPlane;
let admin: RestClient;

beforeAll(async () => {
  cp = await startControlPlane({ crds: false });
  admin = restClient(cp.kubeconfigPath);
});

afterAll(async () => {
  await cp?.stop();
});

function cmApi(ns: string) {
  const base = `/api/v1/namespaces/${ns}/configmaps`;
  return {
    create: (name: string, data: Record<string, string> = {}) =>
      admin.request<ConfigMap>({
        method: 'POST',
        path: base,
        body: { metadata: { name, labels: { app: 'rt' } }, data },
      }),
    update: (name: string, data: Record<string, string>) =>
      admin.request<ConfigMap>({
        method: 'PATCH',
        path: `${base}/${name}`,
        body: { data },
        contentType: 'application/merge-patch+json',
      }),
    remove: (name: string) => admin.request({ method: 'DELETE', path: `${base}/${name}` }),
  };
}

/** etcd's current revision, then a physical compaction at it: older resourceVersions are gone. */
async function compactEtcd(): Promise<number> {
  const range = await fetch(`${cp.etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: 'AA==' }),
  });
  const revision = Number(((await range.json()) as { header: { revision: string } }).header.revision);
  const res = await fetch(`${cp.etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision: String(revision), physical: true }),
  });
  expect(res.ok).toBe(true);
  return revision;
}

function recordingInformer(ns: string, server?: string) {
  const kc = loadKubeConfig(cp.kubeconfigPath, server);
  const informer = new Informer<ConfigMap>({
    name: 'configmaps',
    listerWatcher: kubeListerWatcher<ConfigMap>(kc, {
      group: '',
      version: 'v1',
      plural: 'configmaps',
      namespace: ns,
    }),
    labelSelector: 'app=rt',
    // Short backoff keeps the test quick; the algorithm is the production one.
    backoff: { initialMs: 200, maxMs: 2_000 },
  });
  const events: string[] = [];
  informer.addEventHandler({
    add: (o) => void events.push(`add ${o.metadata?.name}`),
    update: (_o, n) => void events.push(`update ${n.metadata?.name} ${JSON.stringify(n.data ?? {})}`),
    delete: (o) => void events.push(`delete ${o.metadata?.name}`),
  });
  return { informer, events };
}

describe('Informer on a real API server', () => {
  it('keeps delivering add/update/delete after the API server restarts', async () => {
    const ns = await createNamespace(admin);
    const cms = cmApi(ns);
    await cms.create('before', { v: '1' });
    await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: { metadata: { name: 'unlabelled' } },
    });
    const { informer, events } = recordingInformer(ns);
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    await eventually('initial add', () => events.includes('add before'));
    // The label selector reaches the server: the unlabelled one is not cached.
    expect(informer.keys()).toEqual([`${ns}/before`]);
    // Timestamps are strings, as in watch events.
    expect(typeof informer.get('before', ns)?.metadata?.creationTimestamp).toBe('string');

    await cp.restartApiServer();

    await cms.create('after', { v: '1' });
    await cms.update('before', { v: '2' });
    await cms.remove('after');
    await eventually(
      'events after the restart',
      () =>
        events.includes('add after') &&
        events.includes('update before {"v":"2"}') &&
        events.includes('delete after'),
      60_000,
    );
    expect(informer.hasSynced()).toBe(true);
    expect(informer.keys()).toEqual([`${ns}/before`]);
    expect(informer.get('before', ns)?.data).toEqual({ v: '2' });
    await informer.stop();
  });

  it('after a partition with missed changes gets 410 Gone from the server, relists, reports the misses, keeps going', async () => {
    const ns = await createNamespace(admin);
    const cms = cmApi(ns);
    await cms.create('keep', { v: '1' });
    await cms.create('gone', { v: '1' });
    await cms.create('changed', { v: '1' });
    let proxy: TcpProxy | undefined;
    try {
      proxy = await startTcpProxy(cp.server);
      const { informer, events } = recordingInformer(ns, proxy.server);
      informer.start();
      await informer.waitForSync();
      await eventually('initial adds', () => events.length === 3);
      const rvBefore = Number(informer.resourceVersion);

      // The operator is cut off while the world changes.
      proxy.cut();
      await cms.remove('gone');
      await cms.update('changed', { v: '2' });
      await cms.create('new', { v: '1' });
      // Make the informer's resourceVersion unservable: etcd compacted past it, and the API
      // server's watch cache (rebuilt by the restart) starts after it.
      expect(await compactEtcd()).toBeGreaterThan(rvBefore);
      await cp.restartApiServer();
      events.length = 0;
      proxy.heal();

      await eventually('relist after 410', () => informer.stats.gone >= 1, 60_000);
      await eventually(
        'the missed changes',
        () =>
          events.includes('delete gone') &&
          events.includes('update changed {"v":"2"}') &&
          events.includes('add new'),
        60_000,
      );
      // Relist reports each difference once and nothing that did not change.
      expect(events.filter((e) => e.startsWith('delete')).sort()).toEqual(['delete gone']);
      expect(events).not.toContain('add keep');
      expect(informer.keys().sort()).toEqual([`${ns}/changed`, `${ns}/keep`, `${ns}/new`]);

      await cms.create('later');
      await eventually('events after the relist', () => events.includes('add later'), 60_000);
      await informer.stop();
    } finally {
      await proxy?.close();
    }
  });
});
