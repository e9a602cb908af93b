import { describe, expect, it } from 'vitest';
import { instance, operation, ran, withPhase } from '../../../test/support/builders/operation.ts';
import { PRECONDITIONS } from '../api/enums.ts';
import type { Template } from '../catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { evaluatePreconditions, type PreconditionFacts } from './preconditions.ts';

const NOW = new Date('2025-01-01T12:00:00Z');
const at = (iso: string) => new Date(iso);

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

  it('refuses a target whose release an older instance describes, permanently, naming it (TargetReleaseClaimed)', () => {
    const r = evaluate(operation('b'), { claimant: instance('shop') });
    expect(r).toMatchObject({
      outcome: 'rejected',
      precondition: 'TargetExists',
      reason: 'TargetReleaseClaimed',
      permanent: true,
    });
    if (r.outcome === 'rejected') {
      expect(r.message).toContain('which ApplicationInstance shop (created before it) describes');
      expect(r.message).toContain('create a new Operation');
    }
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

  it('a Restore from spec.source whose instance is gone: judged on the instance its backup recorded', () => {
    const bringBack = operation('r', { type: 'Restore', source: { namespace: 'team' } });
    const recorded = instance('app', { capabilities: { restore: 'velero' }, ready: false });
    // No Ready to wait for (nothing is there yet), the recorded capability counts.
    expect(evaluate(bringBack, { target: undefined, absentTarget: { recorded, problem: '' } }).outcome).toBe(
      'satisfied',
    );
    const notRestorable = instance('app', { capabilities: { backup: 'velero' } });
    expect(
      evaluate(bringBack, { target: undefined, absentTarget: { recorded: notRestorable, problem: '' } }),
    ).toMatchObject({
      reason: 'CapabilityMissing',
    });
    // No backup to bring it back from: waits (a backup may still be synced into Velero), saying why.
    expect(
      evaluate(bringBack, { target: undefined, absentTarget: { problem: 'no backup of app' } }),
    ).toMatchObject({
      outcome: 'rejected',
      reason: 'BackupNotFound',
      message: 'no backup of app',
      permanent: false,
    });
    // Without spec.source an absent target is still TargetNotFound.
    expect(
      evaluate(operation('r', { type: 'Restore', parameters: { backupName: 'b1' } }), { target: undefined }),
    ).toMatchObject({
      reason: 'TargetNotFound',
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

  it("not started in a window's last minutes when the template's expectedDuration is longer than what is left", () => {
    // Daily 02:00–04:00 UTC on the catalog application; the template expects a run to take 90m.
    const window = { schedule: '0 2 * * *', duration: '2h', timeZone: 'UTC' };
    const base = BUILTIN_TEMPLATES.find((t) => t.name === 'velero-backup')!;
    const templates = [{ ...base, expectedDuration: '90m' }];
    const when = (iso: string) =>
      evaluate(operation('b'), { applicationWindow: window, now: at(iso) }, templates);
    expect(when('2025-01-02T02:00:00Z').outcome).toBe('satisfied');
    expect(when('2025-01-02T02:30:00Z').outcome).toBe('satisfied'); // exactly 90m left
    const late = when('2025-01-02T02:31:00Z');
    expect(late).toMatchObject({ outcome: 'blocked', reason: 'OutsideMaintenanceWindow' });
    if (late.outcome !== 'blocked') return;
    expect(late.wakeAt?.toISOString()).toBe('2025-01-03T02:00:00.000Z');
    expect(late.message).toBe(
      'only 1h29m is left in the maintenance window of the catalog application (0 2 * * * UTC, 2h) (it closes at 2025-01-02T04:00:00Z) and template velero-backup expects a run to take 1h30m (expectedDuration); starts automatically when it opens at 2025-01-03T02:00:00Z',
    );
    // A window shorter than the expected duration never fits: Blocked without a wake-up, saying so.
    const never = evaluate(operation('b'), { applicationWindow: window, now: at('2025-01-02T02:00:00Z') }, [
      { ...base, expectedDuration: '3h' },
    ]);
    expect(never).toMatchObject({ outcome: 'blocked', reason: 'OutsideMaintenanceWindow' });
    if (never.outcome === 'blocked') {
      expect(never.wakeAt).toBeUndefined();
      expect(never.message).toContain('lengthen the window or shorten expectedDuration');
    }
    // The template's own window gets the same treatment; without a window expectedDuration changes nothing.
    const own = [{ ...base, expectedDuration: '90m', maintenanceWindow: window }];
    expect(evaluate(operation('b'), { now: at('2025-01-02T03:00:00Z') }, own).outcome).toBe('blocked');
    expect(evaluate(operation('b'), {}, [{ ...base, expectedDuration: '90m' }]).outcome).toBe('satisfied');
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
        'EngineNotInstalled',
        {
          target: instance('app', { ready: false }),
          rbac: { allowed: false, unknownProfile: true },
          engine: { installed: false, missing: ['Restore (velero.io/v1)'] },
        },
      ],
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

  it('EngineInstalled waits (not permanent) and says what to install', () => {
    const r = evaluate(operation('b'), { engine: { installed: false, missing: ['Backup (velero.io/v1)'] } });
    expect(r).toMatchObject({ outcome: 'rejected', reason: 'EngineNotInstalled', permanent: false });
    if (r.outcome === 'rejected') {
      expect(r.message).toMatch(
        /^engine velero is not installed: the API server does not serve Backup \(velero.io\/v1\); install Velero/,
      );
    }
  });

  it('TargetGenerationMatches (when listed): waits until the instance status observed its latest spec', () => {
    const t: Template = {
      ...BUILTIN_TEMPLATES[0]!,
      preconditions: [...BUILTIN_TEMPLATES[0]!.preconditions, { name: 'TargetGenerationMatches' }],
    };
    const target = (generation: number, observed?: number) => {
      const i = instance();
      i.metadata.generation = generation;
      if (observed !== undefined) i.status = { ...i.status, observedGeneration: observed };
      return i;
    };
    expect(evaluate(operation('b'), { target: target(3, 2) }, [t])).toMatchObject({
      outcome: 'blocked',
      reason: 'TargetGenerationMismatch',
      message: expect.stringContaining('status.observedGeneration 2 lags metadata.generation 3'),
    });
    expect(reasonOf(evaluate(operation('b'), { target: target(3) }, [t]))).toBe('TargetGenerationMismatch');
    expect(reasonOf(evaluate(operation('b'), { target: target(3, 3) }, [t]))).toBe('satisfied');
    // Not listed: not checked.
    expect(reasonOf(evaluate(operation('b'), { target: target(3, 2) }))).toBe('satisfied');
  });

  it('DependenciesSucceeded blocks with DependencyNotMet; parametersFrom sources block or reject before parameters', () => {
    const t: Template = { ...BUILTIN_TEMPLATES[0]!, dependencies: [{ type: 'Upgrade', maxAge: '1h' }] };
    expect(evaluate(operation('b'), {}, [t])).toMatchObject({
      outcome: 'blocked',
      reason: 'DependencyNotMet',
    });
    const restore = operation('r', { type: 'Restore' });
    expect(evaluate(restore)).toMatchObject({
      outcome: 'rejected',
      reason: 'InputsUnavailable',
      permanent: true,
    });
    const running = ran(operation('b1'), 'Running');
    expect(evaluate(restore, { operations: [running] })).toMatchObject({
      outcome: 'blocked',
      precondition: 'Inputs',
      reason: 'DependencyNotMet',
    });
    const done = ran(operation('b1'), 'Succeeded', { outputs: { backupName: 'b1-x' } });
    const ok = evaluate(restore, { operations: [done] });
    expect(ok).toMatchObject({ outcome: 'satisfied', parameters: { backupName: 'b1-x' } });
    expect(ok.outcome === 'satisfied' && ok.inputs?.[0]?.operation).toBe('b1');
    // A value read that the inputSchema refuses: InvalidParameters, with the record kept for the auditor.
    const bad = ran(operation('b1'), 'Succeeded', { outputs: { backupName: 'Not A Name' } });
    expect(evaluate(restore, { operations: [bad] })).toMatchObject({
      outcome: 'rejected',
      reason: 'InvalidParameters',
      inputs: [expect.objectContaining({ operation: 'b1' })],
      message: expect.stringContaining('see status.inputs'),
    });
  });
});
