// spec.parametersFrom (issue 14) reads other Operations' outputs through the operator's identity, so the
// webhook makes the requester pass RBAC for what is read (ADR 0007): `get` on a named Operation,
// `list` on operations for "the latest" (also a velero Restore that leaves backupName to the template's
// default). Tenants by impersonation, the operator on exactly the CSV's RBAC, the real velero engine: the
// Restore it creates names the Backup the status says was read.

import { PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { startWorld, type World } from './harness.ts';

const restore = (extra: Record<string, unknown> = {}) => ({
  type: 'Restore',
  engine: 'velero',
  targetRef: { name: 'shop' },
  policy: { requireReady: false },
  ...extra,
});
const fromNightly = {
  parametersFrom: [{ operationRef: { name: 'nightly' }, outputs: [{ output: 'backupName' }] }],
};

describe('parametersFrom: a requester reads only what RBAC lets them read', () => {
  let w: World;
  let nightly: Operation;
  beforeAll(async () => {
    w = await startWorld();
    const [a] = w.namespaces;
    await w.instance(a, 'shop', { backup: 'velero', restore: 'velero' });
    await w.grantProfile('backup.velero', a);
    await w.grantProfile('restore.velero', a);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get', 'list'] },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['backup', 'restore'],
      },
    ]);
    // bob may run restores, but not read Operations.
    await w.grant('bob', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['restore'] },
    ]);
    await w.operation(w.as('alice'), a, 'nightly', {
      type: 'Backup',
      engine: 'velero',
      targetRef: { name: 'shop' },
    });
    const running = await w.waitFor('the velero Backup', async () => {
      const o = await w.getOperation(a, 'nightly');
      return o.status?.childRef ? o : undefined;
    });
    // Velero itself does not run here: complete its Backup as Velero would.
    await w.admin.request({
      method: 'PATCH',
      path: `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups/${running.status!.childRef!.name}`,
      contentType: PATCH_TYPES.merge,
      body: { status: { phase: 'Completed' } },
    });
    nightly = await w.waitFor('nightly Succeeded', async () => {
      const o = await w.getOperation(a, 'nightly');
      return o.status?.phase === 'Succeeded' ? o : undefined;
    });
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a Restore that leaves backupName to "the latest backup" when the requester may not list operations', async () => {
    const [a] = w.namespaces;
    const d = await w.denial(w.operation(w.as('bob'), a, 'bob-latest', restore()));
    expect(d.code).toBe(403);
    expect(d.causes).toEqual([
      {
        field: 'spec.parameters',
        message: expect.stringContaining('user "bob" may not list operations.ops.vworkspace.io in namespace'),
      },
    ]);
    expect(d.causes[0]?.message).toContain('leaving spec.parameters.backupName unset');
  });

  it('refuses an operationRef the requester may not get', async () => {
    const [a] = w.namespaces;
    const d = await w.denial(w.operation(w.as('bob'), a, 'bob-ref', restore(fromNightly)));
    expect(d.code).toBe(403);
    expect(d.causes).toEqual([
      {
        field: 'spec.parametersFrom[0].operationRef.name',
        message: expect.stringContaining('user "bob" may not get operations.ops.vworkspace.io/nightly'),
      },
    ]);
  });

  it('without backupName, restores the latest backup of the instance; status.inputs says which Operation was read', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'restore-latest', restore());
    const r = await w.waitFor('the velero Restore', async () => {
      const o = await w.getOperation(a, 'restore-latest');
      return o.status?.childRef ? o : undefined;
    });
    const backupName = nightly.status?.outputs?.backupName;
    expect(backupName).toBeTruthy();
    expect(r.status?.inputs).toEqual([
      expect.objectContaining({
        from: 'template velero-restore parametersFrom[0]',
        operation: 'nightly',
        uid: nightly.metadata.uid,
        type: 'Backup',
        engine: 'velero',
        parameters: { backupName },
      }),
    ]);
    const child = await w.admin.request<{ spec: { backupName: string } }>({
      method: 'GET',
      path: `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/restores/${r.status!.childRef!.name}`,
    });
    expect(child.spec.backupName).toBe(backupName);
  });

  it('admits an operationRef the requester may get', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'restore-ref', restore(fromNightly));
    const r = await w.waitFor('inputs recorded', async () => {
      const o = await w.getOperation(a, 'restore-ref');
      return o.status?.inputs ? o : undefined;
    });
    expect(r.status?.inputs?.[0]).toMatchObject({ from: 'spec.parametersFrom[0]', operation: 'nightly' });
  });
});
