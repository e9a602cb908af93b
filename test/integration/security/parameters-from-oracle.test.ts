// Hole 5 of issue 28: an existence and outcome oracle. spec.parametersFrom.operationRef by a user with only
// `create operations` (and the type verb) was answered with "does not exist", "ended Failed", the source's
// template and output names, next to the refusal of `get`. Now a requester who may not `get` the named
// Operation hears only that: the same denial whether it exists, failed or succeeded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';

const restoreFrom = (source: string) => ({
  type: 'Restore',
  engine: 'velero',
  targetRef: { name: 'shop' },
  policy: { requireReady: false },
  parametersFrom: [{ operationRef: { name: source }, outputs: [{ output: 'backupName' }] }],
});

describe('parametersFrom.operationRef tells nothing to a requester who may not get the Operation', () => {
  let w: World;
  let a: string;
  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { backup: 'velero', restore: 'velero' });
    await w.grantProfile('backup.velero', a);
    await w.grant('mallory', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['restore'] },
    ]);
    // Someone else's Backup, running.
    await w.operation(w.admin, a, 'secret-backup', {
      type: 'Backup',
      engine: 'velero',
      targetRef: { name: 'shop' },
    });
    await w.waitFor(
      'the velero Backup',
      async () => (await w.getOperation(a, 'secret-backup')).status?.childRef,
    );
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('answers the same for an Operation that exists and one that does not', async () => {
    const mallory = w.as('mallory');
    const existing = await w.denial(w.operation(mallory, a, 'probe-1', restoreFrom('secret-backup')));
    const missing = await w.denial(w.operation(mallory, a, 'probe-2', restoreFrom('no-such-backup')));
    for (const d of [existing, missing]) {
      expect(d.code).toBe(403);
      expect(d.message).not.toMatch(/does not exist|ended Failed|has no output|template/);
    }
    const strip = (m: string) => m.replaceAll('secret-backup', 'X').replaceAll('no-such-backup', 'X');
    expect(strip(existing.message)).toBe(strip(missing.message));
    expect(existing.causes.map((c) => c.field)).toEqual(missing.causes.map((c) => c.field));
  });
});
