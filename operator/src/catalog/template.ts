// The operation template: which (type, engine) combination is runnable, with what input, needing which
// RBAC profile and preconditions, on which targets. Built-ins (templates/) and catalog entries share
// this shape; TemplateSchema is also the JSON Schema every catalog template entry is checked against.
import { type Static, Type } from '@sinclair/typebox';
import { SCHEDULE_PATTERN, TIME_ZONE_PATTERN } from '../api/cronoperation.ts';
import {
  CAPABILITY_ENGINES,
  CAPABILITY_VERBS,
  ENGINES,
  OPERATION_TYPES,
  PRECONDITIONS,
  TYPE_CAPABILITY_VERB,
} from '../api/enums.ts';
import { MAX_PARAMETER_SOURCES, TemplateParameterSourceSchema } from '../api/parameters-from.ts';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, QUALIFIED_NAME } from '../api/schema-helpers.ts';
import type { JsonSchema } from './schema-validation.ts';

const strict = { additionalProperties: false } as const;

function OneOf<const T extends readonly string[]>(values: T, description: string) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description });
}

/** Argo's spec.shutdown strategies a template may choose for stopping its Workflows (workflowShutdown). */
export const WORKFLOW_SHUTDOWN_STRATEGIES = ['Stop', 'Terminate'] as const;
export type WorkflowShutdown = (typeof WORKFLOW_SHUTDOWN_STRATEGIES)[number];
/**
 * Unless the template says otherwise: Stop, so the WorkflowTemplate's exit handler (its cleanup) still
 * runs, as a deleted pod still gets its grace period (ADR 0018).
 */
export const DEFAULT_WORKFLOW_SHUTDOWN: WorkflowShutdown = 'Stop';

/** Go duration as written in Kubernetes (e.g. 4h, 90m, 1h30m). */
export const GO_DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';

export const MaintenanceWindowSchema = Type.Object(
  {
    schedule: Type.String({
      description: 'When the window opens: five cron fields or a macro, read in timeZone (e.g. "0 2 * * 6").',
      pattern: SCHEDULE_PATTERN,
      maxLength: 128,
    }),
    duration: Type.String({
      description: 'How long it stays open, as a Go duration (e.g. 4h, 90m).',
      pattern: GO_DURATION_PATTERN,
      maxLength: 32,
    }),
    timeZone: Type.Optional(
      Type.String({
        description: 'IANA time zone of the schedule.',
        pattern: TIME_ZONE_PATTERN,
        maxLength: 64,
      }),
    ),
  },
  {
    ...strict,
    description:
      'Operations run only inside this window; outside it they wait as Blocked/OutsideMaintenanceWindow.',
  },
);
export type MaintenanceWindow = Static<typeof MaintenanceWindowSchema>;

export const PreconditionSchema = Type.Object(
  {
    name: OneOf(PRECONDITIONS, 'The precondition, evaluated in the fixed order of PRECONDITIONS.'),
    parameter: Type.Optional(
      Type.String({
        description:
          'RequiredSecretsPresent / RequiredServiceAccountPresent: the parameter (after defaults) holding the name of the Secret or ServiceAccount that must exist in the namespace (or an object whose values are such names).',
        maxLength: 253,
      }),
    ),
    names: Type.Optional(
      Type.Array(Type.String({ maxLength: 253 }), {
        description: 'RequiredSecretsPresent / RequiredServiceAccountPresent: fixed names that must exist.',
        maxItems: 16,
      }),
    ),
  },
  { ...strict, description: 'One precondition that applies to Operations of this template.' },
);
export type Precondition = Static<typeof PreconditionSchema>;

export const CapabilitySelectorSchema = Type.Object(
  {
    verb: OneOf(CAPABILITY_VERBS, 'The capability annotation ops.vworkspace.io/<verb>.'),
    engine: OneOf(CAPABILITY_ENGINES, 'The value it must have.'),
  },
  { ...strict, description: 'The target must carry ops.vworkspace.io/<verb>: <engine>.' },
);
export type CapabilitySelector = Static<typeof CapabilitySelectorSchema>;

export const LabelSelectorSchema = Type.Object(
  {
    matchLabels: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        description: 'Labels that must all be present with these values.',
        propertyNames: { pattern: QUALIFIED_NAME, maxLength: 317 },
        additionalProperties: { type: 'string', maxLength: 63 },
        maxProperties: 32,
      }),
    ),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String({ pattern: QUALIFIED_NAME, maxLength: 317 }),
            operator: OneOf(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const, 'How key relates to values.'),
            values: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 })),
          },
          strict,
        ),
        { maxItems: 16 },
      ),
    ),
  },
  {
    ...strict,
    description: 'metav1.LabelSelector the target ApplicationInstance must match, e.g. tier In (staging).',
  },
);
export type LabelSelector = Static<typeof LabelSelectorSchema>;

export const TargetSelectorsSchema = Type.Object(
  {
    capabilities: Type.Optional(
      Type.Array(CapabilitySelectorSchema, {
        description:
          'Capability annotations the target must carry; any one suffices. Default: ops.vworkspace.io/<type in lowercase>: <engine>.',
        minItems: 1,
        maxItems: 8,
      }),
    ),
    labelSelector: Type.Optional(LabelSelectorSchema),
  },
  { ...strict, description: 'Which ApplicationInstances the template applies to.' },
);
export type TargetSelectors = Static<typeof TargetSelectorsSchema>;

export const PolicyDefaultsSchema = Type.Object(
  {
    requireReady: Type.Optional(Type.Boolean({ description: 'Default of spec.policy.requireReady.' })),
    retryLimit: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 10, description: 'Default of spec.policy.retryLimit.' }),
    ),
    activeDeadlineSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2592000,
        description: 'Default of spec.policy.activeDeadlineSeconds.',
      }),
    ),
    requiresApproval: Type.Optional(
      Type.Boolean({ description: 'Default of spec.policy.requiresApproval.' }),
    ),
    ttlSecondsAfterFinished: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Default of spec.policy.ttlSecondsAfterFinished.' }),
    ),
    ttlSecondsAfterSucceed: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Default of spec.policy.ttlSecondsAfterSucceed.' }),
    ),
    ttlSecondsAfterUnsuccessfulCompletion: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Default of spec.policy.ttlSecondsAfterUnsuccessfulCompletion.',
      }),
    ),
    preconditionDeadlineSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 2592000,
        description: 'Default of spec.policy.preconditionDeadlineSeconds.',
      }),
    ),
  },
  { ...strict, description: "Defaults for the Operation's spec.policy fields it leaves unset." },
);
export type PolicyDefaults = Static<typeof PolicyDefaultsSchema>;

export const DependencySchema = Type.Object(
  {
    type: OneOf(OPERATION_TYPES, 'Type of the Operation that must have succeeded, e.g. Backup.'),
    engine: Type.Optional(OneOf(ENGINES, 'Only Operations run by this engine count. Unset: any engine.')),
    template: Type.Optional(
      Type.String({
        description: 'Only Operations that ran this template count. Unset: any template.',
        pattern: DNS1123_LABEL,
        maxLength: 63,
      }),
    ),
    maxAge: Type.Optional(
      Type.String({
        description:
          'How recent it must be, as a Go duration (e.g. 1h), counted from its status.startedAt (the oldest data it may hold). Unset: any age.',
        pattern: GO_DURATION_PATTERN,
        maxLength: 32,
      }),
    ),
  },
  {
    ...strict,
    description:
      'An Operation of this type must have Succeeded on the same target before this template runs; until then Operations wait as Blocked/DependencyNotMet, with a message saying what to run.',
  },
);
export type Dependency = Static<typeof DependencySchema>;

/**
 * Safe Upgrade (helm Upgrade templates only, ADR 0055): a backup of the release's claims before the
 * upgrade, the template's post-check after it, and, when either fails, `helm rollback` to the revision it
 * started from and (restoreOnFailure) the claims restored from that backup. Everything here is the
 * template's (the platform admin's): a requester sets none of it.
 */
export const SafetySchema = Type.Object(
  {
    backup: Type.Optional(
      Type.Object(
        {
          engine: OneOf(
            ['snapshot'] as const,
            "How the pre-upgrade backup is taken: snapshot (a CSI VolumeSnapshot of each of the release's PersistentVolumeClaims, taken by this Operation, kept like a snapshot Backup's; the restore recreates the claims from them in place).",
          ),
          volumeSnapshotClassName: Type.Optional(
            Type.String({
              description: 'The VolumeSnapshotClass of the snapshots. Unset: the cluster default.',
              pattern: DNS1123_SUBDOMAIN,
              maxLength: 253,
            }),
          ),
        },
        { ...strict, description: 'Take a backup of the release before the upgrade starts.' },
      ),
    ),
    postCheck: Type.Optional(
      Type.Object(
        {
          image: Type.String({
            description: "The post-check's container image (the template's choice, never the requester's).",
            minLength: 1,
            maxLength: 512,
          }),
          command: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
            description:
              'The post-check, run without a shell once helm upgraded the release (e.g. ["sh", "-c", "psql … -c \'select email from users limit 1\'"]). Exit code 0 keeps the new revision; anything else puts the release back. Environment: VWS_RELEASE, VWS_NAMESPACE, VWS_REVISION_BEFORE. It runs as the namespace default ServiceAccount without a token.',
            minItems: 1,
            maxItems: 64,
          }),
        },
        { ...strict, description: 'A probe Job that must pass after the upgrade.' },
      ),
    ),
    restoreOnFailure: Type.Optional(
      Type.Boolean({
        description:
          "The upgrade may change data (a migration): when the upgrade or its post-check fails, after the rollback restore the release's claims from the pre-upgrade backup (requires backup and the rbacProfile safeUpgrade.helm). Default false: only the chart is rolled back.",
      }),
    ),
  },
  {
    ...strict,
    description:
      'helm Upgrade only: back up before, check after, and put the release (and, with restoreOnFailure, its data) back when the upgrade or the check fails. status.rollback says what was done.',
  },
);
export type Safety = Static<typeof SafetySchema>;

export const TemplateSchema = Type.Object(
  {
    name: Type.String({
      description: 'Unique template name (a DNS label); Operation.spec.template refers to it.',
      pattern: DNS1123_LABEL,
      minLength: 1,
      maxLength: 63,
    }),
    description: Type.Optional(Type.String({ description: 'What the template does.', maxLength: 1024 })),
    type: OneOf(OPERATION_TYPES, 'Operation.spec.type it runs.'),
    engine: OneOf(ENGINES, 'Operation.spec.engine it runs.'),
    inputSchema: Type.Unsafe<JsonSchema>({
      type: 'object',
      description: 'OpenAPI v3 schema of Operation.spec.parameters (type: object at the root).',
    }),
    outputSchema: Type.Optional(
      Type.Unsafe<JsonSchema>({
        type: 'object',
        description:
          "OpenAPI v3 schema of the Operation's status.outputs (type: object at the root): what its engine reports, e.g. backupName. spec.parametersFrom may only read outputs it declares. Unset: outputs are not typed.",
      }),
    ),
    parametersFrom: Type.Optional(
      Type.Array(TemplateParameterSourceSchema, {
        description:
          'Default sources for parameters an Operation leaves unset, e.g. velero-restore reads backupName from the latest Succeeded velero Backup of the target.',
        maxItems: MAX_PARAMETER_SOURCES,
      }),
    ),
    dependencies: Type.Optional(
      Type.Array(DependencySchema, {
        description:
          'Operations that must have Succeeded on the target first (precondition DependenciesSucceeded).',
        maxItems: 8,
      }),
    ),
    rbacProfile: Type.String({
      description: 'Id of the RBAC profile the operator needs in the namespace, e.g. backup.velero.',
      pattern: '^[a-z][A-Za-z0-9]*\\.[a-z][A-Za-z0-9]*$',
      maxLength: 63,
    }),
    preconditions: Type.Array(PreconditionSchema, {
      description: 'Preconditions that apply, each at most once.',
      maxItems: PRECONDITIONS.length,
    }),
    targetSelectors: Type.Optional(TargetSelectorsSchema),
    maintenanceWindow: Type.Optional(MaintenanceWindowSchema),
    expectedDuration: Type.Optional(
      Type.String({
        description:
          "How long a run usually takes, as a Go duration (e.g. 30m, 2h). With a maintenance window (the template's or the catalog application's) an Operation starts only while at least this much of the window is left; later it waits Blocked/OutsideMaintenanceWindow for the next window with room. A run that has started is never stopped by the window closing.",
        pattern: GO_DURATION_PATTERN,
        maxLength: 32,
      }),
    ),
    defaults: Type.Optional(PolicyDefaultsSchema),
    separationOfDuties: Type.Optional(
      Type.Boolean({
        description:
          'With requiresApproval: the approver must be someone other than the creator of the Operation.',
      }),
    ),
    allowedServiceAccounts: Type.Optional(
      Type.Array(Type.String({ pattern: DNS1123_SUBDOMAIN, minLength: 1, maxLength: 253 }), {
        description:
          "ServiceAccounts of the Operation's namespace its pods may run as: spec.parameters.serviceAccountName (job, helm, workflow) and the chart's migration Job (helmHookJob). Default: only vworkspace-runner. The webhook admits another one only from a requester who could run pods as it themselves (create pods in the namespace, or impersonate that ServiceAccount).",
        minItems: 1,
        maxItems: 32,
        uniqueItems: true,
      }),
    ),
    allowClusterWorkflowTemplates: Type.Optional(
      Type.Boolean({
        description:
          'workflow engine: true lets spec.parameters.workflowTemplateRef.clusterScope name a ClusterWorkflowTemplate. Default false: only WorkflowTemplates of the namespace.',
      }),
    ),
    workflowShutdown: Type.Optional(
      OneOf(
        WORKFLOW_SHUTDOWN_STRATEGIES,
        "workflow engine: how stopping an Operation (spec.cancel, or policy.activeDeadlineSeconds passing) shuts its Workflow down, as Argo's spec.shutdown. Stop (default): no new steps start, running steps are stopped, and the Workflow's exit handler (spec.onExit) still runs, so the WorkflowTemplate's cleanup happens. Terminate: running steps are stopped and the exit handler does not run. Recorded on the Workflow when it is created (annotation ops.vworkspace.io/shutdown).",
      ),
    ),
    allowClusterResources: Type.Optional(
      Type.Boolean({
        description:
          'velero Backup and Restore: true lets spec.parameters.includeClusterResources: true back up (restore) cluster-scoped objects carrying the release label. Default false: such an Operation is refused; the Restore leaves includeClusterResources unset, so Velero restores only namespaced objects and the PersistentVolumes of restored claims, and a Backup includes only the cluster-scoped objects Velero relates to namespaced ones (PersistentVolumes). For platform-admin templates only.',
      }),
    ),
    allowedChartSources: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 2048, pattern: '^(oci|https?)://' }), {
        description:
          "helm Upgrade: chart sources (oci://registry/path or https://repository, each also covering what lies under it) an Upgrade may install from although the release was installed from elsewhere (the instance's status.release.chartSource). Default: none, so an Upgrade installs only from the release's own source, whoever edited spec.appRef.chart. For a chart that moved to another repository.",
        minItems: 1,
        maxItems: 32,
        uniqueItems: true,
      }),
    ),
    allowClone: Type.Optional(
      Type.Boolean({
        description:
          "velero Restore: true lets spec.source.namespace name another namespace, whose backup of the instance is restored into the Operation's namespace (a clone); the requester also needs the RBAC verb clone on that ApplicationInstance there. Default false: a Restore reads only backups made for its own namespace. The built-in velero-restore sets it.",
      }),
    ),
    safety: Type.Optional(SafetySchema),
    disabled: Type.Optional(Type.Literal(false)),
  },
  { ...strict, description: 'An operation template.' },
);
export type Template = Static<typeof TemplateSchema>;

export const DisabledTemplateSchema = Type.Object(
  {
    name: Type.String({ description: 'The template to remove.', pattern: DNS1123_LABEL, maxLength: 63 }),
    disabled: Type.Literal(true),
    description: Type.Optional(Type.String({ description: 'Why it is disabled.', maxLength: 1024 })),
  },
  { ...strict, description: 'Removes the template of this name (built-in or from an earlier catalog).' },
);
export type DisabledTemplate = Static<typeof DisabledTemplateSchema>;

/** A template in the effective set, with where it came from (`builtin` or `configmap <ns>/<name>`). */
export type EffectiveTemplate = Template & { source: string };

/** The capability selectors of a template: its own, or the implicit `<type verb>: <engine>` one. */
export function capabilitySelectors(
  t: Pick<Template, 'type' | 'engine' | 'targetSelectors'>,
): CapabilitySelector[] {
  return t.targetSelectors?.capabilities ?? [{ verb: TYPE_CAPABILITY_VERB[t.type], engine: t.engine }];
}

/** The standard preconditions every template starts from, in evaluation order. */
export function standardPreconditions(extra: readonly Precondition[] = []): Precondition[] {
  const base: Precondition[] = [
    { name: 'TargetExists' },
    { name: 'CapabilityAdvertised' },
    { name: 'TemplateSelectors' },
    { name: 'EngineInstalled' },
    { name: 'RbacProfilePresent' },
    { name: 'ApprovalGiven' },
    { name: 'TargetReady' },
    { name: 'NoConflictingOperation' },
    ...extra,
    { name: 'MaintenanceWindow' },
  ];
  return base.sort((a, b) => PRECONDITIONS.indexOf(a.name) - PRECONDITIONS.indexOf(b.name));
}
