// ApplicationInstance (apps.vworkspace.io/v1alpha1): a deployed Helm release plus its capabilities.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { type Static, Type } from '@sinclair/typebox';
import { APPLICATION_INSTANCE, CATEGORY } from './constants.ts';
import type { KindDefinition } from './crd.ts';
import {
  CAPABILITY_ENGINES,
  CAPABILITY_SOURCES,
  CAPABILITY_VERBS,
  CHART_SOURCE_TYPES,
  OPERATION_PHASES,
  OPERATION_TYPES,
} from './enums.ts';
import {
  Conditions,
  cel,
  DateTime,
  DNS1123_LABEL,
  DNS1123_SUBDOMAIN,
  ObservedGeneration,
  RootSchema,
  StringEnum,
} from './schema-helpers.ts';

/**
 * A chart name: letters, digits, '.', '_' and '-', starting with a letter or digit. It reaches helm's
 * command line, so it must never read as a flag (`--post-renderer=...`) or hold a path or a space.
 */
export const CHART_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*$';

const chartSourceFields = {
  sourceType: StringEnum(CHART_SOURCE_TYPES, {
    description:
      'oci for an OCI registry (url oci://...), helm for a classic chart repository (url http(s)://...).',
  }),
  url: Type.String({
    description:
      'Where the chart comes from: oci://registry.example.com/charts or https://charts.example.com.',
    minLength: 1,
    maxLength: 2048,
  }),
  name: Type.String({
    description:
      'Chart name, e.g. nextcloud: letters, digits, ".", "_" and "-", starting with a letter or digit.',
    minLength: 1,
    maxLength: 253,
    pattern: CHART_NAME_PATTERN,
  }),
};

/** Where a release's chart comes from: status.release.chartSource (ADR 0027). */
export const ChartSourceSchema = Type.Object(chartSourceFields, {
  description:
    "Where the release was installed from: spec.appRef.chart as it was when the release record first showed that chart deployed, kept afterwards. An Upgrade installs only from here (a later edit of spec.appRef.chart does not move it) unless its template's allowedChartSources lists the new url.",
});
export type ChartSource = Static<typeof ChartSourceSchema>;

export const ChartRefSchema = Type.Object(
  {
    ...chartSourceFields,
    version: Type.String({
      description:
        'Chart version the release should run, e.g. 6.6.0. A WatchOperation can trigger on a change of spec.appRef.chart.version (e.g. a backup before an upgrade).',
      minLength: 1,
      maxLength: 128,
    }),
  },
  {
    description: 'The chart the release was installed from.',
    'x-kubernetes-validations': [
      cel(
        "self.sourceType == 'oci' ? self.url.startsWith('oci://') : self.url.startsWith('https://') || self.url.startsWith('http://')",
        'url must start with oci:// when sourceType is oci and with https:// (or http://) when it is helm',
        { fieldPath: '.url' },
      ),
    ],
  },
);

export const ApplicationInstanceSpecSchema = Type.Object(
  {
    appRef: Type.Object(
      {
        catalogId: Type.String({
          description:
            'Id of the application in the catalog (catalog.yaml applications.<id>); its capabilities, chart-annotation opt-in and maintenance window apply to this instance.',
          minLength: 1,
          maxLength: 253,
          pattern: DNS1123_SUBDOMAIN,
        }),
        chart: Type.Optional(ChartRefSchema),
      },
      { description: 'Which application this is.' },
    ),
    release: Type.Object(
      {
        name: Type.String({
          description:
            'Helm release name; the operator reads its release record (Secrets of type helm.sh/release.v1).',
          minLength: 1,
          maxLength: 53,
          pattern: DNS1123_LABEL,
        }),
        namespace: Type.Optional(
          Type.String({
            description:
              "Namespace of the release. Must be the instance's own namespace (the default): operations never reach into other namespaces.",
            maxLength: 63,
            pattern: DNS1123_LABEL,
          }),
        ),
      },
      { description: 'The Helm release this instance describes. The operator does not install it.' },
    ),
  },
  {
    description:
      'What the instance is. Capabilities live in metadata.annotations (ops.vworkspace.io/<verb>).',
  },
);
export type ApplicationInstanceSpec = Static<typeof ApplicationInstanceSpecSchema>;

export const EffectiveCapabilitySchema = Type.Object(
  {
    verb: StringEnum(CAPABILITY_VERBS, {
      description: 'The capability verb (annotation ops.vworkspace.io/<verb>).',
    }),
    engine: StringEnum(CAPABILITY_ENGINES, { description: 'The engine that may carry it out.' }),
    source: StringEnum(CAPABILITY_SOURCES, {
      description:
        'Where it came from: catalog (the catalog entry of spec.appRef.catalogId), chart (the chart annotations, where the catalog entry opts in) or manual (an annotation on the instance that neither provides).',
    }),
  },
  { description: 'One effective capability.' },
);
export type EffectiveCapability = Static<typeof EffectiveCapabilitySchema>;

export const OperationRefSchema = Type.Object(
  {
    name: Type.String({ description: 'The Operation.', maxLength: 253 }),
    phase: StringEnum(OPERATION_PHASES, { description: 'Its phase.' }),
    reason: Type.Optional(
      Type.String({
        description:
          'The reason that explains its state (its Succeeded condition), e.g. AwaitingApproval or VeleroBackupFailed.',
        maxLength: 128,
      }),
    ),
    time: Type.Optional(
      DateTime({ description: 'current: when it started (or was created); last: when it finished.' }),
    ),
  },
  { description: 'One Operation on this instance.' },
);

export const OperationsOfTypeSchema = Type.Object(
  {
    type: StringEnum(OPERATION_TYPES, { description: 'The Operation type.' }),
    active: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description:
          'How many Operations of this type on this instance have not finished (running, blocked or pending).',
      }),
    ),
    current: Type.Optional(
      Type.Object(OperationRefSchema.properties, {
        description: 'The oldest unfinished one: the one running, or the first in line.',
      }),
    ),
    last: Type.Optional(
      Type.Object(OperationRefSchema.properties, {
        description: 'The one that finished last (kept after it is pruned or deleted).',
      }),
    ),
  },
  { description: 'The Operations of one type on this instance.' },
);
export type OperationsOfType = Static<typeof OperationsOfTypeSchema>;

export const NextScheduledRunSchema = Type.Object(
  {
    time: DateTime({ description: 'When, in UTC.' }),
    cronOperation: Type.String({ description: 'The CronOperation that runs it.', maxLength: 253 }),
    type: StringEnum(OPERATION_TYPES, { description: 'The type of Operation it creates.' }),
  },
  { description: 'The next run a CronOperation of this namespace has planned for this instance.' },
);
export type NextScheduledRun = Static<typeof NextScheduledRunSchema>;

/** The outcomes a restore drill (a Verify Operation) records: its probe passed or it did not. */
export const DRILL_RESULTS = ['Succeeded', 'Failed'] as const;

const DrillOperation = Type.String({
  description: 'The Verify Operation that ran the drill.',
  maxLength: 253,
});

export const LastSuccessfulBackupSchema = Type.Object(
  {
    time: DateTime({ description: 'When that Backup Operation finished (its status.finishedAt).' }),
    operation: Type.String({ description: 'The Backup Operation.', maxLength: 253 }),
  },
  {
    description:
      'The newest Backup Operation on this instance that Succeeded, written by the operator from the Operations of the namespace. Kept when that Operation is pruned or deleted; a later failed Backup does not move it. Exported as vworkspace_instance_last_successful_backup_timestamp_seconds (docs/monitoring.md).',
  },
);
export type LastSuccessfulBackup = Static<typeof LastSuccessfulBackupSchema>;

export const LastVerifiedBackupSchema = Type.Object(
  {
    time: DateTime({ description: "When the drill's probe passed on the restored copy." }),
    operation: DrillOperation,
    backup: Type.Optional(
      Type.String({ description: 'The backup it restored (e.g. the velero Backup).', maxLength: 253 }),
    ),
    rtoSeconds: Type.Number({
      minimum: 0,
      description: 'Measured recovery time: seconds from the start of the restore to the probe passing.',
    }),
    rpoSeconds: Type.Optional(
      Type.Number({ minimum: 0, description: 'The age of the backup, in seconds, when it was verified.' }),
    ),
  },
  {
    description:
      'The newest backup a restore drill proved: restored into a scratch namespace and the probe passed. Derived by the operator from the Verify Operations (restore drills) on this instance; kept when they are pruned. Exported as vworkspace_instance_last_verified_backup_timestamp_seconds and vworkspace_instance_last_drill_rto_seconds (docs/monitoring.md).',
  },
);
export type LastVerifiedBackup = Static<typeof LastVerifiedBackupSchema>;

export const LastDrillSchema = Type.Object(
  {
    time: DateTime({ description: 'When the drill finished.' }),
    operation: DrillOperation,
    result: StringEnum(DRILL_RESULTS, {
      description:
        'Succeeded: the probe passed on the restored copy; Failed: the restore or the probe failed.',
    }),
    reason: Type.Optional(
      Type.String({ description: "The Operation's Succeeded condition reason.", maxLength: 128 }),
    ),
  },
  {
    description:
      'The last restore drill on this instance, passed or failed. Derived by the operator from the Verify Operations (restore drills) on this instance; kept when they are pruned. Exported as vworkspace_instance_last_drill_succeeded (1 or 0; docs/monitoring.md).',
  },
);
export type LastDrill = Static<typeof LastDrillSchema>;

export const ApplicationInstanceStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration('ApplicationInstance')),
    conditions: Type.Optional(
      Conditions(
        'Ready: from the latest revision of the Helm release record (ReleaseDeployed, ReleaseFailed, ReleasePending, ReleaseNotFound; ReleaseNamespaceForbidden when spec.release.namespace names another namespace; ReleaseClaimed when an older instance of the namespace names the same release; ReleaseRecordUnreadable when no revision of the record can be decoded, e.g. it inflates past 32 MiB).',
      ),
    ),
    release: Type.Optional(
      Type.Object(
        {
          revision: Type.Optional(
            Type.Integer({ format: 'int32', minimum: 0, description: 'Latest release revision.' }),
          ),
          status: Type.Optional(
            Type.String({
              description:
                'Helm status of that revision: deployed, failed, pending-install, pending-upgrade, ...',
              maxLength: 63,
            }),
          ),
          chartVersion: Type.Optional(
            Type.String({ description: 'Chart version of that revision.', maxLength: 128 }),
          ),
          appVersion: Type.Optional(
            Type.String({ description: 'App version of that revision.', maxLength: 128 }),
          ),
          chartSource: Type.Optional(ChartSourceSchema),
        },
        { description: 'What the Helm release record says.' },
      ),
    ),
    capabilities: Type.Optional(
      Type.Array(EffectiveCapabilitySchema, {
        description: 'The effective verb → engine map and where each entry came from.',
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['verb'],
      }),
    ),
    operations: Type.Optional(
      Type.Array(OperationsOfTypeSchema, {
        description:
          'Per Operation type: how many are unfinished, the current one and the last finished one, from the Operations of the namespace that target this instance. Rewritten about a second after they change (a burst of changes is one write); while the operator works through a burst of Operations it waits for the burst to pause, at most 30 s (ADR 0062). A new Operation is picked up with the first status the operator writes on it.',
        maxItems: 8,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
    nextScheduledRun: Type.Optional(NextScheduledRunSchema),
    lastSuccessfulBackup: Type.Optional(LastSuccessfulBackupSchema),
    lastVerifiedBackup: Type.Optional(LastVerifiedBackupSchema),
    lastDrill: Type.Optional(LastDrillSchema),
  },
  { description: 'The observed state of the instance, written by the operator.' },
);
export type ApplicationInstanceStatus = Static<typeof ApplicationInstanceStatusSchema>;

export const ApplicationInstanceSchema = RootSchema({
  description:
    'ApplicationInstance is a deployed Helm release plus its capabilities: annotations ops.vworkspace.io/<verb>: <engine> saying which day-2 operations it accepts and which engine runs them. Operations target it by name.',
  spec: ApplicationInstanceSpecSchema,
  status: ApplicationInstanceStatusSchema,
});

export interface ApplicationInstance {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  spec: ApplicationInstanceSpec;
  status?: ApplicationInstanceStatus;
}

export const applicationInstanceKind: KindDefinition = {
  resource: APPLICATION_INSTANCE,
  singular: 'applicationinstance',
  listKind: 'ApplicationInstanceList',
  shortNames: ['ai'],
  categories: [CATEGORY],
  scope: 'Namespaced',
  schema: ApplicationInstanceSchema,
  printerColumns: [
    { name: 'Catalog', type: 'string', jsonPath: '.spec.appRef.catalogId', description: 'Catalog id.' },
    { name: 'Release', type: 'string', jsonPath: '.spec.release.name', description: 'Helm release name.' },
    {
      name: 'Version',
      type: 'string',
      jsonPath: '.status.release.chartVersion',
      description: 'Chart version of the latest release revision.',
    },
    {
      name: 'Ready',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      description: 'Whether the latest release revision is deployed.',
    },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: 'Reason of the Ready condition.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Time since creation.',
    },
    {
      name: 'Revision',
      type: 'integer',
      jsonPath: '.status.release.revision',
      description: 'Latest release revision.',
      priority: 1,
    },
    {
      name: 'Last Backup',
      type: 'date',
      jsonPath: '.status.lastSuccessfulBackup.time',
      description: 'When the newest successful Backup Operation on this instance finished.',
      priority: 1,
    },
    {
      name: 'Next Run',
      type: 'string',
      jsonPath: '.status.nextScheduledRun.time',
      description: 'The next run a CronOperation has planned for this instance.',
      priority: 1,
    },
  ],
};
