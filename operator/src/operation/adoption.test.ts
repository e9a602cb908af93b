import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { anOperation } from '../../../test/support/builders/engines.ts';
import { LABEL_OPERATION_UID } from '../api/annotations.ts';
import type { OperationStatus } from '../api/operation.ts';
import { childConflict, childConflictStatus, isChildOf } from './adoption.ts';

const op = anOperation({ name: 'migrate', namespace: 'team-a' });
const uid = op.metadata.uid!;

function aJob(owner?: {
  uid: string;
  controller?: boolean;
  kind?: string;
  apiVersion?: string;
  blockOwnerDeletion?: boolean;
}): KubernetesObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'migrate-abcdefgh',
      namespace: 'team-a',
      uid: 'job-uid',
      ...(owner
        ? {
            ownerReferences: [
              {
                apiVersion: owner.apiVersion ?? 'ops.vworkspace.io/v1alpha1',
                kind: owner.kind ?? 'Operation',
                name: 'migrate',
                uid: owner.uid,
                controller: owner.controller ?? true,
                blockOwnerDeletion: owner.blockOwnerDeletion ?? true,
              },
            ],
          }
        : {}),
    },
  };
}

const aBackup = (labels: Record<string, string>): KubernetesObject => ({
  apiVersion: 'velero.io/v1',
  kind: 'Backup',
  metadata: { name: 'migrate-abcdefgh', namespace: 'velero', labels },
});

describe('adoption', () => {
  it('adopts a child in the namespace only when its controller owner reference is this Operation', () => {
    expect(isChildOf(op, aJob({ uid }))).toBe(true);
    expect(isChildOf(op, aJob())).toBe(false);
    expect(isChildOf(op, aJob({ uid, controller: false }))).toBe(false);
    expect(isChildOf(op, aJob({ uid: 'another-operation' }))).toBe(false);
    expect(isChildOf(op, aJob({ uid, kind: 'CronOperation' }))).toBe(false);
    expect(isChildOf(op, aJob({ uid, apiVersion: 'evil.example.com/v1' }))).toBe(false);
    expect(isChildOf(op, aJob({ uid, blockOwnerDeletion: false }))).toBe(false);
  });

  it('adopts a child elsewhere only when it carries the operation-uid label', () => {
    expect(isChildOf(op, aBackup({ [LABEL_OPERATION_UID]: uid }))).toBe(true);
    expect(isChildOf(op, aBackup({ 'ops.vworkspace.io/operation': 'migrate' }))).toBe(false);
    expect(isChildOf({ ...op, metadata: { ...op.metadata, uid: undefined } }, aBackup({}))).toBe(false);
  });

  it('says what is wrong and what to do', () => {
    expect(childConflict(op, aJob({ uid }))).toBeUndefined();
    expect(childConflict(op, aJob())).toMatch(
      /^Job team-a\/migrate-abcdefgh already exists and was not created for this Operation \(its controller owner reference is not Operation migrate/,
    );
    expect(childConflict(op, aBackup({}))).toContain(`it does not carry ${LABEL_OPERATION_UID}=${uid}`);
  });

  it('accepts a recorded child only while it is the very object recorded', () => {
    expect(childConflict(op, aJob({ uid }), { uid: 'job-uid' })).toBeUndefined();
    expect(childConflict(op, aJob({ uid }), { uid: 'the-one-we-made' })).toMatch(
      /was replaced after the operator created it \(uid the-one-we-made, now job-uid\)/,
    );
  });

  it('ends the Operation Failed/ChildConflict and forgets the foreign object', () => {
    const running: OperationStatus = {
      phase: 'Running',
      childRef: { apiVersion: 'batch/v1', kind: 'Job', name: 'x', namespace: 'team-a' },
      childRefs: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'x', namespace: 'team-a' }],
      outputs: { jobName: 'x' },
      conditions: [
        {
          type: 'Running',
          status: 'True',
          reason: 'JobRunning',
          message: 'm',
          lastTransitionTime: '2025-01-01T00:00:00Z',
        },
      ],
    };
    const s = childConflictStatus(op, running, 'taken', Date.parse('2025-01-02T00:00:00Z'));
    expect(s.phase).toBe('Failed');
    expect(s.finishedAt).toBe('2025-01-02T00:00:00Z');
    expect(s).not.toHaveProperty('childRef');
    expect(s).not.toHaveProperty('childRefs');
    expect(s).not.toHaveProperty('outputs');
    expect(s.conditions).toEqual([
      expect.objectContaining({
        type: 'Running',
        status: 'False',
        reason: 'ChildConflict',
        message: 'taken',
      }),
      expect.objectContaining({
        type: 'Succeeded',
        status: 'False',
        reason: 'ChildConflict',
        message: 'taken',
      }),
    ]);
  });
});
