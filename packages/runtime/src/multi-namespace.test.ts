import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { Informer } from './informer.ts';
import { KubeApiError } from './kube-client.ts';
import { multiNamespaceListerWatcher } from './multi-namespace.ts';
import { MemoryResource } from './testing.ts';

const obj = (namespace: string, name: string): KubernetesObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name },
});

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

function setup(namespaces: string[]) {
  const servers = new Map(namespaces.map((ns) => [ns, new MemoryResource<KubernetesObject>()]));
  // Each namespace's server has its own resourceVersion sequence, as a real stream would.
  [...servers.values()].forEach((s, i) => {
    s.rv = 100 * (i + 1);
  });
  const asked: string[] = [];
  const lw = multiNamespaceListerWatcher<KubernetesObject>(namespaces, (ns) => {
    asked.push(ns);
    return servers.get(ns)!;
  });
  const inf = new Informer<KubernetesObject>({
    name: 'cm',
    listerWatcher: lw,
    backoff: { initialMs: 1, maxMs: 2 },
  });
  return { servers, inf, asked };
}

describe('multiNamespaceListerWatcher', () => {
  it('lists and watches each namespace on its own, and the informer sees one stream', async () => {
    const { servers, inf, asked } = setup(['a', 'b', 'a']);
    servers.get('a')!.put(obj('a', 'one'));
    servers.get('b')!.put(obj('b', 'two'));
    expect(asked).toEqual(['a', 'b']);
    inf.start();
    try {
      await inf.waitForSync();
      expect(inf.keys().sort()).toEqual(['a/one', 'b/two']);
      await until(() => !!servers.get('a')!.active && !!servers.get('b')!.active);
      servers.get('b')!.put(obj('b', 'three'));
      await until(() => inf.get('three', 'b') !== undefined);
      servers.get('a')!.remove('a', 'one');
      await until(() => inf.get('one', 'a') === undefined);
    } finally {
      await inf.stop();
    }
  });

  it('resumes every namespace from its own resourceVersion after a watch ends', async () => {
    const { servers, inf } = setup(['a', 'b']);
    inf.start();
    try {
      await inf.waitForSync();
      await until(() => !!servers.get('a')!.active && !!servers.get('b')!.active);
      servers.get('a')!.put(obj('a', 'x'));
      await until(() => inf.get('x', 'a') !== undefined);
      // namespace a's stream ends (server timeout): both are watched again, each from its own version
      servers.get('a')!.active!.end();
      await until(() => servers.get('b')!.watches.length === 2 && !!servers.get('b')!.active);
      expect(servers.get('a')!.watches.at(-1)!.resourceVersion).toBe(String(servers.get('a')!.rv));
      expect(servers.get('b')!.watches.at(-1)!.resourceVersion).toBe('200');
      expect(servers.get('a')!.lists).toHaveLength(1);
    } finally {
      await inf.stop();
    }
  });

  it('relists every namespace when one says 410 Gone', async () => {
    const { servers, inf } = setup(['a', 'b']);
    inf.start();
    try {
      await inf.waitForSync();
      await until(() => !!servers.get('b')!.active);
      servers.get('b')!.put(obj('b', 'silent'), true);
      servers.get('b')!.active!.fail(new KubeApiError(410, 'Expired', 'too old', undefined));
      await until(() => inf.get('silent', 'b') !== undefined);
      expect(servers.get('a')!.lists).toHaveLength(2);
    } finally {
      await inf.stop();
    }
  });
});
