// Metadata a tenant can write on an Operation that must not grant anything by itself: the reconcile
// annotation (a re-run) and a controller ownerReference naming a CronOperation/WatchOperation.
import { describe, expect, it } from 'vitest';
import {
  anOperation,
  aRequest,
  causesOf,
  decodePatch,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_RECONCILE, ANNOTATION_RECONCILE_REQUESTED_BY } from '../api/annotations.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import { decideOperation, mutateOperation, operationNeeds } from './operation.ts';

const created = { [ANNOTATION_CREATED_BY]: 'alice' };
const old = anOperation({}, created);
const withAnnotations = (annotations: Record<string, string>) =>
  anOperation({}, { ...created, ...annotations });
const update = (object: unknown, user = 'mallory', oldObject: unknown = old) =>
  aRequest(object, { operation: 'UPDATE', oldObject, user });
const denyVerb = (verb: string) =>
  someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== verb } }) });

describe('a re-run (a new ops.vworkspace.io/reconcile value) needs the type verb on the target', () => {
  const rerun = withAnnotations({
    [ANNOTATION_RECONCILE]: '1',
    [ANNOTATION_RECONCILE_REQUESTED_BY]: 'mallory',
  });

  it('asks for the type verb, and refuses a requester without it at the annotation', () => {
    expect(operationNeeds(update(rerun))).toEqual({ access: [{ verb: 'backup', name: 'shop' }] });
    const res = decideOperation(update(rerun), denyVerb('backup'));
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_RECONCILE}]`]);
    expect(causesOf(res)[0]?.message).toContain('re-run an Operation of type Backup on shop');
    expect(decideOperation(update(rerun), someFacts()).allowed).toBe(true);
  });

  it('checks nothing when the value does not change', () => {
    const same = update(rerun, 'mallory', rerun);
    expect(operationNeeds(same)).toEqual({ access: [] });
    expect(decideOperation(same, denyVerb('backup')).allowed).toBe(true);
  });

  it('is stamped with its requester, which no user may write', () => {
    const asked = withAnnotations({ [ANNOTATION_RECONCILE]: '1' });
    expect(decodePatch(mutateOperation(update(asked, 'alice')))).toEqual([
      {
        op: 'add',
        path: `/metadata/annotations/${ANNOTATION_RECONCILE_REQUESTED_BY.replace('/', '~1')}`,
        value: 'alice',
      },
    ]);
    const forged = withAnnotations({
      [ANNOTATION_RECONCILE]: '1',
      [ANNOTATION_RECONCILE_REQUESTED_BY]: 'alice',
    });
    expect(fieldsOf(decideOperation(update(forged, 'mallory'), someFacts()))).toEqual([
      `metadata.annotations[${ANNOTATION_RECONCILE_REQUESTED_BY}]`,
    ]);
  });
});

describe('a controller ownerReference naming a scheduler is the operator’s to write', () => {
  const ref = (uid: string) => ({
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'CronOperation',
    name: 'nightly',
    uid,
    controller: true,
  });
  const owned = (uid = 'u1') => ({ ...old, metadata: { ...old.metadata, ownerReferences: [ref(uid)] } });

  it('refuses it from anyone else at create, even with every verb', () => {
    const byEve = anOperation({}, { [ANNOTATION_CREATED_BY]: 'eve' });
    const res = decideOperation(
      aRequest({ ...byEve, metadata: { ...byEve.metadata, ownerReferences: [ref('u1')] } }, { user: 'eve' }),
      someFacts(),
    );
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['metadata.ownerReferences']);
  });

  it('refuses adding or changing it later; keeping or removing it is allowed', () => {
    expect(fieldsOf(decideOperation(update(owned()), someFacts()))).toEqual(['metadata.ownerReferences']);
    expect(fieldsOf(decideOperation(update(owned('u2'), 'eve', owned()), someFacts()))).toEqual([
      'metadata.ownerReferences',
    ]);
    expect(decideOperation(update(owned(), 'eve', owned()), someFacts()).allowed).toBe(true);
    expect(
      decideOperation(update(old, 'system:serviceaccount:kube-system:gc', owned()), someFacts()).allowed,
    ).toBe(true);
  });
});
