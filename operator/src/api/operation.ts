// Operation (ops.vworkspace.io/v1alpha1): one day-2 action on one ApplicationInstance.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { type Static, Type } from '@sinclair/typebox';
import { CATEGORY, MAX_OPERATION_NAME_LENGTH, OPERATION } from './constants.ts';
import type { KindDefinition } from './crd.ts';
import { ENGINE_TYPES, ENGINES, OPERATION_PHASES, OPERATION_TYPES } from './enums.ts';
import { InputsField, ParametersFromField } from './parameters-from.ts';
import {
  type CelRule,
  Conditions,
  cel,
  celList,
  DateTime,
  DNS1123_LABEL,
  FreeObject,
  immutable,
  maxNameLength,
  ObservedGeneration,
  RootSchema,
  StringEnum,
} from './schema-helpers.ts';

// ---- spec pieces, shared with the operationTemplate of CronOperation and WatchOperation ----

export const OperationTypeField = StringEnum(OPERATION_TYPES, {
  description:
    'The day-2 action: Backup, Restore, Upgrade, Migration, RunCommand, Runbook or Verify (a restore drill: a backup restored into a scratch namespace, or for restic into claims beside the instance, and probed). The target must advertise the matching capability annotation (ops.vworkspace.io/<type in lowercase>: <engine>; Verify: ops.vworkspace.io/restore).',
});

export const EngineField = StringEnum(ENGINES, {
  description:
    'The engine that carries the action out: velero (velero.io Backup/Restore), workflow (Argo Workflow), job (batch Job), helm (helm CLI Job), helmHookJob (the chart-provided migration Job), volsync (ReplicationSource/Destination per PVC) or snapshot (VolumeSnapshot per PVC).',
});

export const TargetRefSchema = Type.Object(
  {
    name: Type.String({
      description: 'Name of the ApplicationInstance, a DNS label.',
      minLength: 1,
      maxLength: 63,
      'x-kubernetes-validations': [
        cel(
          `self.matches('${DNS1123_LABEL}')`,
          "must be a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit): the name of an ApplicationInstance in this namespace",
        ),
      ],
    }),
    // Declared only so that it is not pruned silently: the webhook refuses it at its field path.
    namespace: Type.Optional(
      Type.String({
        description:
          'Not supported: targets are same-namespace only. Declared so that a request setting it is refused with a message (by the admission webhook) rather than silently dropped.',
        maxLength: 63,
      }),
    ),
  },
  {
    description:
      'The ApplicationInstance to operate on. It must be in the same namespace as the Operation: cross-namespace targets do not exist by design.',
  },
);

export const SourceSchema = Type.Object(
  {
    namespace: Type.String({
      description:
        'The namespace the backups to restore were made in: this namespace (e.g. recreated after it was deleted, with the ApplicationInstance gone) or another one (a clone into this namespace, which needs the RBAC verb clone on the ApplicationInstance there and a template that allows clones). The backup is parameters.backupName, else the newest Completed velero Backup of the instance made there.',
      minLength: 1,
      maxLength: 63,
      pattern: DNS1123_LABEL,
    }),
  },
  {
    description:
      'Restore only (engine velero): where the backups come from. With it the ApplicationInstance spec.targetRef names may be absent: the restore brings it back (its release name and capabilities as the backup recorded them). Without it a Restore needs the instance and restores a backup made for this namespace.',
  },
);

export const TemplateNameField = Type.String({
  description:
    'Name of the operation template (built-in or from the catalog) to run. When omitted, the template is resolved from type and engine.',
  minLength: 1,
  maxLength: 63,
  pattern: DNS1123_LABEL,
});

export const ParametersField = FreeObject({
  description:
    "Input of the template, validated against the template's inputSchema by the admission webhook (e.g. storageLocation and ttl for a Velero Backup, version for a Helm Upgrade).",
  maxProperties: 64,
});

export const PolicySchema = Type.Object(
  {
    requireReady: Type.Optional(
      Type.Boolean({
        description:
          "Wait (Blocked/TargetNotReady) until the target's Ready condition is True before starting. Unset: the template's default, else true for Restore, Upgrade and Migration and false for the other types.",
      }),
    ),
    retryLimit: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: 10,
        description:
          "How many times a failed engine child is replaced by a new one before the Operation fails with RetryLimitExceeded. Unset: the template's default, else 0.",
      }),
    ),
    activeDeadlineSeconds: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 1,
        maximum: 2592000,
        description:
          "Seconds the Operation may run after it started (status.startedAt) before it is stopped and fails with DeadlineExceeded; time spent Blocked does not count. Unset: the template's default, else no deadline.",
      }),
    ),
    requiresApproval: Type.Optional(
      Type.Boolean({
        description:
          'Keep the Operation Blocked/AwaitingApproval until someone allowed to approve sets the annotation ops.vworkspace.io/approve: "true"; the webhook records who in ops.vworkspace.io/approved-by. Unset: the template\'s default, else false.',
      }),
    ),
    dryRun: Type.Optional(
      Type.Boolean({
        description:
          'Evaluate the template and preconditions and write the engine child that would be created to status.plan, without creating it. The Operation then ends Succeeded/DryRunCompleted.',
      }),
    ),
    ttlSecondsAfterFinished: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description:
          "Seconds after the Operation finished (status.finishedAt) when it is deleted with its children, whatever the outcome, unless ttlSecondsAfterSucceed or ttlSecondsAfterUnsuccessfulCompletion says otherwise for that outcome. Unset: the template's default, else kept until deleted (or pruned by the CronOperation/WatchOperation history limits).",
      }),
    ),
    ttlSecondsAfterSucceed: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description:
          "Like ttlSecondsAfterFinished, for an Operation that Succeeded (KubeBlocks' name). Unset: ttlSecondsAfterFinished, then the template's defaults in the same order.",
      }),
    ),
    ttlSecondsAfterUnsuccessfulCompletion: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description:
          "Like ttlSecondsAfterFinished, for an Operation that Failed or was Cancelled (KubeBlocks' name): keep failures longer to investigate them. Unset: ttlSecondsAfterFinished, then the template's defaults in the same order.",
      }),
    ),
    preconditionDeadlineSeconds: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: 2592000,
        description:
          "Seconds after creation the Operation may wait for its preconditions (Blocked, or Pending on a missing target, profile or engine) before it fails with PreconditionDeadlineExceeded, naming what it waited for; 0 = the preconditions must hold at the first evaluation (as KubeBlocks' preConditionDeadlineSeconds). Unset: the template's default, else wait without limit.",
      }),
    ),
  },
  {
    description:
      'How the Operation runs. Every unset field takes the default of the template, then the built-in default named in its description.',
  },
);

/** CEL: the engine can carry out the type (ENGINE_TYPES); the message lists what each engine runs. */
export function engineTypeRule(): CelRule {
  const restricted = Object.entries(ENGINE_TYPES).filter(
    ([, types]) => types.length < OPERATION_TYPES.length,
  );
  const map = `{${restricted.map(([engine, types]) => `'${engine}': ${celList(types)}`).join(', ')}}`;
  const open = Object.keys(ENGINE_TYPES).filter((e) => !restricted.some(([r]) => r === e));
  // A static message: a messageExpression doing the same lookup exceeds the CEL cost budget when the
  // rule sits inside operationTemplate.
  const message = `this engine cannot run this type: ${restricted
    .map(([engine, types]) => `${engine} runs ${types.join(', ')}`)
    .join('; ')}${open.length > 0 ? `; ${open.join(' and ')} run every type` : ''}`;
  return cel(`!(self.engine in ${map}) || self.type in ${map}[self.engine]`, message, {
    fieldPath: '.engine',
    reason: 'FieldValueInvalid',
  });
}

/** CEL transition rules making optional spec fields immutable (set, changed or removed after create). */
function optionalImmutable(field: string): CelRule {
  return cel(
    `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    `spec.${field} is immutable; create a new Operation instead`,
    { fieldPath: `.${field}` },
  );
}

export const OperationSpecSchema = Type.Object(
  {
    type: { ...OperationTypeField, 'x-kubernetes-validations': [immutable('spec.type')] },
    engine: { ...EngineField, 'x-kubernetes-validations': [immutable('spec.engine')] },
    targetRef: { ...TargetRefSchema, 'x-kubernetes-validations': [immutable('spec.targetRef')] },
    template: Type.Optional(TemplateNameField),
    parameters: Type.Optional(ParametersField),
    parametersFrom: Type.Optional(ParametersFromField),
    source: Type.Optional(SourceSchema),
    policy: Type.Optional(PolicySchema),
    cancel: Type.Optional(
      Type.Boolean({
        description:
          'Set to true to stop the Operation: a Blocked one ends without creating a child; a Running one has its engine child stopped. Ends Cancelled. Once true it cannot be set back.',
      }),
    ),
  },
  {
    description:
      'The requested action. Immutable after create except cancel (and the approval annotations on metadata).',
    'x-kubernetes-validations': [
      engineTypeRule(),
      optionalImmutable('template'),
      optionalImmutable('parameters'),
      optionalImmutable('parametersFrom'),
      optionalImmutable('source'),
      optionalImmutable('policy'),
      cel("!has(self.source) || self.type == 'Restore'", 'spec.source is for a Restore only: leave it out', {
        fieldPath: '.source',
      }),
      cel(
        '!(has(oldSelf.cancel) && oldSelf.cancel) || (has(self.cancel) && self.cancel)',
        'spec.cancel cannot be unset once true: a cancelled Operation stays cancelled; create a new one to run again',
        { fieldPath: '.cancel' },
      ),
    ],
  },
);
export type OperationSpec = Static<typeof OperationSpecSchema>;
export type OperationPolicy = Static<typeof PolicySchema>;

export const ChildRefSchema = Type.Object(
  {
    apiVersion: Type.String({ description: 'API version of the child, e.g. velero.io/v1.', maxLength: 253 }),
    kind: Type.String({ description: 'Kind of the child, e.g. Backup, Workflow, Job.', maxLength: 63 }),
    name: Type.String({ description: 'Name of the child.', maxLength: 253 }),
    namespace: Type.String({
      description:
        "Namespace of the child (the Velero namespace for Velero children, empty for a Verify's scratch Namespace, else the Operation's).",
      maxLength: 63,
    }),
    uid: Type.Optional(Type.String({ description: 'UID of the child when it was created.', maxLength: 64 })),
  },
  { description: 'A reference to an engine child.' },
);
export type ChildRef = Static<typeof ChildRefSchema>;

/** What a Safe Upgrade did to put the release (and its data) back: status.rollback (ADR 0055). */
export const RollbackRecordSchema = Type.Object(
  {
    why: Type.String({
      description:
        'Why the release was put back: the reason that ended the upgrade (PostCheckFailed, HelmUpgradeFailed, Cancelled, DeadlineExceeded).',
      maxLength: 63,
    }),
    fromRevision: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        description:
          'The revision the release was on when the operator rolled it back (unset: helm --atomic rolled it back itself).',
      }),
    ),
    toRevision: Type.Integer({
      format: 'int32',
      minimum: 1,
      description: 'The revision the Upgrade started from: where the rollback goes.',
    }),
    rolledBackBy: Type.String({
      description:
        "Who rolled the release back: `helm --atomic` (the runner itself) or `Job <name>` (the Upgrade's rollback Job).",
      maxLength: 320,
    }),
    backup: Type.Optional(
      Type.String({
        description:
          'The VolumeSnapshots this Operation took of the release before upgrading (comma-separated).',
        maxLength: 4096,
      }),
    ),
    restore: StringEnum(['NotDeclared', 'NotNeeded', 'InProgress', 'Restored', 'Failed'] as const, {
      description:
        'The data: NotDeclared (the template does not declare that the upgrade may change data), NotNeeded (nothing was upgraded), InProgress, Restored (the claims were recreated from the backup), Failed.',
    }),
    state: StringEnum(['RollingBack', 'Restoring', 'Done', 'Failed'] as const, {
      description:
        'Where putting it back is: RollingBack, Restoring, Done, or Failed (see the RollbackFailed condition).',
    }),
  },
  {
    description:
      'Safe Upgrade only (a template with `safety`): what was done when the upgrade or its post-check failed: from which revision to which, by whom, which backup was restored, and why.',
  },
);
export type RollbackRecord = Static<typeof RollbackRecordSchema>;

export const OperationStatusSchema = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(OPERATION_PHASES, {
        description:
          'Summary of the lifecycle: Pending (not evaluated yet), Blocked (a precondition is waiting, see the Blocked condition), Running (the engine child exists), then one of Succeeded, Failed or Cancelled, which are final.',
      }),
    ),
    startedAt: Type.Optional(DateTime({ description: 'When the engine child was first created.' })),
    finishedAt: Type.Optional(
      DateTime({ description: 'When the Operation reached Succeeded, Failed or Cancelled.' }),
    ),
    observedGeneration: Type.Optional(ObservedGeneration('Operation')),
    conditions: Type.Optional(
      Conditions(
        'Accepted (template and parameters valid, preconditions met), Blocked (waiting, with the reason), Running (the engine child runs, with the engine reason) and Succeeded. Succeeded is Unknown until the end and then True, or False with the reason it failed; while Unknown it repeats the reason of the condition that explains the current state, so the Reason column of `kubectl get operations` always says why.',
      ),
    ),
    childRef: Type.Optional({
      ...ChildRefSchema,
      description: 'The engine child the Operation created and follows (the first one, for per-PVC engines).',
    }),
    childRefs: Type.Optional(
      Type.Array(ChildRefSchema, {
        description: 'Every engine child, when the engine creates one per PVC (snapshot, volsync).',
        maxItems: 256,
      }),
    ),
    outputs: Type.Optional(
      FreeObject({
        description:
          "Results worth keeping, typed by the template's outputSchema (docs/templates.md lists each built-in template's outputs): e.g. backupName of a Velero Backup (the input of a later Restore through spec.parametersFrom), jobName of a Job, the VolumeSnapshot names. Never holds secrets.",
      }),
    ),
    inputs: Type.Optional(InputsField),
    rollback: Type.Optional(RollbackRecordSchema),
    attempts: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description: 'How many engine children were created so far (1 + retries).',
      }),
    ),
    plan: Type.Optional(
      FreeObject({
        description: 'With policy.dryRun: the engine child (or children) that would have been created.',
      }),
    ),
    template: Type.Optional(
      Type.String({
        description:
          'Name of the template the Operation resolved to (spec.template or the one for type and engine).',
        maxLength: 63,
      }),
    ),
    queuePosition: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        description:
          'While Blocked/ConflictingOperation: the place in the first-in-first-out queue of Operations waiting for the same target (1 runs next).',
      }),
    ),
  },
  { description: 'The observed state of the Operation, written by the operator.' },
);
export type OperationStatus = Static<typeof OperationStatusSchema>;

export const OperationSchema = RootSchema({
  description:
    'Operation requests one day-2 action (Backup, Restore, Upgrade, Migration, RunCommand, Runbook, Verify) on an ApplicationInstance in the same namespace, carried out by one engine. The operator validates it against a template, evaluates the preconditions, creates exactly one engine child and reports its progress through conditions.',
  spec: OperationSpecSchema,
  status: OperationStatusSchema,
  rules: [
    maxNameLength(
      MAX_OPERATION_NAME_LENGTH,
      'engine children are named <operation>-<hash> and the name is a label value on them',
    ),
  ],
});

export interface Operation {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  spec: OperationSpec;
  status?: OperationStatus;
}

export const operationKind: KindDefinition = {
  resource: OPERATION,
  singular: 'operation',
  listKind: 'OperationList',
  shortNames: ['op', 'ops'],
  categories: [CATEGORY],
  scope: 'Namespaced',
  schema: OperationSchema,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type', description: 'The day-2 action.' },
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine', description: 'The engine that runs it.' },
    {
      name: 'Target',
      type: 'string',
      jsonPath: '.spec.targetRef.name',
      description: 'The ApplicationInstance.',
    },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Succeeded")].reason',
      description:
        'Reason of the Succeeded condition: the current blocking or engine reason while the Operation runs, the outcome once it ended.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Time since creation.',
    },
    {
      name: 'Queue',
      type: 'integer',
      jsonPath: '.status.queuePosition',
      description: 'Position in the per-target queue while blocked by a conflict.',
      priority: 1,
    },
    {
      name: 'Child',
      type: 'string',
      jsonPath: '.status.childRef.name',
      description: 'The engine child.',
      priority: 1,
    },
  ],
};
