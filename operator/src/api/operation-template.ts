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
import { cel, StringEnum, TemplateMetadataSchema } from './schema-helpers.ts';

const templateSpecFields = {
  type: OperationTypeField,
  engine: EngineField,
  template: Type.Optional(TemplateNameField),
  parameters: Type.Optional(ParametersField),
  policy: Type.Optional(PolicySchema),
};

/** CronOperation: every Operation targets the same instance, or (spec.targetSelector) each matching one. */
export const CronOperationTemplateSchema = Type.Object(
  {
    metadata: Type.Optional(TemplateMetadataSchema),
    spec: Type.Object(
      { ...templateSpecFields, targetRef: Type.Optional(TargetRefSchema) },
      {
        description:
          'The spec of each created Operation (see `kubectl explain operation.spec`). targetRef names the one ApplicationInstance every run targets; leave it out when spec.targetSelector picks a fleet.',
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

/** A parameter path: property names joined by dots (`version`, `restore.namespace`). */
export const PARAMETER_PATH_PATTERN = '^[A-Za-z_][A-Za-z0-9_-]*(\\.[A-Za-z_][A-Za-z0-9_-]*)*$';

/** spec.parametersFromTrigger: declared substitutions; `variables` describes what `from` may name. */
export function parametersFromTriggerField(variables: string) {
  return Type.Array(
    Type.Object(
      {
        parameter: Type.String({
          description:
            "The parameter to set, a path into spec.parameters (e.g. version, or restore.namespace). It must be declared in the template's inputSchema; a value from the trigger replaces one written in operationTemplate.spec.parameters.",
          minLength: 1,
          maxLength: 256,
          pattern: PARAMETER_PATH_PATTERN,
        }),
        from: Type.String({
          description: `Where the value comes from: ${variables}`,
          minLength: 1,
          maxLength: 512,
        }),
      },
      {
        description:
          'One substitution: a parameter of each created Operation takes a value from its trigger.',
      },
    ),
    {
      description: `Parameters each created Operation takes from what triggered it, checked by the admission webhook (an unknown variable, object field or parameter is refused at its field path). ${variables}`,
      maxItems: 32,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['parameter'],
    },
  );
}

/** spec.maxConcurrent: how many of the object's Operations may run at once, across its instances. */
export function maxConcurrentField(queued: string) {
  return Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: 1000,
    description: `At most this many Operations created by this object run (have not finished) at once, across all ApplicationInstances; ${queued}. Unset: no limit.`,
  });
}

/** CronOperation's rule: exactly one of a fixed target and a fleet selector. */
export function oneTargetRule() {
  return cel(
    'has(self.targetSelector) != has(self.operationTemplate.spec.targetRef)',
    'set exactly one of spec.targetSelector (one Operation per matching ApplicationInstance) and spec.operationTemplate.spec.targetRef (one instance)',
  );
}
