import { describe, expect, it } from 'vitest';
import { aTemplate } from '../../../test/support/builders/catalog.ts';
import { requiredObjects, validateParameters } from './parameters.ts';
import { effectivePolicy, policyLoosening } from './policy.ts';
import { matchesLabelSelector, matchTemplateTarget } from './selectors.ts';
import { snapshotBackup, snapshotRestore, volsyncBackup } from './templates/index.ts';

describe('matchesLabelSelector', () => {
  const labels = { tier: 'staging', team: 'a' };
  it.each([
    [{ matchLabels: { tier: 'staging' } }, true],
    [{ matchLabels: { tier: 'production' } }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'In' as const, values: ['staging', 'qa'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn' as const, values: ['staging'] }] }, false],
    [{ matchExpressions: [{ key: 'legacy', operator: 'NotIn' as const, values: ['x'] }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'Exists' as const }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' as const }] }, false],
    [undefined, true],
  ])('%j → %s', (selector, expected) => {
    expect(matchesLabelSelector(selector, labels)).toBe(expected);
  });
});

describe('matchTemplateTarget', () => {
  const staging = aTemplate({
    name: 'destructive-migration',
    type: 'Migration',
    engine: 'workflow',
    targetSelectors: {
      labelSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['staging'] }] },
    },
  });

  it('needs the implicit capability annotation', () => {
    const r = matchTemplateTarget(staging, { name: 'app', annotations: {}, labels: { tier: 'staging' } });
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    expect(!r.ok && r.message).toContain('does not advertise ops.vworkspace.io/migration: workflow');
  });

  it('needs the label selector to match', () => {
    const annotations = { 'ops.vworkspace.io/migration': 'workflow' };
    expect(matchTemplateTarget(staging, { name: 'app', annotations, labels: { tier: 'staging' } })).toEqual({
      ok: true,
    });
    const r = matchTemplateTarget(staging, { name: 'app', annotations, labels: { tier: 'production' } });
    expect(r).toEqual({
      ok: false,
      reason: 'SelectorMismatch',
      message:
        'template destructive-migration only applies to ApplicationInstances matching tier in (staging); app does not',
    });
  });

  it('accepts any one of several capability selectors', () => {
    expect(
      matchTemplateTarget(snapshotBackup, {
        name: 'a',
        annotations: { 'ops.vworkspace.io/backup': 'snapshot' },
      }).ok,
    ).toBe(true);
    expect(
      matchTemplateTarget(snapshotBackup, {
        name: 'a',
        annotations: { 'ops.vworkspace.io/snapshot': 'snapshot' },
      }).ok,
    ).toBe(true);
    expect(
      matchTemplateTarget(snapshotBackup, {
        name: 'a',
        annotations: { 'ops.vworkspace.io/backup': 'velero' },
      }).ok,
    ).toBe(false);
  });

  it('snapshot-restore: restore: snapshot, or snapshot: snapshot beside a velero restore', () => {
    const offers = (annotations: Record<string, string>) =>
      matchTemplateTarget(snapshotRestore, { name: 'db', annotations });
    expect(offers({ 'ops.vworkspace.io/restore': 'snapshot' }).ok).toBe(true);
    expect(
      offers({ 'ops.vworkspace.io/restore': 'velero', 'ops.vworkspace.io/snapshot': 'snapshot' }).ok,
    ).toBe(true);
    const r = offers({ 'ops.vworkspace.io/restore': 'velero', 'ops.vworkspace.io/backup': 'snapshot' });
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    expect(!r.ok && r.message).toContain(
      'does not advertise ops.vworkspace.io/restore: snapshot or ops.vworkspace.io/snapshot: snapshot',
    );
  });
});

describe('effectivePolicy', () => {
  it('defaults requireReady by type when neither the Operation nor the template says', () => {
    expect(effectivePolicy('Restore', undefined, undefined)).toEqual({
      requireReady: true,
      retryLimit: 0,
      requiresApproval: false,
      dryRun: false,
    });
    expect(effectivePolicy('Backup', undefined, undefined).requireReady).toBe(false);
  });

  it('takes the Operation first, then the template defaults', () => {
    const defaults = {
      requireReady: true,
      retryLimit: 2,
      activeDeadlineSeconds: 600,
      ttlSecondsAfterFinished: 60,
    };
    expect(effectivePolicy('Backup', { retryLimit: 0, dryRun: true }, defaults)).toEqual({
      requireReady: true,
      retryLimit: 0,
      activeDeadlineSeconds: 600,
      requiresApproval: false,
      dryRun: true,
      ttlSecondsAfterFinished: 60,
    });
  });
});

describe('approval floor', () => {
  const guarded = { name: 'guarded', defaults: { requiresApproval: true }, separationOfDuties: true };

  it('keeps the template requiring approval whatever the Operation says', () => {
    for (const requiresApproval of [false, true, undefined]) {
      const policy = requiresApproval === undefined ? {} : { requiresApproval };
      expect(effectivePolicy('Backup', policy, guarded.defaults).requiresApproval).toBe(true);
    }
  });

  it('lets an Operation ask for approval the template does not require, or leave it off', () => {
    expect(
      effectivePolicy('Backup', { requiresApproval: true }, { requiresApproval: false }).requiresApproval,
    ).toBe(true);
    expect(effectivePolicy('Backup', {}, { requiresApproval: false }).requiresApproval).toBe(false);
    expect(effectivePolicy('Backup', { requiresApproval: false }, undefined).requiresApproval).toBe(false);
  });

  it('names the loosening at requiresApproval, with separation of duties in the message', () => {
    const found = policyLoosening({ requiresApproval: false }, guarded);
    expect(found.map((l) => l.field)).toEqual(['requiresApproval']);
    expect(found[0]?.message).toContain(
      'template guarded requires approval by someone other than its creator',
    );
    expect(policyLoosening({ requiresApproval: true }, guarded)).toEqual([]);
    expect(policyLoosening({}, guarded)).toEqual([]);
    expect(policyLoosening(undefined, guarded)).toEqual([]);
    expect(policyLoosening({ requiresApproval: false }, { name: 'open' })).toEqual([]);
  });

  it('leaves the other fields defaults an Operation may override either way', () => {
    const defaults = { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 600 };
    const policy = { requireReady: false, retryLimit: 3, activeDeadlineSeconds: 7200 };
    expect(policyLoosening(policy, { name: 't', defaults })).toEqual([]);
    expect(effectivePolicy('Restore', policy, defaults)).toMatchObject(policy);
  });
});

describe('parameters', () => {
  it('returns the defaulted parameters and the objects the preconditions need', () => {
    const r = validateParameters(volsyncBackup, { repository: 'restic-config' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.parameters).toEqual({ repository: 'restic-config', copyMethod: 'Snapshot' });
    expect(requiredObjects(volsyncBackup, r.parameters)).toEqual({
      secrets: ['restic-config'],
      serviceAccounts: [],
    });
  });

  it('a per-claim repository map needs every Secret it names', () => {
    const r = validateParameters(volsyncBackup, {
      repository: { 'db-0': 'restic-db', 'wal-0': 'restic-wal' },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(requiredObjects(volsyncBackup, r.parameters).secrets).toEqual(['restic-db', 'restic-wal']);
    const bad = validateParameters(volsyncBackup, { repository: { 'db-0': 'Not_A_Name' } });
    expect(bad.ok).toBe(false);
  });

  it('collects fixed names and parameter names, once each', () => {
    const t = aTemplate({
      preconditions: [
        { name: 'RequiredSecretsPresent', names: ['ca', 'ca'] },
        { name: 'RequiredServiceAccountPresent', parameter: 'sa' },
      ],
    });
    expect(requiredObjects(t, { sa: 'runner' })).toEqual({ secrets: ['ca'], serviceAccounts: ['runner'] });
  });

  it('explains invalid parameters with field paths', () => {
    const r = validateParameters(volsyncBackup, { repository: 'x', copyMethod: 'Teleport' });
    expect(r).toMatchObject({ ok: false, reason: 'InvalidParameters' });
    expect(!r.ok && r.message).toContain('spec.parameters.copyMethod: Unsupported value: "Teleport"');
  });
});
