import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  decodePatch,
  fieldsOf,
  NS,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  ANNOTATION_EDITED_BY,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
  ANNOTATION_RUN_NOW,
  ANNOTATION_RUN_NOW_BY,
} from '../api/annotations.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { deriveSigningKey } from '../identity/signing-key.ts';
import { verifyStamps } from '../identity/stamp.ts';
import { decideOperation, mutateOperation } from './operation.ts';
import type { JsonPatchOp } from './review.ts';
import { schedulerStamps } from './stamps.ts';

const key = deriveSigningKey(Buffer.from('serving key'));
const keys = { current: () => key, find: (id: string) => (id === key.id ? key : undefined) };
const sod = { ...BUILTIN_TEMPLATES.find((t) => t.name === 'velero-backup')!, separationOfDuties: true };
const templates = {
  ok: true as const,
  value: [...BUILTIN_TEMPLATES.filter((t) => t.name !== 'velero-backup'), sod],
};

/** The object as the validating webhook sees it: after the mutating webhook's patch. */
function mutated(req: ReturnType<typeof aRequest>) {
  const res = mutateOperation(req, keys);
  expect(res.allowed).toBe(true);
  const obj = structuredClone(req.object) as { metadata: { annotations?: Record<string, string> } };
  const ann = { ...(obj.metadata.annotations ?? {}) };
  for (const op of (decodePatch(res) ?? []) as JsonPatchOp[]) {
    const k = op.path.replace('/metadata/annotations/', '').replace('~1', '/');
    if (op.path === '/metadata/annotations') Object.assign(ann, op.value as Record<string, string>);
    else if (op.op === 'remove') delete ann[k];
    else ann[k] = op.value as string;
  }
  obj.metadata.annotations = ann;
  return obj;
}

describe('the signed admission record', () => {
  it('is written at CREATE with the creator and groups, verifies, and is what validation expects', () => {
    const req = aRequest(anOperation(), { user: { username: 'alice', groups: ['team-a'] } });
    const obj = mutated(req);
    expect(obj.metadata.annotations?.[ANNOTATION_CREATED_BY]).toBe('alice');
    const v = verifyStamps({ ...obj, metadata: { ...obj.metadata, namespace: NS } }, keys.find);
    expect(v).toEqual({ ok: true, stamps: { createdBy: 'alice', creatorGroups: ['team-a'], actsFor: [] } });
    const facts = { ...someFacts(), signingKeys: keys };
    expect(decideOperation({ ...req, object: obj }, facts).allowed).toBe(true);
  });

  it('is re-signed with the approver when approval is given, keeping the creator groups', () => {
    const created = mutated(aRequest(anOperation(), { user: { username: 'alice', groups: ['team-a'] } }));
    const approving = structuredClone(created);
    approving.metadata.annotations = { ...approving.metadata.annotations, [ANNOTATION_APPROVE]: 'true' };
    const obj = mutated(
      aRequest(approving, {
        operation: 'UPDATE',
        oldObject: created,
        user: { username: 'bob', groups: ['ops'] },
      }),
    );
    const v = verifyStamps({ ...obj, metadata: { ...obj.metadata, namespace: NS } }, keys.find);
    expect(v).toMatchObject({
      ok: true,
      stamps: { createdBy: 'alice', creatorGroups: ['team-a'], approvedBy: 'bob', approverGroups: ['ops'] },
    });
  });

  it('signs a re-run request with its requester and groups; a later change of the value breaks it', () => {
    const created = mutated(aRequest(anOperation(), { user: { username: 'alice', groups: ['team-a'] } }));
    const asking = structuredClone(created);
    asking.metadata.annotations = { ...asking.metadata.annotations, [ANNOTATION_RECONCILE]: '1' };
    const obj = mutated(
      aRequest(asking, {
        operation: 'UPDATE',
        oldObject: created,
        user: { username: 'bob', groups: ['ops'] },
      }),
    );
    expect(obj.metadata.annotations?.[ANNOTATION_RECONCILE_REQUESTED_BY]).toBe('bob');
    const verify = (o: typeof obj) =>
      verifyStamps({ ...o, metadata: { ...o.metadata, namespace: NS } }, keys.find);
    expect(verify(obj)).toMatchObject({
      ok: true,
      stamps: {
        createdBy: 'alice',
        creatorGroups: ['team-a'],
        reconcile: { value: '1', requestedBy: 'bob', requesterGroups: ['ops'] },
      },
    });
    // An unrelated update by someone else keeps bob's request and groups.
    const touched = structuredClone(obj);
    touched.metadata.annotations = { ...touched.metadata.annotations, note: 'x' };
    const kept = mutated(
      aRequest(touched, { operation: 'UPDATE', oldObject: obj, user: { username: 'carol', groups: ['c'] } }),
    );
    expect(verify(kept)).toMatchObject({
      ok: true,
      stamps: { reconcile: { value: '1', requestedBy: 'bob', requesterGroups: ['ops'] } },
    });
    // Where the webhook did not run: another value under bob's stamp, or another requester, does not verify.
    const again = { ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations } } };
    again.metadata.annotations[ANNOTATION_RECONCILE] = '2';
    expect(verify(again).ok).toBe(false);
    const other = { ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations } } };
    other.metadata.annotations[ANNOTATION_RECONCILE_REQUESTED_BY] = 'alice';
    expect(verify(other).ok).toBe(false);
    // The stamp goes with its request.
    const { [ANNOTATION_RECONCILE]: _r, ...withoutRequest } = obj.metadata.annotations ?? {};
    const dropped = mutated(
      aRequest(
        { ...obj, metadata: { ...obj.metadata, annotations: withoutRequest } },
        { operation: 'UPDATE', oldObject: obj, user: 'carol' },
      ),
    );
    expect(dropped.metadata.annotations?.[ANNOTATION_RECONCILE_REQUESTED_BY]).toBeUndefined();
    expect(verify(dropped)).toMatchObject({ ok: true });
  });

  it('is never written for an update of an Operation whose stored record does not verify', () => {
    const forged = anOperation({}, { [ANNOTATION_CREATED_BY]: 'alice' });
    const obj = mutated(aRequest({ ...forged }, { operation: 'UPDATE', oldObject: forged, user: 'bob' }));
    expect(obj.metadata.annotations?.[ANNOTATION_ADMISSION]).toBeUndefined();
  });

  it('refuses a record the user wrote', () => {
    const req = aRequest(anOperation({}, { [ANNOTATION_CREATED_BY]: 'alice', [ANNOTATION_ADMISSION]: '{}' }));
    const res = decideOperation(req, { ...someFacts(), signingKeys: keys });
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_ADMISSION}]`]);
  });

  it('answers "retry" while the serving key is not readable', () => {
    const res = mutateOperation(aRequest(anOperation()), { current: () => undefined, find: () => undefined });
    expect(res.allowed).toBe(false);
    expect(res.status?.code).toBe(503);
  });
});

describe('a record the mutating webhook signed, checked by the validating one', () => {
  const alice = { username: 'alice', groups: ['team-a'] };
  const facts = () => ({ ...someFacts(), signingKeys: keys });
  const recordOf = (obj: { metadata: { annotations?: Record<string, string> } }) =>
    obj.metadata.annotations?.[ANNOTATION_ADMISSION];
  /** `obj` with the admission record `record` (as a user could copy it from another object). */
  const withRecord = (obj: ReturnType<typeof mutated>, record: string | undefined) => ({
    ...obj,
    metadata: {
      ...obj.metadata,
      annotations: { ...obj.metadata.annotations, [ANNOTATION_ADMISSION]: record! },
    },
  });

  it('is admitted for the object it was signed for, in a fresh copy too', () => {
    const req = aRequest(anOperation({ parameters: { ttl: '24h' } }), { user: alice });
    const obj = mutated(req);
    expect(decideOperation({ ...req, object: structuredClone(obj) }, facts()).allowed).toBe(true);
  });

  it('is refused on another spec, namespace, user, groups or with another current key', () => {
    const req = aRequest(anOperation({ parameters: { ttl: '24h' } }), { user: alice });
    const signed = recordOf(mutated(req));
    expect(signed).toBeDefined();
    const refused = (r: ReturnType<typeof aRequest>, f = facts()) =>
      expect(fieldsOf(decideOperation(r, f))).toContain(`metadata.annotations[${ANNOTATION_ADMISSION}]`);
    // The same record on another spec that the same user signs too.
    const other = aRequest(anOperation({ parameters: { ttl: '48h' } }), { user: alice });
    refused({ ...other, object: withRecord(mutated(other), signed) });
    // In another namespace.
    refused({ ...req, namespace: 'elsewhere', object: withRecord(mutated(req), signed) });
    // Another user's request with the same spec (created-by is refused as well).
    const bob = aRequest(anOperation({ parameters: { ttl: '24h' } }), {
      user: { username: 'bob', groups: ['team-a'] },
    });
    refused({ ...bob, object: withRecord(mutated(req), signed) });
    // The same user in other groups.
    const regrouped = aRequest(anOperation({ parameters: { ttl: '24h' } }), {
      user: { username: 'alice', groups: ['team-b'] },
    });
    refused({ ...regrouped, object: withRecord(mutated(req), signed) });
    // The serving key rotated between the two webhooks.
    const next = deriveSigningKey(Buffer.from('next serving key'));
    const rotated = { current: () => next, find: (id: string) => [key, next].find((k) => k.id === id) };
    refused({ ...req, object: mutated(req) }, { ...someFacts(), signingKeys: rotated });
  });

  it('is refused when its MAC or key id is altered, though the right MAC was computed a moment ago', () => {
    const req = aRequest(anOperation(), { user: alice });
    const obj = mutated(req);
    const record = JSON.parse(recordOf(obj)!) as { kid: string; mac: string };
    const forged = [
      { ...record, mac: `${record.mac.slice(0, -1)}${record.mac.endsWith('A') ? 'B' : 'A'}` },
      { ...record, kid: 'another-key' },
      { ...record, creatorGroups: ['system:masters'] },
    ];
    for (const f of forged) {
      const res = decideOperation({ ...req, object: withRecord(obj, JSON.stringify(f)) }, facts());
      expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_ADMISSION}]`]);
    }
  });
});

describe('acts-for and separation of duties', () => {
  const scheduled = {
    [ANNOTATION_CREATED_BY]: 'system:serviceaccount:ops:operator',
    [ANNOTATION_ACTS_FOR]: '["alice"]',
  };

  it('refuses approval by someone a scheduled Operation acts for', () => {
    const old = anOperation({ policy: { requiresApproval: true } }, scheduled);
    const now = anOperation(
      { policy: { requiresApproval: true } },
      { ...scheduled, [ANNOTATION_APPROVE]: 'true', [ANNOTATION_APPROVED_BY]: 'alice' },
    );
    const res = decideOperation(aRequest(now, { operation: 'UPDATE', oldObject: old, user: 'alice' }), {
      ...someFacts(),
      templates,
    });
    expect(res.status?.code).toBe(403);
    expect(res.status?.message).toContain('acts for "alice"');
    const byBob = anOperation(
      { policy: { requiresApproval: true } },
      { ...scheduled, [ANNOTATION_APPROVE]: 'true', [ANNOTATION_APPROVED_BY]: 'bob' },
    );
    expect(
      decideOperation(aRequest(byBob, { operation: 'UPDATE', oldObject: old, user: 'bob' }), {
        ...someFacts(),
        templates,
      }).allowed,
    ).toBe(true);
  });

  it('refuses acts-for written by anyone but the operator for a scheduler', () => {
    const res = decideOperation(
      aRequest(anOperation({}, { [ANNOTATION_CREATED_BY]: 'alice', [ANNOTATION_ACTS_FOR]: '["carol"]' })),
      someFacts(),
    );
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_ACTS_FOR}]`]);
  });
});

describe('scheduler stamps', () => {
  const value = (req: ReturnType<typeof aRequest>, k: string) =>
    schedulerStamps('CronOperation', req).find((s) => s.key === k)?.expected;

  it('edited-by follows spec changes only; run-now-by follows a new run-now value', () => {
    const cron = aCronOperation();
    const stored = {
      ...cron,
      metadata: { ...cron.metadata, annotations: { [ANNOTATION_EDITED_BY]: 'alice' } },
    };
    expect(value(aRequest(cron), ANNOTATION_EDITED_BY)).toBe('alice');
    const runNow = {
      ...stored,
      metadata: {
        ...stored.metadata,
        annotations: { ...stored.metadata.annotations, [ANNOTATION_RUN_NOW]: 'x' },
      },
    };
    const req = aRequest(runNow, { operation: 'UPDATE', oldObject: stored, user: 'bob' });
    expect(value(req, ANNOTATION_EDITED_BY)).toBe('alice');
    expect(value(req, ANNOTATION_RUN_NOW_BY)).toBe('bob');
    const edited = { ...stored, spec: { ...stored.spec, schedule: '0 3 * * *' } };
    expect(
      value(aRequest(edited, { operation: 'UPDATE', oldObject: stored, user: 'bob' }), ANNOTATION_EDITED_BY),
    ).toBe('bob');
  });
});
