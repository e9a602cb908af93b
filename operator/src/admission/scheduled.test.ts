import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aTarget,
  aWatchOperation,
  causesOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER } from '../api/annotations.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { checkScheduledBy, ownerAuthority, schedulerClaim, trustScheduled } from './scheduled.ts';

const SELF = 'system:serviceaccount:operators:vworkspace-operator';
const owned = (kind: string, uid = 'uid-cron', name = 'nightly') => ({
  ...anOperation(),
  metadata: {
    name: 'nightly-29000000',
    namespace: 'team-a',
    // As the validating webhook sees it: the mutating one stamped the creator.
    annotations: {
      [ANNOTATION_CREATED_BY]: SELF,
      ...(kind === 'WatchOperation'
        ? { [ANNOTATION_TRIGGER]: 'field:spec.appRef.chart.version' }
        : { [ANNOTATION_SCHEDULED_TIME]: '2025-02-21T01:00:00Z' }),
    },
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
    const op = owned('CronOperation');
    const target = { ok: true as const, value: aTarget() };
    expect(checkScheduledBy(claim, { ok: true, value: cron() }, op, target)).toEqual([]);
    expect(checkScheduledBy(claim, { ok: true, value: undefined }, op, target)[0]).toMatchObject({
      field: 'metadata.ownerReferences',
      kind: 'forbidden',
    });
    const other = { ...cron(), metadata: { ...cron().metadata, uid: 'uid-new' } };
    expect(checkScheduledBy(claim, { ok: true, value: other }, op, target)[0]?.kind).toBe('forbidden');
    // Not what the template produces (an edit the operator had not seen, or anything else): refused,
    // never a retry the controller would repeat in silence.
    const edited = { ...op, spec: { ...op.spec, template: 'other' } };
    expect(checkScheduledBy(claim, { ok: true, value: cron() }, edited, target)[0]).toMatchObject({
      field: 'spec.template',
      kind: 'forbidden',
    });
    expect(checkScheduledBy(claim, { ok: false, message: 'timeout' }, op, target)[0]?.kind).toBe('retry');
    // A target that could not be read, or does not exist, is checkTarget's to report.
    expect(checkScheduledBy(claim, { ok: true, value: cron() }, edited, { ok: false, message: 'x' })).toEqual(
      [],
    );
  });

  it('a WatchOperation produces its template with the changed instance as target', () => {
    const claim = { kind: 'WatchOperation' as const, name: 'pre-upgrade', uid: 'uid-w' };
    const watch = {
      ...aWatchOperation(),
      metadata: { name: 'pre-upgrade', namespace: 'team-a', uid: 'uid-w' },
    };
    const op = {
      ...owned('WatchOperation', 'uid-w', 'pre-upgrade'),
      spec: { ...aWatchOperation().spec.operationTemplate.spec, targetRef: { name: 'shop' } },
    };
    const target = { ok: true as const, value: aTarget() };
    expect(checkScheduledBy(claim, { ok: true, value: watch }, op, target)).toEqual([]);
    const other = { ...op, spec: { ...op.spec, engine: 'volsync' } };
    expect(checkScheduledBy(claim, { ok: true, value: watch }, other, target)).toHaveLength(1);
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
    const judged = ownerAuthority(facts, owned('CronOperation').spec);
    expect(judged.access['backup/shop']).toMatchObject({ ok: true, value: { allowed: true } });
    expect(judged.access['pods:create/*']).toMatchObject({ ok: true, value: { allowed: true } });
    expect(judged.access['approve/shop']).toEqual(facts.access['approve/shop']);
  });

  it('does not carry running pods as a ServiceAccount the template does not name (a substitution chose it)', () => {
    const facts = {
      ...someFacts(),
      scheduledBy: {
        claim: { kind: 'CronOperation' as const, name: 'nightly', uid: 'uid-cron' },
        owner: { ok: true as const, value: cron() },
      },
    };
    const judged = ownerAuthority(facts, { parameters: { serviceAccountName: 'admin' } });
    expect(judged.access['pods:create/*']).toMatchObject({ ok: true, value: { allowed: false } });
    expect(
      judged.access['serviceaccounts:impersonate/admin']?.ok &&
        judged.access['serviceaccounts:impersonate/admin'].value.reason,
    ).toContain('parametersFromTrigger');
    expect(judged.access['backup/shop']).toMatchObject({ ok: true, value: { allowed: true } });
    const named = {
      ...facts,
      scheduledBy: {
        ...facts.scheduledBy,
        owner: {
          ok: true as const,
          value: aCronOperation({}, { parameters: { serviceAccountName: 'admin' } }),
        },
      },
    };
    const same = ownerAuthority(named, { parameters: { serviceAccountName: 'admin' } });
    expect(same.access['pods:create/*']).toMatchObject({ ok: true, value: { allowed: true } });
  });
});
