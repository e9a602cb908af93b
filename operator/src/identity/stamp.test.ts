import fc from 'fast-check';
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
import { canonical, type Stamps, signStamps, verifyStamps } from './stamp.ts';

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

/** canonical as first written (one stack entry per token): what every stored record was signed over. */
function canonicalAsFirstWritten(root: unknown): string {
  const out: string[] = [];
  const todo: ({ text: string } | { value: unknown })[] = [{ value: root }];
  for (let next = todo.pop(); next; next = todo.pop()) {
    if ('text' in next) {
      out.push(next.text);
      continue;
    }
    const v = next.value;
    if (Array.isArray(v)) {
      todo.push({ text: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        todo.push({ value: v[i] });
        if (i > 0) todo.push({ text: ',' });
      }
      todo.push({ text: '[' });
    } else if (typeof v === 'object' && v !== null) {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o)
        .filter((k) => o[k] !== undefined)
        .sort();
      todo.push({ text: '}' });
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string;
        todo.push({ value: o[k] });
        todo.push({ text: `${i > 0 ? ',' : ''}${JSON.stringify(k)}:` });
      }
      todo.push({ text: '{' });
    } else out.push(JSON.stringify(v ?? null));
  }
  return out.join('');
}

describe('what the MAC covers never changes', () => {
  it('verifies records signed before (fixed key, spec and stamps)', () => {
    const odd = {
      type: 'RunCommand',
      engine: 'job',
      targetRef: { name: 'shop' },
      parameters: {
        command: ['true', 'ü', '\u2028', 1.5e300, -0, null, { b: 1, a: [], 'z"q': {} }],
        empty: {},
        undef: undefined,
      },
      cancel: true,
      policy: { requiresApproval: false },
    };
    const all: Stamps = {
      createdBy: 'alice',
      creatorGroups: ['team-a', 'system:authenticated'],
      approvedBy: 'bob',
      approverGroups: ['ops'],
      actsFor: ['carol'],
      reconcile: { value: '2', requestedBy: 'dave', requesterGroups: [] },
    };
    // Signed by the webhook as released (2026-11-28); a change to the canonical form or the MAC breaks these.
    expect(signStamps(key, 'a', odd, all)).toBe(
      '{"v":1,"kid":"57c2e79457a4","creatorGroups":["team-a","system:authenticated"],"approverGroups":["ops"],"reconcileRequesterGroups":[],"mac":"ozlIxpQqs8hMTTrZL1cDmHKCrHRjABzB8MVUxFrN33I"}',
    );
    expect(signStamps(key, 'a', odd, { createdBy: 'alice', creatorGroups: [], actsFor: [] })).toBe(
      '{"v":1,"kid":"57c2e79457a4","creatorGroups":[],"mac":"JBe6Qxv94Ajn0GaMeKeunHUGe1oECtlWq4OaeYVK3HA"}',
    );
  });

  it('writes any JSON value (and undefined fields and items) as the first canonical form did', () => {
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 2 }),
        fc.constant(undefined),
        fc.array(tie('any'), { maxLength: 4 }),
        fc.dictionary(fc.string(), tie('any'), { maxKeys: 4 }),
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonical(v)).toBe(canonicalAsFirstWritten(v));
      }),
      { numRuns: 2000 },
    );
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
