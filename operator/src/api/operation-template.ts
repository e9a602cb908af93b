// What CronOperation and WatchOperation share: the template of the Operations they create and the
// concurrency/history fields (the CronJob vocabulary, as Crossplane's CronOperation uses it).
import { type Static, Type } from '@sinclair/typebox';
import { CONCURRENCY_POLICIES } from './enums.ts';
import {
  EngineField,
  engineTypeRule,
  OperationTypeField,
  ParametersField,
  PolicySchema,
  TargetRefSchema,
  TemplateNameField,
} from './operation.ts';
import { StringEnum, TemplateMetadataSchema } from './schema-helpers.ts';

const templateSpecFields = {
  type: OperationTypeField,
  engine: EngineField,
  template: Type.Optional(TemplateNameField),
  parameters: Type.Optional(ParametersField),
  policy: Type.Optional(PolicySchema),
};

/** CronOperation: every Operation targets the same instance. */
export const CronOperationTemplateSchema = Type.Object(
  {
    metadata: Type.Optional(TemplateMetadataSchema),
    spec: Type.Object(
      { ...templateSpecFields, targetRef: TargetRefSchema },
      {
        description: 'The spec of each created Operation (see `kubectl explain operation.spec`).',
        'x-kubernetes-validations': [engineTypeRule()],
      },
    ),
  },
  { description: 'Template of the Operations this CronOperation creates.' },
);
export type CronOperationTemplate = Static<typeof CronOperationTemplateSchema>;

/** WatchOperation: the target is the ApplicationInstance whose change triggered. */
export const WatchOperationTemplateSchema = Type.Object(
  {
    metadata: Type.Optional(TemplateMetadataSchema),
    spec: Type.Object(templateSpecFields, {
      description:
        'The spec of each created Operation without targetRef: the operator sets spec.targetRef.name to the ApplicationInstance whose change triggered it.',
      'x-kubernetes-validations': [engineTypeRule()],
    }),
  },
  { description: 'Template of the Operations this WatchOperation creates.' },
);
export type WatchOperationTemplate = Static<typeof WatchOperationTemplateSchema>;

/** `forbid` says what Forbid does with the run it does not start now (CronOperation skips it, WatchOperation keeps it). */
export function concurrencyPolicyField(subject: string, forbid: string) {
  return StringEnum(CONCURRENCY_POLICIES, {
    description: `What to do when ${subject} while an Operation it created is still running: Allow (create another; per-target conflicts still queue it), Forbid (do not create one now; ${forbid}) or Replace (cancel the running one gracefully through its spec.cancel, then create the new one).`,
    default: 'Allow',
  });
}

export const historyFields = {
  suspend: Type.Optional(
    Type.Boolean({
      description: 'True stops creating Operations; running ones are not affected.',
      default: false,
    }),
  ),
  successfulHistoryLimit: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: 100,
      default: 3,
      description: 'How many Succeeded Operations to keep; older ones are deleted.',
    }),
  ),
  failedHistoryLimit: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: 100,
      default: 1,
      description: 'How many Failed or Cancelled Operations to keep; older ones are deleted.',
    }),
  ),
};

export const ActiveRefSchema = Type.Object(
  {
    name: Type.String({ description: 'Name of the Operation.', maxLength: 253 }),
    target: Type.Optional(Type.String({ description: 'The ApplicationInstance it targets.', maxLength: 63 })),
  },
  { description: 'An Operation this object created that has not finished.' },
);
export type ActiveRef = Static<typeof ActiveRefSchema>;

export function activeField() {
  return Type.Array(ActiveRefSchema, {
    description: 'Operations created by this object that have not finished yet.',
    maxItems: 256,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  });
}
