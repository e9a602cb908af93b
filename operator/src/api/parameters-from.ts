// Parameters read from another Operation's outputs: `spec.parametersFrom` of an Operation, the
// `parametersFrom` defaults of a template (only `latest`: a template cannot name one Operation), and
// `status.inputs`, the record of what was read from which Operation.
//
// One builder serves the CRD (structural schema: no additionalProperties next to properties; CEL for
// "exactly one source") and the catalog's template schema (ajv, additionalProperties: false).
import { type Static, Type } from '@sinclair/typebox';
import { ENGINES, OPERATION_TYPES } from './enums.ts';
import { cel, DateTime, DNS1123_LABEL, DNS1123_SUBDOMAIN, FreeObject, StringEnum } from './schema-helpers.ts';

/** An output key: engines write camelCase keys and `snapshot.<pvc>` (PVC names may hold dots). */
export const OUTPUT_KEY_PATTERN = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';
/** A parameter name: a top-level property of the template's inputSchema. */
export const PARAMETER_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const MAX_PARAMETER_SOURCES = 8;
export const MAX_OUTPUT_MAPPINGS = 16;

function strictness(strict: boolean) {
  return strict ? { additionalProperties: false } : {};
}

function outputMappingSchema(strict: boolean) {
  return Type.Object(
    {
      output: Type.String({
        description: "Key of the source Operation's status.outputs, e.g. backupName.",
        minLength: 1,
        maxLength: 253,
        pattern: OUTPUT_KEY_PATTERN,
      }),
      parameter: Type.Optional(
        Type.String({
          description:
            'Parameter it becomes (a top-level key of spec.parameters). Unset: the same name as output.',
          minLength: 1,
          maxLength: 63,
          pattern: PARAMETER_NAME_PATTERN,
        }),
      ),
    },
    { ...strictness(strict), description: 'One output copied into one parameter.' },
  );
}

function latestSchema(strict: boolean) {
  return Type.Object(
    {
      type: StringEnum(OPERATION_TYPES, { description: 'Type of the source Operation, e.g. Backup.' }),
      engine: Type.Optional(
        StringEnum(ENGINES, {
          description: 'Only Operations run by this engine (e.g. velero). Unset: any engine.',
        }),
      ),
      template: Type.Optional(
        Type.String({
          description: 'Only Operations that ran this template. Unset: any template.',
          minLength: 1,
          maxLength: 63,
          pattern: DNS1123_LABEL,
        }),
      ),
    },
    {
      ...strictness(strict),
      description:
        'The latest Succeeded Operation of this type on the same target (spec.targetRef.name) in the same namespace, latest by status.startedAt.',
    },
  );
}

function outputsField(strict: boolean) {
  return Type.Array(outputMappingSchema(strict), {
    description: 'The outputs to read and the parameters they become.',
    minItems: 1,
    maxItems: MAX_OUTPUT_MAPPINGS,
  });
}

/** One entry of Operation.spec.parametersFrom (CRD schema). */
export const ParameterSourceSchema = Type.Object(
  {
    operationRef: Type.Optional(
      Type.Object(
        {
          name: Type.String({
            description: 'Name of a Succeeded Operation in the same namespace.',
            minLength: 1,
            maxLength: 253,
            pattern: DNS1123_SUBDOMAIN,
          }),
        },
        {
          description:
            'A named Operation in the same namespace (cross-namespace references do not exist by design). It must end Succeeded; while it runs this Operation waits (Blocked/DependencyNotMet).',
        },
      ),
    ),
    latest: Type.Optional(latestSchema(false)),
    outputs: outputsField(false),
  },
  {
    description:
      'Where some parameters come from: exactly one of operationRef or latest, and the outputs to read.',
    'x-kubernetes-validations': [
      cel('has(self.operationRef) != has(self.latest)', 'set exactly one of operationRef and latest'),
    ],
  },
);
export type ParameterSource = Static<typeof ParameterSourceSchema>;

export const ParametersFromField = Type.Array(ParameterSourceSchema, {
  description:
    "Parameters read from the status.outputs of other Operations in this namespace, resolved once when the Operation is first evaluated and recorded in status.inputs; the merged parameters are validated against the template's inputSchema (InvalidParameters otherwise). A parameter may come from spec.parameters or from here, not both. Reading needs RBAC: get on the named Operation (operationRef), list on operations (latest).",
  maxItems: MAX_PARAMETER_SOURCES,
});

/** A template's parametersFrom entry (catalog schema): only `latest`, applied to parameters left unset. */
export const TemplateParameterSourceSchema = Type.Object(
  { latest: latestSchema(true), outputs: outputsField(true) },
  {
    additionalProperties: false,
    description:
      'A default source for parameters an Operation sets neither in spec.parameters nor in spec.parametersFrom.',
  },
);
export type TemplateParameterSource = Static<typeof TemplateParameterSourceSchema>;

/** One entry of status.inputs: what was read, from which Operation, because of which reference. */
export const InputRecordSchema = Type.Object(
  {
    from: Type.String({
      description:
        'The reference that was resolved: spec.parametersFrom[<i>] or template <name> parametersFrom[<i>].',
      maxLength: 128,
    }),
    operation: Type.String({ description: 'Name of the Operation read.', maxLength: 253 }),
    uid: Type.Optional(Type.String({ description: 'Its UID at the time.', maxLength: 64 })),
    type: StringEnum(OPERATION_TYPES, { description: 'Its type.' }),
    engine: StringEnum(ENGINES, { description: 'Its engine.' }),
    startedAt: Type.Optional(DateTime({ description: 'When it started.' })),
    finishedAt: Type.Optional(DateTime({ description: 'When it finished.' })),
    parameters: FreeObject({
      description: 'The parameters read from its status.outputs, by parameter name.',
    }),
    resolvedAt: DateTime({ description: 'When the reference was resolved.' }),
  },
  { description: 'What one parameter source resolved to.' },
);
export type InputRecord = Static<typeof InputRecordSchema>;

export const InputsField = Type.Array(InputRecordSchema, {
  description:
    "What spec.parametersFrom and the template's parametersFrom defaults resolved to, once, when the Operation was first evaluated (for auditors: which Operation's outputs became which parameters). Never re-resolved afterwards.",
  maxItems: MAX_PARAMETER_SOURCES * 2,
});
