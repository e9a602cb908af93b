// Condition types and reasons: one contract for every engine (DESIGN §2 "Conditions and reasons").
// Each reason is listed once, with the condition it belongs to, so code, tests and docs share one table.
import type { ConditionStatus } from './enums.ts';

export const CONDITION_ACCEPTED = 'Accepted';
export const CONDITION_BLOCKED = 'Blocked';
export const CONDITION_RUNNING = 'Running';
export const CONDITION_SUCCEEDED = 'Succeeded';
/** CronOperation with spec.rollout: its latest fleet run is halted (the failure budget is spent). */
export const CONDITION_HALTED = 'Halted';
/** CronOperation with spec.retention: whether its last retention pass could run. */
export const CONDITION_RETENTION = 'Retention';
/** ApplicationInstance (from the Helm release record), CronOperation and WatchOperation. */
export const CONDITION_READY = 'Ready';

export const OPERATION_CONDITION_TYPES = [
  CONDITION_ACCEPTED,
  CONDITION_BLOCKED,
  CONDITION_RUNNING,
  CONDITION_SUCCEEDED,
] as const;
export type OperationConditionType = (typeof OPERATION_CONDITION_TYPES)[number];

export type ReasonGroup =
  | 'accepted'
  | 'blocked'
  | 'engine'
  | 'policy'
  | 'instance'
  | 'scheduler'
  | 'rollout'
  | 'retention';

export interface ReasonInfo {
  readonly condition: string;
  /** The status the condition carries with this reason. */
  readonly status: ConditionStatus;
  readonly group: ReasonGroup;
  readonly when: string;
}

const accepted = (status: ConditionStatus, when: string): ReasonInfo => ({
  condition: CONDITION_ACCEPTED,
  status,
  group: 'accepted',
  when,
});
const blocked = (when: string): ReasonInfo => ({
  condition: CONDITION_BLOCKED,
  status: 'True',
  group: 'blocked',
  when,
});
// Engine reasons mark either progress (on Running=True) or the end (on Succeeded=True|False).
const progress = (when: string): ReasonInfo => ({
  condition: CONDITION_RUNNING,
  status: 'True',
  group: 'engine',
  when,
});
const done = (status: 'True' | 'False', when: string): ReasonInfo => ({
  condition: CONDITION_SUCCEEDED,
  status,
  group: 'engine',
  when,
});
const policy = (when: string): ReasonInfo => ({
  condition: CONDITION_SUCCEEDED,
  status: 'False',
  group: 'policy',
  when,
});
const instance = (status: ConditionStatus, when: string): ReasonInfo => ({
  condition: CONDITION_READY,
  status,
  group: 'instance',
  when,
});
const scheduler = (status: ConditionStatus, when: string): ReasonInfo => ({
  condition: CONDITION_READY,
  status,
  group: 'scheduler',
  when,
});
const rollout = (status: ConditionStatus, when: string): ReasonInfo => ({
  condition: CONDITION_HALTED,
  status,
  group: 'rollout',
  when,
});
const retention = (status: ConditionStatus, when: string): ReasonInfo => ({
  condition: CONDITION_RETENTION,
  status,
  group: 'retention',
  when,
});

/**
 * Every reason the operator writes. Names are verbatim from DESIGN.md; entries marked "(added)" name
 * states the design's table leaves unnamed (an engine's in-progress or failure state, the cleared Blocked
 * condition, a finished dry run) so no adapter has to invent its own spelling.
 */
export const REASONS = {
  // Accepted
  TemplateValidated: accepted('True', 'template found, parameters valid, preconditions satisfied'),
  TemplateNotFound: accepted('False', 'no template matches spec.template or spec.type + spec.engine'),
  InvalidParameters: accepted('False', "spec.parameters do not validate against the template's inputSchema"),
  CapabilityMissing: accepted('False', 'the target does not advertise ops.vworkspace.io/<verb>: <engine>'),
  SelectorMismatch: accepted('False', "the target does not match the template's label selector"),
  TargetNotFound: accepted('False', 'no ApplicationInstance spec.targetRef.name in the namespace'),
  RbacProfileMissing: accepted('False', "the operator lacks a rule of the template's RBAC profile here"),
  NotAllowedByTemplate: accepted(
    'False',
    '(added) the request asks for what its template does not allow: a ServiceAccount outside allowedServiceAccounts, a ClusterWorkflowTemplate, cluster-scoped objects',
  ),
  UnsafePodSpec: accepted(
    'False',
    "(added) the chart's migration Job asks for more than the restricted Pod Security Standard (host namespaces or paths, privilege, capabilities, root)",
  ),
  BackupNotAllowed: accepted(
    'False',
    "(added) the velero.io Backup to restore does not exist or was not made for the Operation's namespace",
  ),
  BackupNotFound: accepted(
    'False',
    '(added) a Restore found no backup to restore: no complete snapshot Backup of the instance, or no velero Backup of it from the source namespace',
  ),
  EngineNotInstalled: accepted(
    'False',
    "(added) the engine's child kinds are not served (e.g. Velero's CRDs are missing); waits, then fails",
  ),
  NotAdmitted: accepted(
    'False',
    "(added) no valid signed admission record (ops.vworkspace.io/admission): the operator's webhooks did not admit it (a namespace they do not select, or stored while they were away); nothing runs",
  ),
  RequesterNotAuthorized: accepted(
    'False',
    '(added) checked again before the start: the stamped creator lost the type verb on the target, or the approver lost `approve` or is the creator or someone the Operation acts for under separationOfDuties',
  ),
  InputsUnavailable: accepted(
    'False',
    '(added) a parametersFrom source cannot give its outputs (missing, not Succeeded, or without the output)',
  ),
  TargetReleaseClaimed: accepted(
    'False',
    '(added) the target names a Helm release an older ApplicationInstance of the namespace describes',
  ),
  ChartSourceNotAllowed: accepted(
    'False',
    "(added) Upgrade: spec.appRef.chart differs from the source the release was installed from (status.release.chartSource) and the template's allowedChartSources does not list it",
  ),
  // Blocked
  TargetNotReady: blocked('policy.requireReady and the target is not Ready'),
  ConflictingOperation: blocked('another Operation on the same target conflicts; waits in FIFO order'),
  MissingSecret: blocked('a Secret the template requires does not exist yet'),
  MissingServiceAccount: blocked('a ServiceAccount the template requires does not exist yet'),
  OutsideMaintenanceWindow: blocked('outside the maintenance window; woken when it opens'),
  AwaitingApproval: blocked('policy.requiresApproval and no ops.vworkspace.io/approve: "true" yet'),
  TargetPaused: blocked(
    '(added) the target carries ops.vworkspace.io/paused: "true"; nothing is started or followed',
  ),
  TargetGenerationMismatch: blocked(
    "(added) TargetGenerationMatches: the target's status.observedGeneration lags its metadata.generation",
  ),
  DependencyNotMet: blocked(
    '(added) a template dependency has no recent enough Succeeded Operation, or a parametersFrom source has not finished',
  ),
  PreconditionsSatisfied: {
    condition: CONDITION_BLOCKED,
    status: 'False',
    group: 'blocked',
    when: '(added) Blocked cleared: every precondition holds',
  },
  // Engines
  VeleroBackupInProgress: progress('velero.io Backup is New or InProgress'),
  VeleroBackupCompleted: done('True', 'velero.io Backup Completed'),
  VeleroBackupPartiallyFailed: done('False', 'velero.io Backup PartiallyFailed'),
  VeleroBackupFailed: done('False', 'velero.io Backup Failed or FailedValidation'),
  VeleroRestoreInProgress: progress('velero.io Restore is New or InProgress'),
  VeleroRestoreCompleted: done('True', 'velero.io Restore Completed'),
  VeleroRestorePartiallyFailed: done('False', 'velero.io Restore PartiallyFailed'),
  VeleroRestoreFailed: done('False', 'velero.io Restore Failed or FailedValidation'),
  VerifyRestoreInProgress: progress(
    '(added) Verify: the backup is being restored into the scratch namespace (velero.io Restore New or InProgress)',
  ),
  VerifyProbeRunning: progress('(added) Verify: the restore completed; the probe Job runs against the copy'),
  VerifyPassed: done('True', '(added) Verify: the probe passed on the restored copy; RTO and RPO in outputs'),
  VerifyProbeFailed: done(
    'False',
    '(added) Verify: the probe Job failed on the restored copy; the message has its last lines',
  ),
  VerifyRestoreFailed: done(
    'False',
    "(added) Verify: the restore into the scratch namespace Failed or PartiallyFailed (e.g. damaged backup data); the message has the Restore's phase, error count and failure reason",
  ),
  WorkflowRunning: progress('argoproj.io Workflow Pending or Running'),
  WorkflowSucceeded: done('True', 'argoproj.io Workflow Succeeded'),
  WorkflowNodeFailed: done('False', 'argoproj.io Workflow Failed: a node failed'),
  WorkflowFailed: done('False', '(added) argoproj.io Workflow Failed or Error without a failed node'),
  JobRunning: progress('batch Job active'),
  JobSucceeded: done('True', 'batch Job Complete'),
  JobFailed: done('False', 'batch Job Failed'),
  HelmUpgradeInProgress: progress('helm runner Job active'),
  HelmUpgradeSucceeded: done('True', 'helm runner Job Complete'),
  HelmUpgradeFailed: done(
    'False',
    "helm runner Job Failed, or stopped by cancel or the deadline; the release is back on the revision it started from (helm --atomic, else the Operation's rollback Job)",
  ),
  HelmRollbackInProgress: progress(
    "(added) the helm runner was stopped with the release left pending or failed: the Upgrade's rollback Job runs `helm rollback` to the revision it started from",
  ),
  RollbackFailed: done(
    'False',
    "(added; was HelmRollbackFailed) putting the release back failed: the rollback Job failed (the release may still be pending or on the new revision), or a Safe Upgrade's restore from its pre-upgrade backup did; the message says which `helm rollback` or Restore to run. Never retried; alert VWorkspaceRollbackFailed",
  ),
  PostCheckRunning: progress(
    "(added) Safe Upgrade: helm upgraded the release; the template's post-check Job runs against it",
  ),
  PostCheckFailed: done(
    'False',
    "(added) Safe Upgrade: the template's post-check failed after the upgrade; the release was rolled back to the revision it started from and, when the template declares that the upgrade may change data, its claims restored from the pre-upgrade backup (status.rollback)",
  ),
  HelmHookJobRunning: progress('(added) chart migration hook Job active'),
  HelmHookJobSucceeded: done('True', 'chart migration hook Job Complete'),
  HelmHookJobFailed: done('False', 'chart migration hook Job Failed'),
  VolumeSnapshotInProgress: progress('(added) some VolumeSnapshot not readyToUse yet'),
  VolumeSnapshotReadyToUse: done('True', 'every VolumeSnapshot readyToUse'),
  VolumeSnapshotFailed: done('False', 'a VolumeSnapshot reports an error'),
  VolumeSnapshotRestoreInProgress: progress(
    '(added) snapshot Restore: scaling the workloads down, replacing the claims from their VolumeSnapshots, scaling back',
  ),
  VolumeSnapshotRestored: done(
    'True',
    '(added) every claim recreated from its VolumeSnapshot, Bound, workloads ready',
  ),
  VolumeSnapshotRestoreFailed: done(
    'False',
    '(added) snapshot Restore stopped before any claim was replaced; the workloads were scaled back',
  ),
  VolSyncSyncInProgress: progress('a ReplicationSource/Destination has not finished the manual sync'),
  VolSyncSyncCompleted: done('True', 'every ReplicationSource/Destination lastManualSync matches'),
  VolSyncSyncFailed: done('False', '(added) a ReplicationSource/Destination reports a failed sync'),
  DryRunCompleted: done('True', '(added) policy.dryRun: status.plan holds the child that would be created'),
  // Policy
  DeadlineExceeded: policy('policy.activeDeadlineSeconds passed since startedAt'),
  RetryLimitExceeded: policy('the child failed policy.retryLimit + 1 times'),
  Cancelled: policy('spec.cancel was set; the child was stopped'),
  ChildConflict: policy(
    "(added) an object under a child's name is not this Operation's (no controller owner reference / operation-uid label of it), or was replaced",
  ),
  PreconditionDeadlineExceeded: policy(
    '(added) policy.preconditionDeadlineSeconds passed while still waiting',
  ),
  // ApplicationInstance Ready (from the Helm release record)
  ReleaseDeployed: instance('True', 'latest release revision is deployed'),
  ReleaseFailed: instance('False', 'latest release revision is failed'),
  ReleasePending: instance('False', 'latest release revision is pending-install/upgrade/rollback'),
  ReleaseNotFound: instance('False', 'no helm.sh/release.v1 Secret for the release in the namespace'),
  ReleaseNamespaceForbidden: instance(
    'False',
    '(added) spec.release.namespace names another namespace; the record is not read (admitted without the webhook)',
  ),
  ReleaseClaimed: instance(
    'False',
    '(added) an older ApplicationInstance of the namespace names the same release; the record is not read (admitted without the webhook)',
  ),
  ReleaseRecordUnreadable: instance(
    'False',
    '(added) no revision of the release record can be decoded (e.g. it inflates past the size limit)',
  ),
  // CronOperation / WatchOperation Ready
  ScheduleActive: scheduler('True', 'CronOperation schedule and time zone are valid; runs are planned'),
  InvalidSchedule: scheduler('False', 'spec.schedule does not parse'),
  InvalidTimeZone: scheduler('False', 'spec.timeZone is not a known IANA zone'),
  Suspended: scheduler('False', 'spec.suspend is true; nothing is created'),
  WatchActive: scheduler('True', 'WatchOperation watches its ApplicationInstances'),
  InvalidSelector: scheduler('False', 'spec.selector does not parse'),
  InvalidOperationTemplate: scheduler(
    'False',
    "(added) spec.operationTemplate.spec.parameters is past the webhook's depth or size bounds (stored where it did not run); nothing is created",
  ),
  OperationRefused: scheduler(
    'False',
    '(added) the API server or the admission webhook refused the Operation a run or trigger would create; Warning Event with the refusal',
  ),
  // CronOperation and WatchOperation Halted (spec.rollout; docs/rollout.md)
  WaveRunning: rollout('False', '(added) the fleet run rolls out; the message names the wave and the tally'),
  PausedBetweenWaves: rollout('False', '(added) a wave finished; the next starts after pauseBetweenWaves'),
  FailureBudgetExceeded: rollout(
    'True',
    '(added) more instances failed than spec.rollout.failureBudget; nothing more starts until kubectl vws resume or abandon',
  ),
  RolloutAbandoned: rollout('False', '(added) a person abandoned the run; nothing more of it starts'),
  RolloutCompleted: rollout('False', '(added) every instance of the run finished, none failed'),
  CompletedWithFailures: rollout(
    'False',
    '(added) every instance of the run finished, some failed (within the budget, or after a resume)',
  ),
  InvalidRollout: rollout('False', '(added) spec.rollout cannot be used (stored without the webhook)'),
  // CronOperation Retention (spec.retention; docs/retention.md)
  RetentionApplied: retention(
    'True',
    '(added) the last retention pass listed the backups and asked the engine to delete those the policy does not keep',
  ),
  RetentionBlocked: retention(
    'False',
    '(added) the pass could not list or delete the backups (the operator lacks a rule of its RBAC profile, or the policy cannot be used); nothing was deleted, the message says what to grant or fix',
  ),
} as const satisfies Record<string, ReasonInfo>;

export type Reason = keyof typeof REASONS;
export const ALL_REASONS = Object.keys(REASONS) as Reason[];

/** The metav1.Condition reason format the CRD schema enforces. */
export const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

function group(g: ReasonGroup): Reason[] {
  return ALL_REASONS.filter((r) => REASONS[r].group === g);
}
export const ACCEPTED_REASONS = group('accepted');
export const BLOCKED_REASONS = group('blocked');
export const ENGINE_REASONS = group('engine');
export const POLICY_REASONS = group('policy');
export const INSTANCE_REASONS = group('instance');
export const SCHEDULER_REASONS = group('scheduler');
export const ROLLOUT_REASONS = group('rollout');
export const RETENTION_REASONS = group('retention');

/** Typed access (`Reason.TargetNotReady`) that fails to compile on a misspelling. */
export const Reason = Object.fromEntries(ALL_REASONS.map((r) => [r, r])) as { readonly [R in Reason]: R };
