// CronOperation spec.retention and status.retention: which of the backups a Backup CronOperation made are
// deleted, through each engine's own API (docs/retention.md, docs/adr/0053-retention-through-each-engine.md).
// Its own file so the CronOperation schema only gains two fields.
import { type Static, Type } from '@sinclair/typebox';
import { cel, DateTime, StringEnum } from './schema-helpers.ts';

const count = (what: string) =>
  Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 0,
      description: `Keep the newest successful backup of each of the n most recent ${what} that have one (0: none by this rule; unset: the rule is off).`,
    }),
  );

export const RetentionSpecSchema = Type.Object(
  {
    keepLast: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description: 'Keep the newest n successful backups (0: none by this rule; unset: the rule is off).',
      }),
    ),
    keepHourly: count('hours'),
    keepDaily: count('calendar days (in spec.timeZone)'),
    keepWeekly: count('ISO weeks, Monday to Sunday (in spec.timeZone)'),
    keepMonthly: count('calendar months (in spec.timeZone)'),
    keepYearly: count('calendar years (in spec.timeZone)'),
    maxAge: Type.Optional(
      Type.String({
        description:
          'A ceiling, as a Go duration ("720h" for 30 days; there is no day unit): no rule keeps a backup older than this. Alone, it keeps every successful backup no older than it.',
        minLength: 1,
        maxLength: 32,
      }),
    ),
  },
  {
    description:
      "Delete the backups this CronOperation made that the policy does not keep, after each run and on every resync, through the engine's own API: a velero DeleteBackupRequest (Velero deletes the files in the bucket), a VolumeSnapshot delete (its content follows the class's deletionPolicy). Never deleted whatever the policy says: the newest successful backup of each instance, the newest one a Verify proved (status.lastVerifiedBackup of the instance), one a running Operation reads, one in progress. Only for type Backup on engine velero or snapshot (volsync: use parameters.retain). An empty policy keeps everything. The requester must be allowed to delete those backups themselves (docs/retention.md).",
  },
);
export type RetentionSpec = Static<typeof RetentionSpecSchema>;

/** The engines whose backups a retention policy deletes (ADR 0053: volsync's `retain` cannot keep the guarantees). */
export const RETENTION_ENGINES = ['velero', 'snapshot'] as const;

/** The CronOperation spec rules: a retention policy judges backups, which only a Backup on those engines makes. */
export function retentionRules() {
  return [
    cel(
      "!has(self.retention) || self.operationTemplate.spec.type == 'Backup'",
      'retention deletes the backups the CronOperation makes: it needs operationTemplate.spec.type Backup; remove spec.retention',
      { fieldPath: '.retention' },
    ),
    cel(
      `!has(self.retention) || self.operationTemplate.spec.engine in ['velero', 'snapshot']`,
      "retention deletes backups through the velero or snapshot engine only; for volsync set the template's parameters.retain (restic forget), and remove spec.retention",
      { fieldPath: '.retention' },
    ),
  ];
}

export const RETENTION_DELETE_REASONS = ['older-than-max-age', 'not-selected', 'failed-superseded'] as const;

/** status.retention.deleted keeps at most this many names: the newest pass's first ones. */
export const MAX_RETENTION_DELETED = 20;

export const RetentionStatusSchema = Type.Object(
  {
    time: DateTime({
      description:
        'When the pass ran. A pass that finds nothing new to delete leaves this record as it is; the Retention condition gives its counts.',
    }),
    kept: Type.Integer({ format: 'int32', minimum: 0, description: 'Backups the pass kept.' }),
    deleting: Type.Integer({
      format: 'int32',
      minimum: 0,
      description: 'Backups the pass asked the engine to delete, or found being deleted already.',
    }),
    deleted: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({
              description:
                'The velero Backup, or the snapshot Backup Operation its VolumeSnapshots came from.',
              maxLength: 253,
            }),
            instance: Type.String({ description: 'The ApplicationInstance it backed up.', maxLength: 63 }),
            reason: StringEnum(RETENTION_DELETE_REASONS, {
              description:
                'older-than-max-age (older than maxAge, kept by no guarantee), not-selected (no rule keeps it) or failed-superseded (a failed backup older than the newest success).',
            }),
          },
          { description: 'One backup the pass deleted, and why.' },
        ),
        {
          description: `The backups the pass deleted, at most ${MAX_RETENTION_DELETED} (an Event names each one).`,
          maxItems: MAX_RETENTION_DELETED,
        },
      ),
    ),
  },
  {
    description:
      'What the last retention pass that asked for a deletion kept and deleted. The condition Retention says how the latest pass went (RetentionApplied with its counts, or RetentionBlocked with what is missing).',
  },
);
export type RetentionStatus = Static<typeof RetentionStatusSchema>;
