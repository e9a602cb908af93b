import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  aRequest,
  causesOf,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import type { AccessCheck } from './decision.ts';
import { checkRetentionAccess, retentionAccess, retentionProblems } from './retention.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';

const snapshotCron = (retention: unknown) =>
  aCronOperation({ retention }, { engine: 'snapshot' }).spec as Record<string, unknown>;
const veleroCron = (retention: unknown) => aCronOperation({ retention }).spec as Record<string, unknown>;

describe('spec.retention: the policy', () => {
  it('has no problem without a retention, nor with a good one', () => {
    expect(retentionProblems(aCronOperation().spec)).toEqual([]);
    expect(retentionProblems(veleroCron({ keepLast: 3, keepDaily: 0, maxAge: '720h' }))).toEqual([]);
  });

  it('names each bad field under spec.retention', () => {
    const problems = retentionProblems(veleroCron({ keepLast: -1, keepWeekly: 1.5, maxAge: '30d' }));
    expect(problems.map((p) => p.field)).toEqual([
      'spec.retention.keepLast',
      'spec.retention.keepWeekly',
      'spec.retention.maxAge',
    ]);
    expect(problems[2]?.message).toContain('720h');
    expect(problems.every((p) => p.kind === 'invalid')).toBe(true);
  });

  it('refuses a retention on a type other than Backup, and on engines other than velero and snapshot', () => {
    const restore = aCronOperation({ retention: { keepLast: 1 } }, { type: 'Restore' }).spec;
    const [r] = retentionProblems(restore);
    expect(retentionProblems(restore)).toHaveLength(1);
    expect(r?.field).toBe('spec.retention');
    expect(r?.message).toContain('this one runs Restore');
    const volsync = aCronOperation({ retention: { keepLast: 1 } }, { engine: 'volsync' }).spec;
    const [p] = retentionProblems(volsync);
    expect(p?.field).toBe('spec.retention');
    expect(p?.message).toContain('parameters.retain');
  });
});

describe('spec.retention: who may set it', () => {
  it("asks the requester for what the operator will do: a DeleteBackupRequest in Velero's namespace", () => {
    expect(retentionAccess(veleroCron({ keepLast: 1 }), { veleroNamespace: 'backups' })).toEqual([
      { verb: 'create', resource: 'deletebackuprequests', namespace: 'backups' },
    ]);
    expect(retentionAccess(veleroCron({ keepLast: 1 }), {})).toEqual([
      { verb: 'create', resource: 'deletebackuprequests', namespace: 'velero' },
    ]);
  });

  it('or a VolumeSnapshot delete in the namespace; nothing without a retention', () => {
    expect(retentionAccess(snapshotCron({ keepLast: 1 }), {})).toEqual([
      { verb: 'delete', resource: 'volumesnapshots' },
    ]);
    expect(retentionAccess(aCronOperation().spec, {})).toEqual([]);
  });

  it('refuses at spec.retention when the review says no, retries when it could not be made', () => {
    const denied = checkRetentionAccess(snapshotCron({ keepLast: 1 }), 'mallory', 'team-a', {
      access: { 'volumesnapshots:delete/*': { ok: true, value: { allowed: false } } },
    });
    expect(denied).toEqual([
      expect.objectContaining({
        field: 'spec.retention',
        kind: 'forbidden',
        message: expect.stringContaining(
          'user "mallory" may not delete volumesnapshots.snapshot.storage.k8s.io in namespace team-a',
        ),
      }),
    ]);
    const failed = checkRetentionAccess(snapshotCron({ keepLast: 1 }), 'mallory', 'team-a', { access: {} });
    expect(failed.map((p) => p.kind)).toEqual(['retry']);
  });
});

describe('spec.retention in CronOperation admission', () => {
  const snapshotBackup = (retention: unknown) =>
    aRequest(aCronOperation({ retention }, { engine: 'snapshot' }), { user: 'mallory' });
  const retentionCheck: AccessCheck = { verb: 'delete', resource: 'volumesnapshots' };

  it('reviews the requester only when the spec carries a retention', () => {
    expect(schedulerNeeds('CronOperation', snapshotBackup({ keepLast: 1 })).access).toContainEqual(
      retentionCheck,
    );
    expect(schedulerNeeds('CronOperation', aRequest(aCronOperation())).access).not.toContainEqual(
      retentionCheck,
    );
  });

  it('refuses a requester who may not delete VolumeSnapshots with 403 at spec.retention', () => {
    const facts = someFacts({
      checks: [{ verb: 'backup', name: 'shop' }, retentionCheck],
      allow: (c) => ({ ok: true, value: { allowed: c.resource !== 'volumesnapshots' } }),
    });
    const res = decideScheduler('CronOperation', snapshotBackup({ keepLast: 1 }), facts);
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['spec.retention']);
  });

  it('admits one who may, and refuses a bad policy whoever asks', () => {
    const facts = someFacts({ checks: [{ verb: 'backup', name: 'shop' }, retentionCheck] });
    expect(decideScheduler('CronOperation', snapshotBackup({ keepLast: 1 }), facts).allowed).toBe(true);
    const bad = decideScheduler('CronOperation', snapshotBackup({ maxAge: '-1h' }), facts);
    expect(causesOf(bad)).toEqual([
      { field: 'spec.retention.maxAge', message: expect.stringContaining('Invalid value') },
    ]);
  });
});
