// WatchOperation (ops.vworkspace.io/v1alpha1): creates an Operation when a watched ApplicationInstance
// changes in a way that matters (a trigger label appears, a watched field path changes).
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { type Static, Type } from '@sinclair/typebox';
import { CATEGORY, MAX_SCHEDULER_NAME_LENGTH, WATCH_OPERATION } from './constants.ts';
import type { KindDefinition } from './crd.ts';
import {
  activeField,
  concurrencyPolicyField,
  historyFields,
  maxConcurrentField,
  parametersFromTriggerField,
  WatchOperationTemplateSchema,
} from './operation-template.ts';
import { RolloutStatusSchema, WatchRolloutSchema } from './rollout.ts';
import {
  Conditions,
  cel,
  DateTime,
  LabelSelector,
  maxNameLength,
  ObservedGeneration,
  QUALIFIED_NAME,
  RootSchema,
} from './schema-helpers.ts';

/**
 * Watched paths: `spec` or a path below it, or one label/annotation as `metadata.labels['key']`.
 * Status paths are refused on purpose: status-only updates never trigger.
 */
export const FIELD_PATH_PATTERN =
  "^(spec(\\.[A-Za-z_][A-Za-z0-9_]*)*|metadata\\.(labels|annotations)\\['[A-Za-z0-9][-A-Za-z0-9_./]*'\\])$";

export const WatchTriggersSchema = Type.Object(
  {
    labels: Type.Optional(
      Type.Array(Type.String({ description: 'A label key.', maxLength: 317, pattern: QUALIFIED_NAME }), {
        description:
          'Label keys whose appearance on an instance triggers an Operation (e.g. maintenance.example.com/backup-now). The operator marks the instance as processed so the label triggers once, and removes the label when the Operation finished.',
        maxItems: 16,
        'x-kubernetes-list-type': 'set',
      }),
    ),
    fieldPaths: Type.Optional(
      Type.Array(
        Type.String({
          description: "A field path such as spec.appRef.chart.version or metadata.labels['tier'].",
          maxLength: 256,
          pattern: FIELD_PATH_PATTERN,
        }),
        {
          description:
            "Field paths whose value change triggers an Operation, e.g. spec.appRef.chart.version for a backup before every upgrade. Paths are under spec, or metadata.labels['<key>'] / metadata.annotations['<key>']; status is never watched.",
          maxItems: 16,
          'x-kubernetes-list-type': 'set',
        },
      ),
    ),
  },
  {
    description: 'What makes a change worth an Operation. At least one label or field path.',
    'x-kubernetes-validations': [
      cel(
        '(has(self.labels) && size(self.labels) > 0) || (has(self.fieldPaths) && size(self.fieldPaths) > 0)',
        'set at least one trigger: a label key in triggers.labels or a field path in triggers.fieldPaths',
      ),
    ],
  },
);
export type WatchTriggers = Static<typeof WatchTriggersSchema>;

export const WatchOperationSpecSchema = Type.Object(
  {
    selector: Type.Optional(
      LabelSelector(
        'Which ApplicationInstances of this namespace to watch. Empty or unset: all of them. Instances of other namespaces are never watched.',
      ),
    ),
    triggers: WatchTriggersSchema,
    concurrencyPolicy: Type.Optional(
      concurrencyPolicyField(
        'a watched instance changes',
        'the latest change is kept and runs after the running one finishes, never dropped',
      ),
    ),
    ...historyFields,
    maxConcurrent: Type.Optional(
      maxConcurrentField(
        'a trigger beyond it waits in status.targets[].pendingTrigger and runs, oldest first, as running ones finish',
      ),
    ),
    parametersFromTrigger: Type.Optional(
      parametersFromTriggerField(
        "trigger.reason (label:<key> or field:<path>), trigger.time (when the change was acted on, RFC 3339 UTC), or object.<path> — a field of the ApplicationInstance that changed: object.metadata.name, object.metadata.labels['<key>'] (e.g. the trigger label's value), object.metadata.annotations['<key>'] or object.spec.<field> (e.g. object.spec.appRef.chart.version).",
      ),
    ),
    operationTemplate: WatchOperationTemplateSchema,
    rollout: Type.Optional(WatchRolloutSchema),
  },
  {
    description:
      'What to watch and the Operation to create. Changes that arrive while an Operation for the same instance runs are coalesced into one.',
  },
);
export type WatchOperationSpec = Static<typeof WatchOperationSpecSchema>;

export const WatchTargetSchema = Type.Object(
  {
    name: Type.String({ description: 'The ApplicationInstance.', maxLength: 253 }),
    fieldsHash: Type.Optional(
      Type.String({
        description: 'Hash of the watched field values last acted on; a different hash is a change.',
        maxLength: 128,
      }),
    ),
    lastTrigger: Type.Optional(
      Type.String({ description: 'What last triggered: label:<key> or field:<path>.', maxLength: 512 }),
    ),
    lastTriggerTime: Type.Optional(DateTime({ description: 'When it last triggered.' })),
    pendingTrigger: Type.Optional(
      Type.String({
        description:
          'A trigger that arrived while an Operation for this instance was running and waits for it to finish (the latest one; earlier ones are coalesced into it).',
        maxLength: 512,
      }),
    ),
    pendingSince: Type.Optional(DateTime({ description: 'When pendingTrigger was recorded.' })),
  },
  { description: 'What the WatchOperation remembers about one watched instance.' },
);
export type WatchTarget = Static<typeof WatchTargetSchema>;

export const WatchOperationStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration('WatchOperation')),
    conditions: Type.Optional(
      Conditions(
        "Ready: True/WatchActive while watching; False with InvalidSelector, InvalidOperationTemplate or Suspended. Halted (with spec.rollout): True/FailureBudgetExceeded when the latest run is halted, False with the run's reason otherwise.",
      ),
    ),
    active: Type.Optional(activeField()),
    lastTriggerTime: Type.Optional(DateTime({ description: 'When an Operation was last created.' })),
    lastSuccessfulTime: Type.Optional(
      DateTime({ description: 'When the last created Operation Succeeded.' }),
    ),
    watchingResources: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        description: 'How many ApplicationInstances match the selector.',
      }),
    ),
    targets: Type.Optional(
      Type.Array(WatchTargetSchema, {
        description:
          'Per watched instance: the last acted-on field values and any pending trigger, so a restart neither misses nor repeats a trigger.',
        maxItems: 4096,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    rollout: Type.Optional(RolloutStatusSchema),
  },
  { description: 'The observed state of the watch, written by the operator.' },
);
export type WatchOperationStatus = Static<typeof WatchOperationStatusSchema>;

export const WatchOperationSchema = RootSchema({
  description:
    'WatchOperation watches the ApplicationInstances of its namespace that match a selector and creates an Operation from operationTemplate, targeting the instance that changed, when a trigger label appears or a watched field changes. Status-only updates never trigger.',
  spec: WatchOperationSpecSchema,
  status: WatchOperationStatusSchema,
  rules: [maxNameLength(MAX_SCHEDULER_NAME_LENGTH, 'created Operations are named <name>-<suffix>')],
});

export interface WatchOperation {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  spec: WatchOperationSpec;
  status?: WatchOperationStatus;
}

export const watchOperationKind: KindDefinition = {
  resource: WATCH_OPERATION,
  singular: 'watchoperation',
  listKind: 'WatchOperationList',
  shortNames: ['watchop'],
  categories: [CATEGORY],
  scope: 'Namespaced',
  schema: WatchOperationSchema,
  printerColumns: [
    {
      name: 'Type',
      type: 'string',
      jsonPath: '.spec.operationTemplate.spec.type',
      description: 'Type of the created Operations.',
    },
    {
      name: 'Engine',
      type: 'string',
      jsonPath: '.spec.operationTemplate.spec.engine',
      description: 'Engine of the created Operations.',
    },
    {
      name: 'Watching',
      type: 'integer',
      jsonPath: '.status.watchingResources',
      description: 'Matching ApplicationInstances.',
    },
    {
      name: 'Suspend',
      type: 'boolean',
      jsonPath: '.spec.suspend',
      description: 'Whether triggers are suspended.',
    },
    {
      name: 'Last Trigger',
      type: 'date',
      jsonPath: '.status.lastTriggerTime',
      description: 'Time since the last Operation was created.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Time since creation.',
    },
  ],
};
