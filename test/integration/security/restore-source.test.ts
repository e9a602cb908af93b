// A Restore from spec.source (docs/disaster-recovery.md, ADR 0035), with the operator as its own process on
// exactly the CSV's RBAC and tenants by impersonation:
//   - the instance is gone: its owner restores it from the namespace's own backups with the `restore`
//     verb alone, and the Restore is judged on the instance its Backup recorded;
//   - a clone into another namespace copies the source's data (the release's Secrets among it), so it
//     needs the verb `clone` on the instance in the SOURCE namespace: a tenant who may restore in their
//     own namespace but not clone the source is refused at spec.source.namespace, and no Restore exists.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { childrenOf, completeVeleroChild, settled } from './support.ts';

const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const fromSource = (namespace: string) => ({
  type: 'Restore',
  engine: 'velero',
  targetRef: { name: 'shop' },
  source: { namespace },
});

describe('a Restore from spec.source: the instance gone, or a clone', () => {
  let w: World;
  let backups: string;
  let restores: string;
  let prod: string;
  let staging: string;
  let backupName: string;

  const complete = (collection: string, ns: string, name: string) =>
    completeVeleroChild(w, collection, ns, name);

  beforeAll(async () => {
    w = await startWorld();
    [prod, staging] = w.namespaces;
    backups = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`;
    restores = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/restores`;
    await w.grantProfile('backup.velero', prod);
    await w.grantProfile('restore.velero', prod);
    await w.grantProfile('restore.velero', staging);
    await w.instance(prod, 'shop', { backup: 'velero', restore: 'velero' });
    const operate = (verbs: string[]) => [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs },
    ];
    // alice runs prod; bea runs staging; carol runs staging and may clone prod's shop.
    await w.grant('alice', prod, operate(['backup', 'restore']));
    await w.grant('bea', staging, operate(['restore']));
    await w.grant('carol', staging, operate(['restore']));
    await w.grant('carol', prod, [
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['clone'] },
    ]);
    await w.operation(w.as('alice'), prod, 'nightly', {
      type: 'Backup',
      engine: 'velero',
      targetRef: { name: 'shop' },
    });
    backupName = (await complete(backups, prod, 'nightly')).metadata!.name!;
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('the Backup records the instance: its release and its restore capability', async () => {
    const b = await w.admin.request<KubernetesObject>({ method: 'GET', path: `${backups}/${backupName}` });
    expect(b.metadata?.labels).toMatchObject({
      'ops.vworkspace.io/operation-namespace': prod,
      'ops.vworkspace.io/instance': 'shop',
      'ops.vworkspace.io/release': 'shop',
    });
    expect(b.metadata?.annotations).toMatchObject({ 'ops.vworkspace.io/restore': 'velero' });
  });

  it('refuses a clone to a tenant without the verb clone on the source instance, at spec.source.namespace', async () => {
    const d = await w.denial(w.operation(w.as('bea'), staging, 'steal', fromSource(prod)));
    expect(d.code).toBe(403);
    expect(d.causes).toEqual([
      {
        field: 'spec.source.namespace',
        message: expect.stringContaining(
          `user "bea" may not clone applicationinstances.apps.vworkspace.io/shop in namespace ${prod}`,
        ),
      },
    ]);
    const seen = await w.admin.request<{ items?: unknown[] }>({
      method: 'GET',
      path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${staging}/operations`,
    });
    expect(seen.items ?? []).toEqual([]);
  });

  it('clones for a tenant who may: the newest Backup of shop made in prod, mapped into staging', async () => {
    await w.operation(w.as('carol'), staging, 'clone', fromSource(prod));
    const out = await settled(w, staging, 'clone');
    expect(out.op.status?.phase, JSON.stringify(out.op.status)).toBe('Running');
    const [r] = await childrenOf(w, restores, 'clone');
    expect((r as KubernetesObject & { spec: Record<string, unknown> }).spec).toMatchObject({
      backupName,
      includedNamespaces: [prod],
      namespaceMapping: { [prod]: staging },
    });
    await complete(restores, staging, 'clone');
  });

  it('brings the instance back into its own namespace on the restore verb alone, once it is gone', async () => {
    await w.admin.request({ method: 'DELETE', path: `${APPS}/namespaces/${prod}/applicationinstances/shop` });
    await w.operation(w.as('alice'), prod, 'bring-back', fromSource(prod));
    const out = await settled(w, prod, 'bring-back');
    expect(out.op.status?.phase, JSON.stringify(out.op.status)).toBe('Running');
    expect(out.accepted).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
    const [r] = await childrenOf(w, restores, 'bring-back');
    const spec = (r as KubernetesObject & { spec: Record<string, unknown> }).spec;
    expect(spec).toMatchObject({ backupName, includedNamespaces: [prod] });
    expect(spec).not.toHaveProperty('namespaceMapping');
    await complete(restores, prod, 'bring-back');
  });
});
