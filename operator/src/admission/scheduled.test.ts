import { describe, expect, it } from 'vitest';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { checkScheduledBy, ownerAuthority, schedulerClaim, trustScheduled } from './scheduled.ts';
import { aCronOperation, anOperation, aRequest, aWatchOperation, causesOf, someFacts } from './testing.ts';

const SELF = 'system:serviceaccount:operators:vworkspace-operator';
const owned = (kind: string, uid = 'uid-cron', name = 'nightly') => ({
  ...anOperation(),
  metadata: {
    name: 'nightly-29000000',
    namespace: 'team-a',
    // As the validating webhook sees it: the mutating one stamped the creator.
    annotations: { [ANNOTATION_CREATED_BY]: SELF },
    ownerReferences: [{ apiVersion: 'ops.vworkspace.io/v1alpha1', kind, name, uid, controller: true }],
  },
});
const cron = () => ({
  ...aCronOperation(),
  metadata: { name: 'nightly', namespace: 'team-a', uid: 'uid-cron' },
});

describe('Operations a CronOperation/WatchOperation has the operator create', () => {
  it('reads the controller ownerReference only for our scheduler kinds', () => {
    expect(schedulerClaim(owned('CronOperation'))).toEqual({
      kind: 'CronOperation',
      name: 'nightly',
      uid: 'uid-cron',
    });
    expect(schedulerClaim(owned('Deployment'))).toBeUndefined();
    expect(schedulerClaim(anOperation())).toBeUndefined();
  });

  it('looks the owner up instead of the type verb only for a CREATE by the operator itself', () => {
    const req = aRequest(owned('CronOperation'), { user: SELF });
    const needs = trustScheduled(operationNeeds(req), req, SELF);
    expect(needs.scheduledBy).toEqual({ kind: 'CronOperation', name: 'nightly', uid: 'uid-cron' });
    expect(needs.access.map((c) => c.verb)).not.toContain('backup');
    const byTenant = aRequest(owned('CronOperation'), { user: 'mallory' });
    expect(trustScheduled(operationNeeds(byTenant), byTenant, SELF).scheduledBy).toBeUndefined();
    expect(trustScheduled(operationNeeds(req), req, undefined).scheduledBy).toBeUndefined();
  });

  it('admits what the live owner produces; refuses a missing owner, another uid, another spec', () => {
    const claim = { kind: 'CronOperation' as const, name: 'nightly', uid: 'uid-cron' };
    const spec = owned('CronOperation').spec;
    expect(checkScheduledBy(claim, { ok: true, value: cron() }, spec)).toEqual([]);
    expect(checkScheduledBy(claim, { ok: true, value: undefined }, spec)[0]).toMatchObject({
      field: 'metadata.ownerReferences',
      kind: 'forbidden',
    });
    const other = { ...cron(), metadata: { ...cron().metadata, uid: 'uid-new' } };
    expect(checkScheduledBy(claim, { ok: true, value: other }, spec)[0]?.kind).toBe('forbidden');
    expect(
      checkScheduledBy(claim, { ok: true, value: cron() }, { ...spec, template: 'other' })[0]?.kind,
    ).toBe('retry');
    expect(checkScheduledBy(claim, { ok: false, message: 'timeout' }, spec)[0]?.kind).toBe('retry');
  });

  it('a WatchOperation produces its template with the changed instance as target', () => {
    const claim = { kind: 'WatchOperation' as const, name: 'pre-upgrade', uid: 'uid-w' };
    const watch = {
      ...aWatchOperation(),
      metadata: { name: 'pre-upgrade', namespace: 'team-a', uid: 'uid-w' },
    };
    const spec = { ...aWatchOperation().spec.operationTemplate.spec, targetRef: { name: 'shop' } };
    expect(checkScheduledBy(claim, { ok: true, value: watch }, spec)).toEqual([]);
    expect(checkScheduledBy(claim, { ok: true, value: watch }, { ...spec, engine: 'volsync' })).toHaveLength(
      1,
    );
  });

  it('decideOperation takes the owner instead of the SubjectAccessReview; the rest is judged as usual', () => {
    const req = aRequest(owned('CronOperation'), { user: SELF });
    const denyAll = someFacts({ allow: () => ({ ok: true, value: { allowed: false } }) });
    const facts = {
      ...denyAll,
      scheduledBy: {
        claim: { kind: 'CronOperation' as const, name: 'nightly', uid: 'uid-cron' },
        owner: { ok: true as const, value: cron() },
      },
    };
    expect(decideOperation(req, facts).allowed).toBe(true);
    const gone = {
      ...facts,
      scheduledBy: { ...facts.scheduledBy, owner: { ok: true as const, value: undefined } },
    };
    const res = decideOperation(req, gone);
    expect(res.allowed).toBe(false);
    expect(causesOf(res).map((c) => c.field)).toEqual(['metadata.ownerReferences']);
    // Without the owner fact the operator is judged as anyone: it holds no type verb.
    expect(decideOperation(req, denyAll).status?.code).toBe(403);
  });
});

describe('ownerAuthority', () => {
  it('grants every requester check by the owner, except approving', () => {
    const facts = {
      ...someFacts({ allow: () => ({ ok: true, value: { allowed: false } }) }),
      scheduledBy: {
        claim: { kind: 'CronOperation' as const, name: 'nightly', uid: 'uid-cron' },
        owner: { ok: true as const, value: cron() },
      },
    };
    const judged = ownerAuthority(facts);
    expect(judged.access['backup/shop']).toMatchObject({ ok: true, value: { allowed: true } });
    expect(judged.access['create/pods']).toMatchObject({ ok: true, value: { allowed: true } });
    expect(judged.access['approve/shop']).toEqual(facts.access['approve/shop']);
  });
});
