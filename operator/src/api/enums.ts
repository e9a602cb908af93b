// The closed vocabularies of the API. Each is a readonly tuple (the CRD enum and the TS union come
// from the same list) so a value added here reaches the schema, the types and the docs together.

export const OPERATION_TYPES = [
  'Backup',
  'Restore',
  'Upgrade',
  'Migration',
  'RunCommand',
  'Runbook',
  'Verify',
] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export const ENGINES = ['velero', 'workflow', 'job', 'helm', 'helmHookJob', 'volsync', 'snapshot'] as const;
export type Engine = (typeof ENGINES)[number];

export const OPERATION_PHASES = [
  'Pending',
  'Blocked',
  'Running',
  'Succeeded',
  'Failed',
  'Cancelled',
] as const;
export type OperationPhase = (typeof OPERATION_PHASES)[number];

/** Phases after which an Operation never changes again. */
export const TERMINAL_PHASES: readonly OperationPhase[] = ['Succeeded', 'Failed', 'Cancelled'];

export const CONCURRENCY_POLICIES = ['Allow', 'Forbid', 'Replace'] as const;
export type ConcurrencyPolicy = (typeof CONCURRENCY_POLICIES)[number];

export const CHART_SOURCE_TYPES = ['oci', 'helm'] as const;
export type ChartSourceType = (typeof CHART_SOURCE_TYPES)[number];

/** Where an effective capability came from (DESIGN §1: catalog, then chart annotations, else manual). */
export const CAPABILITY_SOURCES = ['catalog', 'chart', 'manual'] as const;
export type CapabilitySource = (typeof CAPABILITY_SOURCES)[number];

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

/** Verbs of the capability annotations `ops.vworkspace.io/<verb>: <engine>`. */
export const CAPABILITY_VERBS = [
  'backup',
  'restore',
  'upgrade',
  'migration',
  'snapshot',
  'replicate',
  'quiesce',
  'runbook',
  'runcommand',
] as const;
export type CapabilityVerb = (typeof CAPABILITY_VERBS)[number];

/** Values a capability annotation may name: the engines, plus `exec` for the quiesce hook. */
export const CAPABILITY_ENGINES = [...ENGINES, 'exec'] as const;
export type CapabilityEngine = (typeof CAPABILITY_ENGINES)[number];

/** The capability verb an Operation type needs on its target (the implicit template selector). */
export const TYPE_CAPABILITY_VERB: Readonly<Record<OperationType, CapabilityVerb>> = {
  Backup: 'backup',
  Restore: 'restore',
  Upgrade: 'upgrade',
  Migration: 'migration',
  RunCommand: 'runcommand',
  Runbook: 'runbook',
  // A restore drill restores: an instance that may be restored by an engine may be drilled by it.
  Verify: 'restore',
};

/**
 * The SubjectAccessReview verb on the target an Operation type needs (DESIGN §6): the type in lower case,
 * except Verify, which needs `restore` (ADR 0054: a drill reads the same backups a Restore does).
 */
export function typeAccessVerb(type: OperationType): string {
  return type === 'Verify' ? 'restore' : type.toLowerCase();
}

/**
 * The Operation types each engine can physically carry out (the child it creates decides): Velero and
 * VolSync back up and restore, so does a CSI snapshot (a claim recreated from it), Helm only upgrades, a chart hook Job only
 * migrates. Argo Workflows and plain Jobs run arbitrary steps, so catalog templates may use them for any
 * type. Enforced by CEL on Operation, CronOperation and WatchOperation, and by the catalog loader.
 */
/**
 * What a catalog template may run on the step engines (workflow, job): every type but Verify, whose scratch
 * namespace, clean-up and measured outputs only the operator's own drill provides (ADR 0054).
 */
const STEP_TYPES: readonly OperationType[] = OPERATION_TYPES.filter((t) => t !== 'Verify');

export const ENGINE_TYPES: Readonly<Record<Engine, readonly OperationType[]>> = {
  velero: ['Backup', 'Restore', 'Verify'],
  workflow: STEP_TYPES,
  job: STEP_TYPES,
  helm: ['Upgrade'],
  helmHookJob: ['Migration'],
  volsync: ['Backup', 'Restore', 'Verify'],
  snapshot: ['Backup', 'Restore', 'Verify'],
};

export function engineSupportsType(engine: Engine, type: OperationType): boolean {
  return ENGINE_TYPES[engine].includes(type);
}

/** Types whose `policy.requireReady` defaults to true (DESIGN §2). */
export const REQUIRE_READY_BY_DEFAULT: readonly OperationType[] = ['Restore', 'Upgrade', 'Migration'];

/** Destructive verbs conflict with every running Operation on the same target (DESIGN §2). */
export const DESTRUCTIVE_TYPES: readonly OperationType[] = ['Restore', 'Upgrade', 'Migration'];

/**
 * Preconditions, in the order the reconciler evaluates them before any child exists (DESIGN §2, plus
 * EngineInstalled, TargetGenerationMatches and DependenciesSucceeded: issue 14).
 */
export const PRECONDITIONS = [
  'TargetExists',
  'CapabilityAdvertised',
  'TemplateSelectors',
  'EngineInstalled',
  'RbacProfilePresent',
  'ApprovalGiven',
  'TargetGenerationMatches',
  'TargetReady',
  'DependenciesSucceeded',
  'NoConflictingOperation',
  'RequiredSecretsPresent',
  'RequiredServiceAccountPresent',
  'MaintenanceWindow',
] as const;
export type PreconditionName = (typeof PRECONDITIONS)[number];

/** Stable ids of the RBAC profiles shipped as ClusterRoles in the bundle (DESIGN §3). */
export const RBAC_PROFILES = [
  'backup.velero',
  'restore.velero',
  'upgrade.helm',
  'migration.helmHookJob',
  'runCommand.job',
  'runbook.workflow',
  'backup.volsync',
  'restore.volsync',
  'backup.snapshot',
  'restore.snapshot',
  'verify.velero',
  'safeUpgrade.helm',
  'verify.snapshot',
  'verify.volsync',
] as const;
export type BuiltinRbacProfile = (typeof RBAC_PROFILES)[number];
