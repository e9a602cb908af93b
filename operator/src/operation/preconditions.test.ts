import { describe, expect, it } from 'vitest';
import { PRECONDITIONS } from '../api/enums.ts';
import type { Template } from '../catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { evaluatePreconditions, type PreconditionFacts } from './preconditions.ts';
import { instance, operation, withPhase } from './testing.ts';

const NOW = new Date('2025-01-01T12:00:00Z');

function facts(over: Partial<PreconditionFacts> = {}): PreconditionFacts {
  return {
    now: NOW,
    target: instance(),
    rbac: { allowed: true },
    operations: [],
    secrets: new Set(),
    serviceAccounts: new Set(),
    ...over,
  };
}

/** The reason of a rejected or blocked result; 'satisfied' otherwise. */
const reasonOf = (r: ReturnType<typeof evaluatePreconditions>) =>
  r.outcome === 'satisfied' ? 'satisfied' : r.reason;

const evaluate = (
  op = operation('b'),
  f: Partial<PreconditionFacts> = {},
  templates: readonly Template[] = BUILTIN_TEMPLATES,
) => evaluatePreconditions(op, templates, facts(f));

describe('evaluatePreconditions', () => {
  it('all satisfied ⇒ satisfied with defaulted parameters and the effective policy', () => {
    const r = evaluate();
    expect(r.outcome).toBe('satisfied');
    if (r.outcome !== 'satisfied') return;
    expect(r.template.name).toBe('velero-backup');
    expect(r.parameters).toMatchObject({ ttl: '720h', quiesce: 'none' });
    expect(r.policy).toMatchObject({ requireReady: false, retryLimit: 1 });
  });

  it('TemplateNotFound and InvalidParameters are permanent', () => {
    const nf = evaluate(operation('b', { template: 'nope' }));
    expect(nf).toMatchObject({ outcome: 'rejected', reason: 'TemplateNotFound', permanent: true });
    const bad = evaluate(operation('b', { parameters: { ttl: 'forever' } }));
    expect(bad).toMatchObject({ outcome: 'rejected', reason: 'InvalidParameters', permanent: true });
    if (bad.outcome === 'rejected') expect(bad.message).toContain('spec.parameters.ttl');
  });

  it('TargetNotFound and RbacProfileMissing wait (not permanent); capability and selector are permanent', () => {
    expect(evaluate(operation('b'), { target: undefined })).toMatchObject({
      reason: 'TargetNotFound',
      permanent: false,
    });
    const rbac = evaluate(operation('b'), {
      rbac: {
        allowed: false,
        missing: [{ namespace: 'velero', group: 'velero.io', resource: 'backups', verb: 'create' }],
      },
    });
    expect(rbac).toMatchObject({ reason: 'RbacProfileMissing', permanent: false });
    if (rbac.outcome === 'rejected') {
      expect(rbac.message).toContain('create backups.velero.io in velero');
      expect(rbac.message).toContain('vworkspace-profile-backup-velero');
    }
    expect(
      evaluate(operation('b'), { target: instance('app', { capabilities: { backup: 'volsync' } }) }),
    ).toMatchObject({
      reason: 'CapabilityMissing',
      permanent: true,
    });
    const staging: Template[] = BUILTIN_TEMPLATES.map((t) =>
      t.name === 'velero-backup'
        ? { ...t, targetSelectors: { labelSelector: { matchLabels: { tier: 'staging' } } } }
        : t,
    );
    expect(evaluate(operation('b'), {}, staging)).toMatchObject({
      reason: 'SelectorMismatch',
      permanent: true,
    });
  });

  it('AwaitingApproval until ops.vworkspace.io/approve is "true"', () => {
    const op = operation('b', { policy: { requiresApproval: true } });
    expect(evaluate(op)).toMatchObject({ outcome: 'blocked', reason: 'AwaitingApproval' });
    const approved = operation(
      'b',
      { policy: { requiresApproval: true } },
      { annotations: { 'ops.vworkspace.io/approve': 'true' } },
    );
    expect(evaluate(approved).outcome).toBe('satisfied');
  });

  it('TargetNotReady when requireReady (default for Restore), with the target reason', () => {
    const restore = operation('r', { type: 'Restore', parameters: { backupName: 'b1' } });
    const r = evaluate(restore, { target: instance('app', { ready: 'ReleasePending' }) });
    expect(r).toMatchObject({ outcome: 'blocked', reason: 'TargetNotReady' });
    if (r.outcome === 'blocked') expect(r.message).toContain('ReleasePending');
    // Backup does not require Ready by default; requireReady: true makes it wait.
    expect(evaluate(operation('b'), { target: instance('app', { ready: false }) }).outcome).toBe('satisfied');
    expect(
      evaluate(operation('b', { policy: { requireReady: true } }), {
        target: instance('app', { ready: false }),
      }),
    ).toMatchObject({ reason: 'TargetNotReady' });
  });

  it('ConflictingOperation carries the queue position', () => {
    const running = withPhase(operation('b0', {}, { created: '2024-12-31T00:00:00Z' }), 'Running');
    const r = evaluate(operation('b'), { operations: [running] });
    expect(r).toMatchObject({ outcome: 'blocked', reason: 'ConflictingOperation', queuePosition: 1 });
  });

  it('MissingSecret and MissingServiceAccount name what to create', () => {
    const vs = operation('v', { engine: 'volsync', parameters: { repository: 'restic-repo' } });
    const target = instance('app', { capabilities: { backup: 'volsync' } });
    const r = evaluate(vs, { target });
    expect(r).toMatchObject({ outcome: 'blocked', reason: 'MissingSecret' });
    if (r.outcome === 'blocked') expect(r.message).toContain('Secret restic-repo');
    expect(evaluate(vs, { target, secrets: new Set(['restic-repo']) }).outcome).toBe('satisfied');

    const rc = operation('c', { type: 'RunCommand', engine: 'job', parameters: { command: ['true'] } });
    const t2 = instance('app', { capabilities: { runcommand: 'job' } });
    expect(evaluate(rc, { target: t2 })).toMatchObject({ reason: 'MissingServiceAccount' });
    expect(evaluate(rc, { target: t2, serviceAccounts: new Set(['vworkspace-runner']) }).outcome).toBe(
      'satisfied',
    );
  });

  it('OutsideMaintenanceWindow wakes at the exact opening', () => {
    const window = { schedule: '0 2 * * *', duration: '1h', timeZone: 'UTC' };
    const r = evaluate(operation('b'), { applicationWindow: window });
    expect(r).toMatchObject({ outcome: 'blocked', reason: 'OutsideMaintenanceWindow' });
    if (r.outcome === 'blocked') expect(r.wakeAt?.toISOString()).toBe('2025-01-02T02:00:00.000Z');
    expect(
      evaluate(operation('b'), { applicationWindow: window, now: new Date('2025-01-02T02:30:00Z') }).outcome,
    ).toBe('satisfied');
  });

  it('evaluates in the documented order: the first failing precondition decides', () => {
    // Everything wrong at once, then fixed one by one, in PRECONDITIONS order.
    const op = operation('r', {
      type: 'Restore',
      parameters: { backupName: 'b1' },
      policy: { requiresApproval: true },
    });
    const blockers = [withPhase(operation('b0', {}, { created: '2024-12-31T00:00:00Z' }), 'Running')];
    const steps: [string, Partial<PreconditionFacts>][] = [
      ['TargetNotFound', { target: undefined }],
      ['CapabilityMissing', { target: instance('app', { capabilities: {}, ready: false }) }],
      [
        'RbacProfileMissing',
        { target: instance('app', { ready: false }), rbac: { allowed: false, unknownProfile: true } },
      ],
      ['AwaitingApproval', { target: instance('app', { ready: false }) }],
    ];
    for (const [reason, f] of steps)
      expect(reasonOf(evaluate(op, { operations: blockers, ...f }))).toBe(reason);
    const approved = {
      ...op,
      metadata: { ...op.metadata, annotations: { 'ops.vworkspace.io/approve': 'true' } },
    };
    expect(
      reasonOf(evaluate(approved, { operations: blockers, target: instance('app', { ready: false }) })),
    ).toBe('TargetNotReady');
    expect(reasonOf(evaluate(approved, { operations: blockers }))).toBe('ConflictingOperation');
    expect(
      reasonOf(evaluate(approved, { applicationWindow: { schedule: '0 2 * * *', duration: '1h' } })),
    ).toBe('OutsideMaintenanceWindow');
    expect(PRECONDITIONS.indexOf('ApprovalGiven')).toBeLessThan(PRECONDITIONS.indexOf('TargetReady'));
  });
});
