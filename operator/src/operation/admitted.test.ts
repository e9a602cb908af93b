import { describe, expect, it } from 'vitest';
import { instance, operation } from '../../../test/support/builders/operation.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import type { AdmissionFacts } from './admitted.ts';
import { evaluatePreconditions, type PreconditionFacts } from './preconditions.ts';

const facts = (admission?: AdmissionFacts): PreconditionFacts => ({
  now: new Date('2025-01-01T12:00:00Z'),
  target: instance(),
  rbac: { allowed: true },
  operations: [],
  secrets: new Set(),
  serviceAccounts: new Set(),
  ...(admission ? { admission } : {}),
});
const stamps = { createdBy: 'alice', creatorGroups: [], actsFor: ['carol'] };
const sod = BUILTIN_TEMPLATES.map((t) =>
  t.name === 'velero-backup' ? { ...t, separationOfDuties: true } : t,
);
const approved = (by: string) =>
  operation(
    'b',
    { policy: { requiresApproval: true } },
    { annotations: { 'ops.vworkspace.io/approve': 'true', 'ops.vworkspace.io/approved-by': by } },
  );

describe('the reconciler re-checks admission', () => {
  it('runs nothing without a verified admission record, before anything else', () => {
    const r = evaluatePreconditions(
      operation('b'),
      BUILTIN_TEMPLATES,
      facts({ ok: false, message: 'it carries no record' }),
    );
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'NotAdmitted', permanent: true });
    expect(r.outcome === 'rejected' && r.message).toContain('select namespace team');
  });

  it('tells to create it again, not to fix the webhooks, when the record names a key from before an upgrade', () => {
    const r = evaluatePreconditions(
      operation('b'),
      BUILTIN_TEMPLATES,
      facts({ ok: false, keyUnknown: true, message: 'signed with a key this operator does not hold' }),
    );
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'NotAdmitted', permanent: true });
    const message = r.outcome === 'rejected' ? r.message : '';
    expect(message).toContain('upgraded');
    expect(message).toContain('create it again');
    expect(message).not.toContain('select namespace');
  });

  it('refuses a creator who lost the type verb', () => {
    const r = evaluatePreconditions(
      operation('b'),
      BUILTIN_TEMPLATES,
      facts({ ok: true, stamps, requester: { user: 'alice', verb: 'backup', allowed: false } }),
    );
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'RequesterNotAuthorized' });
  });

  it('refuses a re-run whose requester lost the type verb before it started', () => {
    const rerun = (allowed: boolean) =>
      evaluatePreconditions(
        operation('b', {}, { annotations: { 'ops.vworkspace.io/reconcile': '2' } }),
        BUILTIN_TEMPLATES,
        facts({
          ok: true,
          stamps: { ...stamps, reconcile: { value: '2', requestedBy: 'bob', requesterGroups: [] } },
          requester: { user: 'alice', verb: 'backup', allowed: true },
          rerun: { user: 'bob', verb: 'backup', allowed },
        }),
      );
    const r = rerun(false);
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'RequesterNotAuthorized', permanent: true });
    expect(r.outcome === 'rejected' && r.message).toContain(
      '"bob", who asked to re-run it (ops.vworkspace.io/reconcile), may no longer backup applicationinstances/app',
    );
    expect(rerun(true).outcome).toBe('satisfied');
  });

  it('refuses an approver who lost approve, or is someone the Operation acts for under separation of duties', () => {
    const lost = evaluatePreconditions(
      approved('bob'),
      sod,
      facts({
        ok: true,
        stamps: { ...stamps, approvedBy: 'bob', approverGroups: [] },
        approver: { user: 'bob', verb: 'approve', allowed: false },
      }),
    );
    expect(lost).toMatchObject({ outcome: 'rejected', reason: 'RequesterNotAuthorized' });
    const self = evaluatePreconditions(
      approved('carol'),
      sod,
      facts({
        ok: true,
        stamps: { ...stamps, approvedBy: 'carol', approverGroups: [] },
        approver: { user: 'carol', verb: 'approve', allowed: true },
      }),
    );
    expect(self).toMatchObject({ outcome: 'rejected', reason: 'RequesterNotAuthorized' });
    expect(self.outcome === 'rejected' && self.message).toContain('separation of duties');
    const fine = evaluatePreconditions(
      approved('bob'),
      sod,
      facts({
        ok: true,
        stamps: { ...stamps, approvedBy: 'bob', approverGroups: [] },
        approver: { user: 'bob', verb: 'approve', allowed: true },
      }),
    );
    expect(fine.outcome).toBe('satisfied');
  });
});

describe('parameters past the webhook bounds', () => {
  it('end with InvalidParameters instead of overflowing schema validation', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) deep = { x: deep };
    const r = evaluatePreconditions(operation('b', { parameters: { deep } }), BUILTIN_TEMPLATES, facts());
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'InvalidParameters', permanent: true });
    expect(r.outcome === 'rejected' && r.message).toContain('nested more than 32 levels');
  });
});
