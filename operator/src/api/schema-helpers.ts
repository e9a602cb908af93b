// Building blocks for structural CRD schemas written with TypeBox. Kubernetes accepts a subset of
// JSON Schema (no const, no anyOf of literals, no patternProperties, properties XOR additionalProperties),
// so enums, maps and free objects are declared with Type.Unsafe: the emitted JSON is exactly what the
// API server wants and Static<> still yields the precise TS type.
import { type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import { CONDITION_STATUSES } from './enums.ts';

/** A DNS-1123 label: lowercase alphanumerics and '-', 63 characters at most. */
export const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** A DNS-1123 subdomain: dot-separated DNS labels, 253 characters at most. */
export const DNS1123_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** A label or annotation key: optional DNS-subdomain prefix and '/', then a 63-character name. */
export const QUALIFIED_NAME =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';

/** One `x-kubernetes-validations` entry. */
export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  fieldPath?: string;
}

export function cel(rule: string, message: string, extra: Omit<CelRule, 'rule' | 'message'> = {}): CelRule {
  return { rule, message, ...extra };
}

/** CEL transition rule: the field may never change after create. */
export function immutable(field: string): CelRule {
  return cel('self == oldSelf', `${field} is immutable; create a new object instead`);
}

/** A CEL list literal of strings: `['a', 'b']`. */
export function celList(values: readonly string[]): string {
  return `[${values.map((v) => `'${v}'`).join(', ')}]`;
}

interface Opts {
  description: string;
  [key: string]: unknown;
}

export function StringEnum<const T extends readonly string[]>(values: T, opts: Opts): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });
}

/** map[string]string (labels, annotations, arguments). */
export function StringMap(opts: Opts): TUnsafe<Record<string, string>> {
  return Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string' },
    ...opts,
  });
}

/** An object the API server stores as given (parameters, plan, outputs). */
export function FreeObject(opts: Opts): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
    ...opts,
  });
}

export function DateTime(opts: Opts) {
  return Type.String({ format: 'date-time', ...opts });
}

/** A name of an object in the same namespace. */
export function LocalName(opts: Opts) {
  return Type.String({ minLength: 1, maxLength: 253, pattern: DNS1123_SUBDOMAIN, ...opts });
}

export function ObservedGeneration(what: string) {
  return Type.Integer({
    format: 'int64',
    minimum: 0,
    description: `The metadata.generation of the ${what} the operator last acted on; when it lags metadata.generation the status is stale.`,
  });
}

/** metav1.Condition, field for field (same bounds and patterns as upstream). */
export const ConditionSchema = Type.Object(
  {
    type: Type.String({
      description:
        'Type of the condition, in UpperCamelCase (e.g. Accepted, Blocked, Running, Succeeded, Ready).',
      maxLength: 316,
      pattern: QUALIFIED_NAME,
    }),
    status: StringEnum(CONDITION_STATUSES, {
      description: 'Status of the condition: True, False or Unknown.',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        description:
          'The metadata.generation the condition was set for; older than the current generation means stale.',
      }),
    ),
    lastTransitionTime: DateTime({
      description: 'When the condition last changed from one status to another.',
    }),
    reason: Type.String({
      description: 'Programmatic identifier of why the condition is in its status, in UpperCamelCase.',
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: Type.String({
      description: 'Human-readable details, saying what to do about it when action is needed.',
      maxLength: 32768,
    }),
  },
  { description: 'One aspect of the current state (metav1.Condition).' },
);
export type Condition = Static<typeof ConditionSchema>;

export function Conditions(description: string) {
  return Type.Array(ConditionSchema, {
    description,
    maxItems: 16,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });
}

/** metav1.LabelSelector. */
export function LabelSelector(description: string) {
  return Type.Object(
    {
      matchLabels: Type.Optional(
        StringMap({
          description: 'Labels that must all be present with exactly these values.',
          maxProperties: 32,
        }),
      ),
      matchExpressions: Type.Optional(
        Type.Array(
          Type.Object(
            {
              key: Type.String({ description: 'The label key.', maxLength: 317, pattern: QUALIFIED_NAME }),
              operator: StringEnum(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const, {
                description: 'How the key relates to values: In, NotIn, Exists or DoesNotExist.',
              }),
              values: Type.Optional(
                Type.Array(Type.String({ description: 'A label value.', maxLength: 63 }), {
                  description:
                    'Values for In and NotIn (at least one); must be empty for Exists and DoesNotExist.',
                  maxItems: 64,
                  'x-kubernetes-list-type': 'atomic',
                }),
              ),
            },
            {
              description: 'A label requirement.',
              'x-kubernetes-validations': [
                cel(
                  "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
                  'values must be non-empty for In and NotIn and empty for Exists and DoesNotExist',
                ),
              ],
            },
          ),
          {
            description: 'Label requirements that must all hold.',
            maxItems: 16,
            'x-kubernetes-list-type': 'atomic',
          },
        ),
      ),
    },
    { description, 'x-kubernetes-map-type': 'atomic' },
  );
}

/** Metadata a template may give the objects it creates. */
export const TemplateMetadataSchema = Type.Object(
  {
    labels: Type.Optional(
      StringMap({ description: 'Labels added to each created Operation.', maxProperties: 64 }),
    ),
    annotations: Type.Optional(
      StringMap({ description: 'Annotations added to each created Operation.', maxProperties: 64 }),
    ),
  },
  { description: 'Labels and annotations of the created Operations.' },
);

/** The root of a kind's openAPIV3Schema: apiVersion, kind, metadata, spec, status and root CEL rules. */
export function RootSchema<S extends TSchema, T extends TSchema>(opts: {
  description: string;
  spec: S;
  status: T;
  rules?: CelRule[];
}) {
  return Type.Object(
    {
      apiVersion: Type.Optional(
        Type.String({
          description:
            'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.',
        }),
      ),
      kind: Type.Optional(
        Type.String({
          description:
            'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.',
        }),
      ),
      // The API server forbids anything on metadata but name/generateName constraints, even a description.
      metadata: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object' })),
      spec: opts.spec,
      status: Type.Optional(opts.status),
    },
    {
      description: opts.description,
      ...(opts.rules && opts.rules.length > 0 ? { 'x-kubernetes-validations': opts.rules } : {}),
    },
  );
}

/** CEL rule on the root: bounds metadata.name (see constants.ts for why). */
export function maxNameLength(max: number, why: string): CelRule {
  return cel(
    `self.metadata.name.size() <= ${max}`,
    `metadata.name must be at most ${max} characters: ${why}`,
  );
}
