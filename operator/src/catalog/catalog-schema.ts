// The JSON Schema of catalog.yaml's application entries (templates use TemplateSchema from template.ts).
import { type Static, Type } from '@sinclair/typebox';
import {
  CAPABILITY_ENGINES,
  CAPABILITY_VERBS,
  type CapabilityEngine,
  type CapabilityVerb,
} from '../api/enums.ts';
import { DNS1123_SUBDOMAIN } from '../api/schema-helpers.ts';
import { type DisabledTemplate, MaintenanceWindowSchema, type Template } from './template.ts';

export const APPLICATION_ID_PATTERN = DNS1123_SUBDOMAIN;

export const ApplicationEntrySchema = Type.Object(
  {
    description: Type.Optional(Type.String({ description: 'What the application is.', maxLength: 1024 })),
    capabilities: Type.Optional(
      Type.Unsafe<Partial<Record<CapabilityVerb, CapabilityEngine>>>({
        type: 'object',
        description:
          'Capabilities projected onto every ApplicationInstance of this application: verb → engine, e.g. backup: velero.',
        additionalProperties: false,
        properties: Object.fromEntries(
          CAPABILITY_VERBS.map((verb) => [
            verb,
            {
              type: 'string',
              enum: [...CAPABILITY_ENGINES],
              description: `Engine of ops.vworkspace.io/${verb}.`,
            },
          ]),
        ),
      }),
    ),
    chartAnnotations: Type.Optional(
      Type.Boolean({
        description:
          'true: capabilities the chart declares in its Chart.yaml annotations (ops.vworkspace.io/<verb>) also apply, for verbs this entry does not set. Only for charts whose maintainers model the capability contract.',
        default: false,
      }),
    ),
    maintenanceWindow: Type.Optional(MaintenanceWindowSchema),
  },
  { additionalProperties: false, description: 'A catalog application.' },
);
export type ApplicationEntry = Static<typeof ApplicationEntrySchema>;

/** Where a catalog entry came from: `configmap <namespace>/<name>`. */
export interface Sourced {
  source: string;
}

export type CatalogApplication = ApplicationEntry & Sourced;
export type CatalogTemplateEntry = (Template | DisabledTemplate) & Sourced;

/** The catalog after parsing every catalog ConfigMap: applications by id and template entries in order. */
export interface Catalog {
  applications: Record<string, CatalogApplication>;
  templates: CatalogTemplateEntry[];
}

export function emptyCatalog(): Catalog {
  return { applications: {}, templates: [] };
}
