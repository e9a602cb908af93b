// Hole 2 of issue 28 (instance aliasing): RBAC grants day-2 verbs per ApplicationInstance name, and the
// operator acts on the Helm release the instance names. A tenant allowed to restore and upgrade only her own
// instance `mine` must not reach another team's release `shop` in the same namespace by pointing `mine` at
// it (spec.release.name: shop): her Restore would restore shop's backup selection, her Upgrade would upgrade
// shop. An instance may only name a release no other instance of the namespace names: the webhook refuses
// the second one at the field, and for one that got past admission the controller gives the younger
// instance Ready=False/ReleaseClaimed and refuses every Operation on it (Accepted=False/TargetReleaseClaimed),
// creating nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { childrenOf, getInstance, instanceWithReady, jobsIn, settled, unselected } from './support.ts';

const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const CAPABILITIES = { restore: 'velero', upgrade: 'helm' };

describe("an instance cannot borrow another instance's release", () => {
  let w: World;
  let ns: string;
  const mallory = () => w.as('mallory');
  const repoint = (name: string) =>
    mallory().request({
      method: 'PATCH',
      path: `${APPS}/namespaces/${ns}/applicationinstances/mine`,
      contentType: 'application/merge-patch+json',
      body: { spec: { release: { name } } },
    });

  beforeAll(async () => {
    w = await startWorld({ env: { RELATED_IMAGE_HELM: 'registry.example.com/helm@sha256:0' } });
    ns = w.namespaces[0];
    await w.installRelease(ns, 'shop');
    await w.installRelease(ns, 'mine');
    await w.instance(ns, 'shop', CAPABILITIES);
    // `shop` is the older one: creation times have a second's resolution (a tie goes to the first name).
    const created = Date.parse(String((await getInstance(w, ns, 'shop')).metadata.creationTimestamp));
    await w.waitFor('the next second', async () => Date.now() >= created + 1000);
    await w.instance(ns, 'mine', CAPABILITIES);
    await w.grantProfile('restore.velero', ns);
    await w.grantProfile('upgrade.helm', ns);
    // shop's backup, as a Backup Operation of this namespace labels it.
    await w.admin.request({
      method: 'POST',
      path: `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`,
      body: {
        apiVersion: 'velero.io/v1',
        kind: 'Backup',
        metadata: {
          name: 'shop-nightly',
          labels: { 'ops.vworkspace.io/operation-namespace': ns, 'ops.vworkspace.io/instance': 'shop' },
        },
        spec: {},
      },
    });
    // Mallory: everything on her own instance `mine`, nothing on `shop`.
    await w.grant('mallory', ns, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        resourceNames: ['mine'],
        verbs: ['get', 'patch', 'update', 'restore', 'upgrade'],
      },
    ]);
    await instanceWithReady(w, ns, 'shop', 'ReleaseDeployed');
    await instanceWithReady(w, ns, 'mine', 'ReleaseDeployed');
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses pointing an instance at a release another instance names, at spec.release.name', async () => {
    const d = await w.denial(repoint('shop'));
    expect(d.causes.map((c) => c.field)).toEqual(['spec.release.name']);
    expect(d.message).toContain('ApplicationInstance shop');
    expect((await getInstance(w, ns, 'mine')).spec.release.name).toBe('mine');
  });

  it('gives an aliasing instance admitted without the webhook Ready=False/ReleaseClaimed, runs nothing on it, and says why on the instance', async () => {
    await unselected(w, ns, () =>
      w.admin.request({
        method: 'PATCH',
        path: `${APPS}/namespaces/${ns}/applicationinstances/mine`,
        contentType: 'application/merge-patch+json',
        body: { spec: { release: { name: 'shop' } } },
      }),
    );
    const mine = await instanceWithReady(w, ns, 'mine', 'ReleaseClaimed');
    const ready = mine.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.message).toContain('ApplicationInstance shop');
    expect(mine.status?.release).toBeUndefined();
    // The older instance keeps its release.
    expect(
      (await getInstance(w, ns, 'shop')).status?.conditions?.find((c) => c.type === 'Ready'),
    ).toMatchObject({ status: 'True', reason: 'ReleaseDeployed' });

    // The operator's cache has seen the change (the instance says so): Operations on `mine` now.
    await w.operation(mallory(), ns, 'restore-shop', {
      type: 'Restore',
      engine: 'velero',
      targetRef: { name: 'mine' },
      parameters: { backupName: 'shop-nightly' },
      policy: { requireReady: false },
    });
    await w.operation(mallory(), ns, 'upgrade-shop', {
      type: 'Upgrade',
      engine: 'helm',
      targetRef: { name: 'mine' },
      parameters: { version: '1.0.1' },
      policy: { requireReady: false },
    });
    for (const name of ['restore-shop', 'upgrade-shop']) {
      const out = await settled(w, ns, name);
      expect(out.op.status?.phase).toBe('Failed');
      expect(out.accepted).toMatchObject({ status: 'False', reason: 'TargetReleaseClaimed' });
      expect(out.accepted?.message).toContain('ApplicationInstance shop');
    }
    expect(
      await childrenOf(w, `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/restores`, 'restore-shop'),
    ).toEqual([]);
    expect(await childrenOf(w, jobsIn(ns), 'upgrade-shop')).toEqual([]);
  });

  it('re-reads the release for the refused instance when the instance that claims it goes', async () => {
    // The refused instances are found by an index on their Ready reason when another instance changes or
    // goes; nothing else (no resync) would evaluate `mine` again.
    await w.admin.request({ method: 'DELETE', path: `${APPS}/namespaces/${ns}/applicationinstances/shop` });
    const mine = await instanceWithReady(w, ns, 'mine', 'ReleaseDeployed');
    expect(mine.status?.release).toBeDefined();
  });
});
