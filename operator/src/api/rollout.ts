// CronOperation and WatchOperation spec.rollout and status.rollout: a fleet run (spec.targetSelector) rolled out in waves that
// halts when its failure budget is spent (docs/rollout.md, ADR 0043). Its own file so the CronOperation
// schema only gains two fields.
import { type Static, Type } from '@sinclair/typebox';
import { cel, DateTime, StringEnum } from './schema-helpers.ts';

/**
 * The snapshot of a run holds at most this many instances: names may be 253 characters, and the whole
 * status must stay far below etcd's object size limit. A larger fleet is refused (InvalidRollout).
 */
export const MAX_ROLLOUT_INSTANCES = 1000;
/** How many names each status list shows; its count is always whole. */
export const MAX_ROLLOUT_LISTED = 20;

const CountOrPercent = (description: string) =>
  Type.Unsafe<number | string>({ 'x-kubernetes-int-or-string': true, description });

export const RolloutSchema = Type.Object(
  {
    waves: Type.Array(
      CountOrPercent(
        'The cumulative end of a wave: a count of instances (1 or more) or a percentage of the run\'s fleet ("10%", rounded up). Each is at least the one of its kind before it.',
      ),
      {
        description:
          'Cumulative waves in name order, e.g. [1, "10%", "50%", "100%"]: the first instance, then up to 10% of the fleet, half, all. What the last wave leaves out runs as a final wave. A wave starts when every instance of the one before finished.',
        minItems: 1,
        maxItems: 16,
      },
    ),
    failureBudget: Type.Optional(
      CountOrPercent(
        'Failed instances the whole run tolerates: a count (0 or more) or a percentage of the fleet ("10%", rounded down). One failure more halts the run: nothing more starts until a person resumes it (annotation ops.vworkspace.io/resume, kubectl vws resume) or abandons it (ops.vworkspace.io/abandon, kubectl vws abandon). Unset: 0, the first failure halts.',
      ),
    ),
    pauseBetweenWaves: Type.Optional(
      Type.String({
        description:
          'How long to wait after the last instance of a wave finished before the next wave starts, as a Go duration (e.g. 10m, 1h30m). Unset: no pause.',
        maxLength: 32,
      }),
    ),
  },
  {
    description:
      'Roll each fleet run out in waves and halt it when too many instances fail (needs spec.targetSelector). Runs that come due while a run is unfinished (rolling out or halted) are skipped and recorded in status.missedSlots (reason RolloutInProgress); a run-now request then is refused.',
  },
);
export type Rollout = Static<typeof RolloutSchema>;

/** WatchOperation spec.rollout: the same strategy; what forms one run is a change (ADR 0056). */
export const WatchRolloutSchema = Type.Object(RolloutSchema.properties, {
  description:
    "Roll each watched change out in waves and halt it when too many instances fail. One run is the instances whose watched values changed to the same new values (or got the same trigger label value): it begins 10s after the first of them was seen, and later instances with that change join it while it is unfinished. A different change waits until the run is Completed or Abandoned; a change equal to an abandoned run's is dropped.",
});

export const ROLLOUT_INSTANCE_STATES = [
  'NotStarted',
  'Running',
  'Succeeded',
  'Failed',
  'Cancelled',
  'Removed',
] as const;

const RolloutInstanceSchema = Type.Object(
  {
    name: Type.String({ description: 'An ApplicationInstance of the run.', maxLength: 253 }),
    state: StringEnum(ROLLOUT_INSTANCE_STATES, {
      description:
        'NotStarted, Running (its Operation has not ended), Succeeded, Failed, Cancelled, or Removed (gone or no longer matching before its Operation was created).',
    }),
    finishedAt: Type.Optional(DateTime({ description: 'When its Operation ended.' })),
  },
  { description: 'One instance of the run and how far it got; kept when its Operation is deleted.' },
);
export type RolloutInstanceStatus = Static<typeof RolloutInstanceSchema>;

const NameListSchema = (what: string) =>
  Type.Object(
    {
      count: Type.Integer({ format: 'int32', minimum: 0, description: `How many instances ${what}.` }),
      names: Type.Array(Type.String({ description: 'An ApplicationInstance.', maxLength: 253 }), {
        description: `The first ${MAX_ROLLOUT_LISTED}, in rollout order.`,
        maxItems: MAX_ROLLOUT_LISTED,
      }),
    },
    { description: `The instances that ${what}.` },
  );

export const ROLLOUT_STATUS_PHASES = ['Progressing', 'Halted', 'Abandoned', 'Completed', 'Invalid'] as const;

export const RolloutStatusSchema = Type.Object(
  {
    run: Type.Object(
      {
        reason: StringEnum(['schedule', 'manual', 'change'] as const, {
          description:
            'A scheduled slot or a run-now request (CronOperation), or a watched change (WatchOperation).',
        }),
        scheduledTime: DateTime({
          description:
            'The slot (or when the run-now request was acted on); for a change, when its first instance was seen.',
        }),
        request: Type.Optional(
          Type.String({ description: 'The run-now value (reason manual).', maxLength: 256 }),
        ),
        change: Type.Optional(
          Type.String({
            description:
              'The change the run carries (reason change): fields=<hash of the watched values> or label:<key>=<value>.',
            maxLength: 512,
          }),
        ),
      },
      { description: 'The run being rolled out (the latest fleet run).' },
    ),
    phase: StringEnum(ROLLOUT_STATUS_PHASES, {
      description:
        'Progressing (waves run or wait for their pause), Halted (the failure budget is spent: resume or abandon), Abandoned, Completed, or Invalid (spec.rollout cannot be used; nothing starts until it is fixed).',
    }),
    reason: Type.String({
      description:
        'WaveRunning, PausedBetweenWaves, FailureBudgetExceeded, RolloutAbandoned, RolloutCompleted, CompletedWithFailures or InvalidRollout.',
      maxLength: 64,
    }),
    message: Type.String({ description: 'What is happening, and what to do.', maxLength: 4096 }),
    startedAt: DateTime({ description: 'When the run began.' }),
    wave: Type.Optional(
      Type.Object(
        {
          index: Type.Integer({ format: 'int32', minimum: 1, description: 'The wave worked on (1-based).' }),
          of: Type.Integer({ format: 'int32', minimum: 1, description: 'Waves in the run.' }),
          size: Type.Integer({ format: 'int32', minimum: 0, description: 'Instances in this wave.' }),
        },
        { description: 'The wave worked on (the last one once all are done).' },
      ),
    ),
    failures: Type.Object(
      {
        counted: Type.Integer({
          format: 'int32',
          minimum: 0,
          description: 'Failures counted against the budget (since the latest resume).',
        }),
        budget: Type.Integer({ format: 'int32', minimum: 0, description: 'The budget, in instances.' }),
      },
      { description: 'The failure budget and what was spent of it.' },
    ),
    running: NameListSchema('run now'),
    succeeded: NameListSchema('succeeded'),
    failed: NameListSchema('failed'),
    cancelled: NameListSchema('were cancelled'),
    removed: NameListSchema('were removed before they started'),
    notStarted: NameListSchema('have not started (this wave and later ones)'),
    instances: Type.Array(RolloutInstanceSchema, {
      description: 'The run: the instances that matched spec.targetSelector when it began, with their state.',
      maxItems: MAX_ROLLOUT_INSTANCES,
    }),
    resumeRequest: Type.Optional(
      Type.String({ description: 'The ops.vworkspace.io/resume value last acted on.', maxLength: 256 }),
    ),
    resumedAt: Type.Optional(DateTime({ description: 'When a person last resumed the halted run.' })),
    abandonRequest: Type.Optional(
      Type.String({ description: 'The ops.vworkspace.io/abandon value last acted on.', maxLength: 256 }),
    ),
    abandonedAt: Type.Optional(DateTime({ description: 'When a person abandoned the run.' })),
  },
  { description: 'The latest fleet run rolled out under spec.rollout.' },
);
export type RolloutStatus = Static<typeof RolloutStatusSchema>;

/** The CronOperation spec rule: waves split a fleet, so spec.rollout needs spec.targetSelector. */
export function rolloutNeedsFleetRule() {
  return cel(
    '!has(self.rollout) || has(self.targetSelector)',
    'rollout splits a fleet run into waves: set spec.targetSelector, or remove spec.rollout',
    { fieldPath: '.rollout' },
  );
}
