// CronOperation (ops.vworkspace.io/v1alpha1): creates Operations on a cron schedule in a time zone.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { type Static, Type } from '@sinclair/typebox';
import { CatchUpSchema, catchUpAllRule } from './catch-up.ts';
import { CATEGORY, CRON_OPERATION, MAX_SCHEDULER_NAME_LENGTH } from './constants.ts';
import type { KindDefinition } from './crd.ts';
import {
  activeField,
  CronOperationTemplateSchema,
  concurrencyPolicyField,
  historyFields,
  maxConcurrentField,
  oneTargetRule,
  parametersFromTriggerField,
} from './operation-template.ts';
import { RetentionSpecSchema, RetentionStatusSchema, retentionRules } from './retention.ts';
import { RolloutSchema, RolloutStatusSchema, rolloutNeedsFleetRule } from './rollout.ts';
import {
  Conditions,
  cel,
  DateTime,
  LabelSelector,
  maxNameLength,
  ObservedGeneration,
  RootSchema,
  StringEnum,
} from './schema-helpers.ts';

/** Five fields or a macro; CronJob's `TZ=` prefix is refused (spec.timeZone says it). */
export const SCHEDULE_PATTERN =
  '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\\S+(\\s+\\S+){4})$';
/** IANA zone names: Area/Location segments of letters, digits, '_', '+' and '-' (UTC, Etc/GMT+5, America/St_Johns). */
export const TIME_ZONE_PATTERN = '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$';

export const CronOperationSpecSchema = Type.Object(
  {
    schedule: Type.String({
      description:
        'When to run, as a five-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 2 * * 6" for 02:00 on Saturdays) or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly. Evaluated in timeZone. A time that does not exist (spring-forward gap) runs once at the first instant after the gap; a time that occurs twice (fall-back) runs once, at its first occurrence.',
      minLength: 1,
      maxLength: 128,
      'x-kubernetes-validations': [
        cel(
          `self.matches(r'${SCHEDULE_PATTERN}')`,
          'must be five space-separated cron fields (minute hour day-of-month month day-of-week) or a macro such as @daily; set the zone in spec.timeZone, not with TZ= in the schedule',
        ),
      ],
    }),
    timeZone: Type.Optional(
      Type.String({
        description:
          'IANA time zone the schedule is read in, e.g. Europe/Berlin, America/New_York, Asia/Kolkata. Default UTC. An unknown zone sets Ready=False/InvalidTimeZone and nothing runs.',
        default: 'UTC',
        minLength: 1,
        maxLength: 64,
        pattern: TIME_ZONE_PATTERN,
      }),
    ),
    startingDeadlineSeconds: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 1,
        description:
          'How late (seconds after the scheduled time) an Operation may still be created, e.g. after operator downtime. A slot missed by more is not run: it is recorded in status.missedSlots and as an Event, and the schedule moves on. After downtime only the most recent missed slot runs, never a burst, unless spec.catchUp says otherwise. Unset: no deadline.',
      }),
    ),
    catchUp: Type.Optional(CatchUpSchema),
    concurrencyPolicy: Type.Optional(
      concurrencyPolicyField(
        'a run is due',
        'the slot is skipped, with an Event and an entry in status.missedSlots (reason ConcurrencyForbidden), and the schedule moves on',
      ),
    ),
    ...historyFields,
    targetSelector: Type.Optional(
      LabelSelector(
        'Fleet: each run creates one Operation per ApplicationInstance of this namespace that matches, named <name>-<run>-<hash of the instance>. Set this or operationTemplate.spec.targetRef, not both. An empty selector matches every instance of the namespace.',
      ),
    ),
    maxConcurrent: Type.Optional(
      maxConcurrentField(
        "the other targets of a run wait in status.queue and start, oldest run first and in name order, as running ones finish; the next slot replaces a slot's waiting targets, a run-now request's are kept until they run",
      ),
    ),
    rollout: Type.Optional(RolloutSchema),
    retention: Type.Optional(RetentionSpecSchema),
    parametersFromTrigger: Type.Optional(
      parametersFromTriggerField(
        "trigger.scheduledTime (the slot, RFC 3339 UTC; for a run-now request the time it was acted on), trigger.reason (schedule or manual), trigger.request (the run-now value), or object.<path> — a field of the targeted ApplicationInstance: object.metadata.name, object.metadata.labels['<key>'], object.metadata.annotations['<key>'] or object.spec.<field>.",
      ),
    ),
    operationTemplate: CronOperationTemplateSchema,
  },
  {
    description:
      'The schedule and the Operation to create. Annotate ops.vworkspace.io/skip-next: "true" to skip the next run only, or ops.vworkspace.io/run-now: <any new value> to run now.',
    'x-kubernetes-validations': [
      oneTargetRule(),
      catchUpAllRule(),
      rolloutNeedsFleetRule(),
      ...retentionRules(),
    ],
  },
);
export type CronOperationSpec = Static<typeof CronOperationSpecSchema>;

export const NextRunSchema = Type.Object(
  {
    utc: DateTime({ description: 'The run time in UTC.' }),
    local: DateTime({ description: "The same instant in spec.timeZone, RFC 3339 with the zone's offset." }),
    dstShifted: Type.Boolean({
      description:
        'True when a daylight-saving change moves this run: the scheduled wall-clock time does not exist that day and the run happens at the first instant after the gap.',
    }),
  },
  { description: 'One upcoming run.' },
);
export type NextRun = Static<typeof NextRunSchema>;

export const MISSED_SLOT_REASONS = [
  'StartingDeadlineExceeded',
  'ConcurrencyForbidden',
  'OperationRefused',
  'TargetPaused',
  'CatchUpSkipped',
  'RolloutInProgress',
] as const;

export const MissedSlotSchema = Type.Object(
  {
    scheduledTime: DateTime({ description: 'The slot that was not run.' }),
    detectedAt: DateTime({ description: 'When the operator decided not to run it.' }),
    reason: Type.Optional(
      StringEnum(MISSED_SLOT_REASONS, {
        description:
          'Why it was not run: StartingDeadlineExceeded (noticed more than startingDeadlineSeconds late), ConcurrencyForbidden (concurrencyPolicy Forbid while an earlier Operation was running), TargetPaused (the target carried ops.vworkspace.io/paused: "true"), CatchUpSkipped (missed while the operator was down, and spec.catchUp did not pick it), RolloutInProgress (spec.rollout: the previous fleet run was still rolling out or halted) or OperationRefused (the API server or the admission webhook refused to create the Operation; the Ready condition says why).',
      }),
    ),
  },
  { description: 'A scheduled run that was not created.' },
);
export type MissedSlot = Static<typeof MissedSlotSchema>;

export const MANUAL_RUN_PHASES = ['Pending', 'Created', 'Refused'] as const;

/** The longest ops.vworkspace.io/run-now value: the webhook refuses longer ones, the controller records them as Refused. */
export const MAX_RUN_NOW_LENGTH = 256;

export const ManualRunSchema = Type.Object(
  {
    request: Type.String({
      description:
        'The ops.vworkspace.io/run-now value acted on; the same value never runs twice. A value longer than 256 characters is recorded as sha256:<hex of it> (phase Refused).',
      maxLength: MAX_RUN_NOW_LENGTH,
    }),
    phase: StringEnum(MANUAL_RUN_PHASES, {
      description:
        'Created (its Operations exist), Pending (waiting in status.queue: concurrencyPolicy Forbid while an Operation for the target runs, maxConcurrent reached, or the target is paused) or Refused (the value is longer than 256 characters; nothing runs: set a shorter one).',
    }),
    message: Type.Optional(
      Type.String({ description: 'Why the request was refused (phase Refused).', maxLength: 1024 }),
    ),
    time: DateTime({ description: 'When the request was acted on.' }),
    operation: Type.Optional(
      Type.String({ description: 'The Operation created (one-target CronOperations).', maxLength: 253 }),
    ),
  },
  { description: 'The last run-now request.' },
);
export type ManualRun = Static<typeof ManualRunSchema>;

export const RunQueueSchema = Type.Object(
  {
    reason: StringEnum(['schedule', 'manual'] as const, {
      description: 'The run the queued targets belong to: a scheduled slot or a run-now request.',
    }),
    scheduledTime: DateTime({ description: 'The slot (or when the run-now request was acted on).' }),
    request: Type.Optional(
      Type.String({ description: 'The run-now value (reason manual).', maxLength: MAX_RUN_NOW_LENGTH }),
    ),
    targets: Type.Array(Type.String({ description: 'An ApplicationInstance.', maxLength: 63 }), {
      description: 'The instances still waiting for their Operation, in the order they start.',
      maxItems: 4096,
    }),
  },
  {
    description:
      'Targets of one run that wait for a free place (maxConcurrent), or, for a run-now request, for the Operation on their instance to finish (concurrencyPolicy Forbid) or for the instance to be resumed (ops.vworkspace.io/paused).',
  },
);
export type RunQueue = Static<typeof RunQueueSchema>;

/** status.queue keeps at most this many runs: the latest slot's and the run-now requests'. */
export const MAX_QUEUED_RUNS = 16;

export const CronOperationStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration('CronOperation')),
    conditions: Type.Optional(
      Conditions(
        "Ready: True/ScheduleActive when schedule and time zone are valid; False with InvalidSchedule, InvalidTimeZone, InvalidOperationTemplate or Suspended. Halted (with spec.rollout): True/FailureBudgetExceeded while the latest fleet run is halted, False with the rollout's reason otherwise. Retention (with spec.retention): True/RetentionApplied after a pass, False/RetentionBlocked when the operator may not list or delete the backups (the message says which permission to grant).",
      ),
    ),
    active: Type.Optional(activeField()),
    lastScheduleTime: Type.Optional(
      DateTime({ description: 'The scheduled time of the last slot handled (run, skipped or missed).' }),
    ),
    lastSuccessfulTime: Type.Optional(
      DateTime({ description: 'When the last created Operation Succeeded.' }),
    ),
    nextScheduleTime: Type.Optional(DateTime({ description: 'The next run, in UTC.' })),
    nextRuns: Type.Optional(
      Type.Array(NextRunSchema, {
        description:
          'Preview of the next five runs in UTC and in spec.timeZone, flagging those a daylight-saving change moves.',
        maxItems: 5,
      }),
    ),
    manualRun: Type.Optional(ManualRunSchema),
    queue: Type.Optional(
      Type.Array(RunQueueSchema, {
        description:
          'Runs whose targets wait, oldest first: at most one scheduled slot (the next slot replaces it) and the run-now requests, which are kept until their Operations exist.',
        maxItems: 16,
      }),
    ),
    rollout: Type.Optional(RolloutStatusSchema),
    retention: Type.Optional(RetentionStatusSchema),
    missedSlots: Type.Optional(
      Type.Array(MissedSlotSchema, {
        description:
          'The most recent slots that were not run (past startingDeadlineSeconds, or skipped under concurrencyPolicy Forbid), at most 10, oldest first.',
        maxItems: 10,
      }),
    ),
  },
  { description: 'The observed state of the schedule, written by the operator.' },
);
export type CronOperationStatus = Static<typeof CronOperationStatusSchema>;

export const CronOperationSchema = RootSchema({
  description:
    'CronOperation creates an Operation from operationTemplate on a cron schedule in a time zone (as CronJob creates Jobs). Each Operation is named <name>-<unix minutes of the slot>, so a slot never runs twice, even across restarts.',
  spec: CronOperationSpecSchema,
  status: CronOperationStatusSchema,
  rules: [maxNameLength(MAX_SCHEDULER_NAME_LENGTH, 'created Operations are named <name>-<unix-minutes>')],
});

export interface CronOperation {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  spec: CronOperationSpec;
  status?: CronOperationStatus;
}

export const cronOperationKind: KindDefinition = {
  resource: CRON_OPERATION,
  singular: 'cronoperation',
  listKind: 'CronOperationList',
  shortNames: ['cronop'],
  categories: [CATEGORY],
  scope: 'Namespaced',
  schema: CronOperationSchema,
  printerColumns: [
    { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule', description: 'Cron schedule.' },
    {
      name: 'Timezone',
      type: 'string',
      jsonPath: '.spec.timeZone',
      description: 'Time zone of the schedule.',
    },
    {
      name: 'Suspend',
      type: 'boolean',
      jsonPath: '.spec.suspend',
      description: 'Whether runs are suspended.',
    },
    {
      name: 'Type',
      type: 'string',
      jsonPath: '.spec.operationTemplate.spec.type',
      description: 'Type of the created Operations.',
    },
    {
      name: 'Target',
      type: 'string',
      jsonPath: '.spec.operationTemplate.spec.targetRef.name',
      description: 'Target of the created Operations.',
    },
    {
      name: 'Last Schedule',
      type: 'date',
      jsonPath: '.status.lastScheduleTime',
      description: 'Time since the last slot.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Time since creation.',
    },
    {
      name: 'Next',
      type: 'string',
      jsonPath: '.status.nextScheduleTime',
      description: 'The next run (UTC).',
      priority: 1,
    },
    {
      name: 'Engine',
      type: 'string',
      jsonPath: '.spec.operationTemplate.spec.engine',
      description: 'Engine of the created Operations.',
      priority: 1,
    },
  ],
};
