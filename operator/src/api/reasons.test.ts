import { describe, expect, it } from 'vitest';
import { ENGINE_TYPES, ENGINES, OPERATION_TYPES, TYPE_CAPABILITY_VERB } from './enums.ts';
import { ALL_REASONS, REASON_PATTERN, REASONS, Reason } from './reasons.ts';

// The reason table of DESIGN.md §2, verbatim ("VeleroRestore…" spelled out as the Backup ones are).
const DESIGN_REASONS = [
  'TemplateValidated',
  'TemplateNotFound',
  'InvalidParameters',
  'CapabilityMissing',
  'SelectorMismatch',
  'TargetNotFound',
  'RbacProfileMissing',
  'TargetNotReady',
  'ConflictingOperation',
  'MissingSecret',
  'MissingServiceAccount',
  'OutsideMaintenanceWindow',
  'AwaitingApproval',
  'VeleroBackupInProgress',
  'VeleroBackupCompleted',
  'VeleroBackupPartiallyFailed',
  'VeleroBackupFailed',
  'VeleroRestoreInProgress',
  'VeleroRestoreCompleted',
  'VeleroRestorePartiallyFailed',
  'VeleroRestoreFailed',
  'WorkflowRunning',
  'WorkflowSucceeded',
  'WorkflowNodeFailed',
  'JobRunning',
  'JobSucceeded',
  'JobFailed',
  'HelmUpgradeInProgress',
  'HelmUpgradeSucceeded',
  'HelmUpgradeFailed',
  'HelmHookJobSucceeded',
  'HelmHookJobFailed',
  'VolumeSnapshotReadyToUse',
  'VolumeSnapshotFailed',
  'VolSyncSyncInProgress',
  'VolSyncSyncCompleted',
  'DeadlineExceeded',
  'RetryLimitExceeded',
  'Cancelled',
  'ReleaseDeployed',
  'ReleaseFailed',
  'ReleasePending',
  'ReleaseNotFound',
];

describe('reasons', () => {
  it('contains every reason of the design table', () => {
    expect(DESIGN_REASONS.filter((r) => !(r in REASONS))).toEqual([]);
  });

  it('are UpperCamelCase and fit the metav1.Condition reason pattern', () => {
    for (const r of ALL_REASONS) {
      expect(r).toMatch(/^[A-Z][A-Za-z0-9]*$/);
      expect(r).toMatch(REASON_PATTERN);
    }
  });

  it('puts Accepted=False reasons on Accepted and policy endings on Succeeded=False', () => {
    expect(REASONS.CapabilityMissing).toMatchObject({ condition: 'Accepted', status: 'False' });
    expect(REASONS.TemplateValidated).toMatchObject({ condition: 'Accepted', status: 'True' });
    expect(REASONS.AwaitingApproval).toMatchObject({ condition: 'Blocked', status: 'True' });
    expect(REASONS.DeadlineExceeded).toMatchObject({ condition: 'Succeeded', status: 'False' });
    expect(REASONS.VeleroBackupInProgress).toMatchObject({ condition: 'Running', status: 'True' });
    expect(Reason.JobSucceeded).toBe('JobSucceeded');
  });
});

describe('enums', () => {
  it('gives every engine a type list and every type a capability verb', () => {
    expect(Object.keys(ENGINE_TYPES).sort()).toEqual([...ENGINES].sort());
    expect(Object.keys(TYPE_CAPABILITY_VERB).sort()).toEqual([...OPERATION_TYPES].sort());
    for (const types of Object.values(ENGINE_TYPES)) {
      for (const t of types) expect(OPERATION_TYPES).toContain(t);
    }
  });
});
