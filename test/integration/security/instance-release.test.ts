// Item 8 of the threat model: an ApplicationInstance describes a release in its OWN namespace. A tenant who
// may create instances in team a must not learn about (or operate through) team b's Helm release by naming
// it in spec.release.namespace: the webhook refuses it, and the controller refuses to read another
// namespace's release for an instance that got past admission (created before the webhook existed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import { startWorld, type World } from './harness.ts';
import { createInstance, unselected } from './support.ts';

const APPS = '/apis/apps.vworkspace.io/v1alpha1';

describe('an ApplicationInstance reads only the release of its own namespace', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
    const [a, b] = w.namespaces;
    await w.installRelease(b, 'payroll');
    await w.grant('alice', a, [
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['create', 'get', 'update', 'patch'],
      },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it("refuses an instance naming another namespace's release, at spec.release.namespace", async () => {
    const [a, b] = w.namespaces;
    const d = await w.denial(createInstance(w.as('alice'), a, 'spy', { name: 'payroll', namespace: b }));
    expect(d.causes.map((c) => c.field)).toEqual(['spec.release.namespace']);
    expect(d.message).toContain(`the instance's own namespace ${a}`);
  });

  it('admits the own namespace, spelt out or left out, and refuses an update that points elsewhere', async () => {
    const [a, b] = w.namespaces;
    const alice = w.as('alice');
    await createInstance(alice, a, 'own', { name: 'own', namespace: a });
    await createInstance(alice, a, 'implicit', { name: 'implicit' });
    const d = await w.denial(
      alice.request({
        method: 'PATCH',
        path: `${APPS}/namespaces/${a}/applicationinstances/implicit`,
        contentType: 'application/merge-patch+json',
        body: { spec: { release: { namespace: b } } },
      }),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.release.namespace']);
  });

  it('does not read the other namespace for an instance admitted without the webhook: Ready=False and why', async () => {
    const [a, b] = w.namespaces;
    // Without the world label the webhooks do not judge namespace a: the instance predates them.
    await unselected(w, a, () => createInstance(w.admin, a, 'legacy-spy', { name: 'payroll', namespace: b }));
    const instance = await w.waitFor('legacy-spy to get a Ready condition', async () => {
      const i = await w.admin.request<ApplicationInstance>({
        method: 'GET',
        path: `${APPS}/namespaces/${a}/applicationinstances/legacy-spy`,
      });
      return i.status?.conditions?.some((c) => c.type === 'Ready') ? i : undefined;
    });
    const ready = instance.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.reason).toBe('ReleaseNamespaceForbidden');
    expect(ready?.message).toContain('spec.release.namespace');
    expect(instance.status?.release).toBeUndefined();
  });
});
