import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { InformerFactory } from './informer-factory.ts';
import type { KubeClient } from './kube-client.ts';

const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
  users: [{ name: 'u', token: 't' }],
  contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
  currentContext: 'x',
});
const client: KubeClient = {
  request: () => Promise.reject(new Error('no API server in this test')),
};
const secrets = { group: '', version: 'v1', plural: 'secrets' };

describe('InformerFactory', () => {
  it('shares an informer per scope: the same namespaces in any order share, other namespaces and all namespaces do not', () => {
    const f = new InformerFactory({ kc, client });
    const ab = f.informer(secrets, { namespaces: ['a', 'b'] });
    expect(f.informer(secrets, { namespaces: ['b', 'a', 'b'] })).toBe(ab);
    expect(f.informer(secrets, { namespaces: ['a'] })).not.toBe(ab);
    expect(f.informer(secrets)).not.toBe(ab);
    expect(f.informer(secrets, { namespaces: [] })).toBe(f.informer(secrets));
    expect(f.informers).toHaveLength(3);
  });

  it('never serves a metadata-only informer for a full request, nor the other way round', () => {
    const f = new InformerFactory({ kc, client });
    const req = { labelSelector: 'owner=helm', namespaces: ['a'] };
    const meta = f.metadataInformer(secrets, req);
    const full = f.informer(secrets, req);
    expect(meta).not.toBe(full);
    expect(f.metadataInformer(secrets, req)).toBe(meta);
    expect(meta.name).toBe('secrets.metadata');
    expect(f.informers).toHaveLength(2);
  });

  it('scopes namespaced kinds to WATCH_NAMESPACE by default, never a cluster-scoped kind', async () => {
    const paths: string[] = [];
    const recording: KubeClient = {
      request: (req) => {
        paths.push(req.path);
        return Promise.reject(new Error('no API server in this test'));
      },
    };
    const f = new InformerFactory({ kc, client: recording, namespaces: ['team-own'] });
    const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
    const bindings = f.informer({ ...rbac, plural: 'rolebindings' });
    const clusterBindings = f.informer({ ...rbac, plural: 'clusterrolebindings' }, { clusterScoped: true });
    bindings.start();
    clusterBindings.start();
    for (let i = 0; i < 100 && paths.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await Promise.all([bindings.stop(), clusterBindings.stop()]);
    expect(paths.map((p) => p.split('?')[0])).toEqual(
      expect.arrayContaining([
        '/apis/rbac.authorization.k8s.io/v1/namespaces/team-own/rolebindings',
        '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      ]),
    );
    expect(paths.some((p) => p.includes('/namespaces/team-own/clusterrolebindings'))).toBe(false);
  });
});
