import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
} from '../api/annotations.ts';
import { actsForAnnotation } from './acts-for.ts';
import { deriveSigningKey } from './signing-key.ts';
import { type Stamps, signStamps, verifyStamps } from './stamp.ts';

const key = deriveSigningKey(
  Buffer.from('-----BEGIN PRIVATE KEY-----\nkey one\n-----END PRIVATE KEY-----\n'),
);
const other = deriveSigningKey(Buffer.from('another key'));
const keys = (id: string) => (id === key.id ? key : undefined);
const spec = {
  type: 'RunCommand',
  engine: 'job',
  targetRef: { name: 'shop' },
  parameters: { command: ['true'] },
};
const stamps: Stamps = { createdBy: 'alice', creatorGroups: ['team-a'], actsFor: [] };

function operation(annotations: Record<string, string>, over: { namespace?: string; spec?: unknown } = {}) {
  return { metadata: { namespace: over.namespace ?? 'a', annotations }, spec: over.spec ?? spec };
}
const signed = (s: Stamps = stamps, extra: Record<string, string> = {}): Record<string, string> => ({
  [ANNOTATION_CREATED_BY]: s.createdBy,
  [ANNOTATION_ADMISSION]: signStamps(key, 'a', spec, s),
  ...extra,
});

describe('signed admission stamps', () => {
  it('verifies what the webhook signed, with the groups it recorded', () => {
    const v = verifyStamps(operation(signed()), keys);
    expect(v).toEqual({ ok: true, stamps });
  });

  it('keeps verifying when only spec.cancel changed', () => {
    expect(verifyStamps(operation(signed(), { spec: { ...spec, cancel: true } }), keys).ok).toBe(true);
  });

  it('refuses a record moved to another namespace, spec, creator or approver', () => {
    expect(verifyStamps(operation(signed(), { namespace: 'b' }), keys)).toMatchObject({ ok: false });
    expect(
      verifyStamps(operation(signed(), { spec: { ...spec, parameters: { command: ['id'] } } }), keys).ok,
    ).toBe(false);
    expect(verifyStamps(operation({ ...signed(), [ANNOTATION_CREATED_BY]: 'bob' }), keys).ok).toBe(false);
    const forgedApproval = { ...signed(), [ANNOTATION_APPROVE]: 'true', [ANNOTATION_APPROVED_BY]: 'bob' };
    expect(verifyStamps(operation(forgedApproval), keys).ok).toBe(false);
    expect(verifyStamps(operation({ ...signed(), [ANNOTATION_ACTS_FOR]: '["carol"]' }), keys).ok).toBe(false);
  });

  it('verifies an approval signed with the approver, and refuses it once approve is removed', () => {
    const approved: Stamps = { ...stamps, approvedBy: 'bob', approverGroups: ['approvers'] };
    const ann = signed(approved, { [ANNOTATION_APPROVE]: 'true', [ANNOTATION_APPROVED_BY]: 'bob' });
    expect(verifyStamps(operation(ann), keys)).toEqual({ ok: true, stamps: approved });
    const { [ANNOTATION_APPROVE]: _a, ...withoutApprove } = ann;
    expect(verifyStamps(operation(withoutApprove), keys).ok).toBe(false);
  });

  it('says what is wrong: no record, a malformed one, an unknown key', () => {
    expect(verifyStamps(operation({ [ANNOTATION_CREATED_BY]: 'alice' }), keys)).toMatchObject({
      ok: false,
      message: expect.stringContaining('carries no ops.vworkspace.io/admission'),
    });
    expect(verifyStamps(operation({ ...signed(), [ANNOTATION_ADMISSION]: '{' }), keys)).toMatchObject({
      ok: false,
      message: expect.stringContaining('malformed'),
    });
    const foreign = { ...signed(), [ANNOTATION_ADMISSION]: signStamps(other, 'a', spec, stamps) };
    expect(verifyStamps(operation(foreign), keys)).toMatchObject({
      ok: false,
      message: expect.stringContaining('a key this operator does not hold'),
    });
  });

  it('signs and verifies a spec as deep as the API server stores (10,000 levels), and refuses another', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 10_000; i++) deep = { x: deep };
    const deepSpec = { ...spec, parameters: deep };
    const ann = {
      [ANNOTATION_CREATED_BY]: 'alice',
      [ANNOTATION_ADMISSION]: signStamps(key, 'a', deepSpec, stamps),
    };
    expect(verifyStamps(operation(ann, { spec: deepSpec }), keys)).toEqual({ ok: true, stamps });
    expect(verifyStamps(operation(signed(), { spec: deepSpec }), keys).ok).toBe(false);
  });
});

describe('actsForAnnotation', () => {
  const cron = (annotations: Record<string, string>) => ({ metadata: { annotations } });
  it('names the editor, and for a run-now request also who asked', () => {
    const owner = cron({ 'ops.vworkspace.io/edited-by': 'alice', 'ops.vworkspace.io/run-now-by': 'bob' });
    expect(actsForAnnotation(owner, {})).toEqual({ [ANNOTATION_ACTS_FOR]: '["alice"]' });
    expect(actsForAnnotation(owner, { 'ops.vworkspace.io/trigger': 'manual' })).toEqual({
      [ANNOTATION_ACTS_FOR]: '["alice","bob"]',
    });
  });
  it('writes nothing for a scheduler without stamps (created before they existed)', () => {
    expect(actsForAnnotation(cron({}), {})).toEqual({});
  });
});
