// Item 4 of the threat model: a Velero Restore runs with the operator's rights in the Velero namespace. A
// tenant must restore only backups made for their own namespace (the operator labels each Backup it
// creates with the Operation's namespace and instance), only into that namespace, and never cluster-scoped
// objects through the built-in template: not another team's backup, not an admin's full-cluster backup.

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { childrenOf, completeVeleroChild, settled } from './support.ts';

const restore = (backupName: string, extra: Record<string, unknown> = {}) => ({
  type: 'Restore',
  engine: 'velero',
  targetRef: { name: 'shop' },
  parameters: { backupName, ...extra },
  policy: { requireReady: false },
});
const backup = { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } };

describe('a tenant restores only backups made for their namespace, into it', () => {
  let w: World;
  let backups: string;
  let restores: string;
  const complete = (collection: string, ns: string, name: string) =>
    completeVeleroChild(w, collection, ns, name);

  beforeAll(async () => {
    w = await startWorld();
    backups = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`;
    restores = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/restores`;
    for (const [ns, user] of [
      [w.namespaces[0], 'alice'],
      [w.namespaces[1], 'bea'],
    ] as const) {
      await w.instance(ns, 'shop', { backup: 'velero', restore: 'velero' });
      await w.grantProfile('backup.velero', ns);
      await w.grantProfile('restore.velero', ns);
      await w.grant(user, ns, [
        { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
        {
          apiGroups: ['apps.vworkspace.io'],
          resources: ['applicationinstances'],
          verbs: ['backup', 'restore'],
        },
      ]);
    }
    // An admin's full-cluster backup, made with the velero CLI: no namespace label.
    await w.admin.request({
      method: 'POST',
      path: backups,
      body: { apiVersion: 'velero.io/v1', kind: 'Backup', metadata: { name: 'admin-full' }, spec: {} },
    });
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('labels every Backup with the namespace and instance it was made for, and restores it into that namespace only', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'nightly', backup);
    const b = await complete(backups, a, 'nightly');
    expect(b.metadata?.labels).toMatchObject({
      'ops.vworkspace.io/operation-namespace': a,
      'ops.vworkspace.io/instance': 'shop',
    });
    await w.operation(
      w.as('alice'),
      a,
      'roll-back',
      restore(b.metadata!.name!, { existingResourcePolicy: 'update' }),
    );
    const out = await settled(w, a, 'roll-back');
    expect(out.op.status?.phase).toBe('Running');
    const [r] = await childrenOf(w, restores, 'roll-back');
    const spec = (r as KubernetesObject & { spec: Record<string, unknown> }).spec;
    expect(spec).toMatchObject({
      backupName: b.metadata?.name,
      includedNamespaces: [a],
      existingResourcePolicy: 'update',
    });
    expect(spec).not.toHaveProperty('namespaceMapping');
    expect(spec).not.toHaveProperty('includeClusterResources');
    await complete(restores, a, 'roll-back'); // a running Restore would hold back every later Operation on shop
  });

  it.each([
    ["another team's backup", 'team-b'],
    ["an admin's full-cluster backup", 'admin'],
  ])('refuses %s with BackupNotAllowed and creates no Restore', async (_what, whose) => {
    const [a, b] = w.namespaces;
    let name = 'admin-full';
    if (whose === 'team-b') {
      await w.operation(w.as('bea'), b, 'bea-nightly', backup);
      name = (await complete(backups, b, 'bea-nightly')).metadata!.name!;
    }
    const opName = `steal-${whose}`;
    await w.operation(w.as('alice'), a, opName, restore(name));
    const out = await settled(w, a, opName);
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'BackupNotAllowed' });
    expect(out.accepted?.message).toContain(`no velero.io Backup ${name} made for namespace ${a}`);
    expect(await childrenOf(w, restores, opName)).toEqual([]);
  });

  it('does not offer cluster-scoped objects in the built-in template: refused at spec.parameters.includeClusterResources', async () => {
    const [a] = w.namespaces;
    const d = await w.denial(
      w.operation(
        w.as('alice'),
        a,
        'cluster-restore',
        restore('admin-full', { includeClusterResources: true }),
      ),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters.includeClusterResources']);
  });
});
