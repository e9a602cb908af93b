import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import {
  DEFAULT_MIGRATION_HOOK_EVENT,
  MIGRATION_HOOK_EVENTS,
  objectName,
  outputSchema,
} from './fragments.ts';

/** The chart's Helm hook Jobs of one event (or a ConfigMap's Job), in hook-weight order, sanitized (ADR 0017). */
export const helmHookMigration: Template = {
  name: 'helm-hook-migration',
  description:
    "Runs the chart's own Helm hook Jobs (annotation helm.sh/hook) of one event, as the newest release record holds them (values applied), in Helm's order (hook-weight, then name), each after the one before completed; or, with configMapName, the Job a ConfigMap holds (key job.yaml). Their pod templates are untrusted: anything beyond the restricted Pod Security Standard is refused, the restricted settings are forced, and they run as one of the template's allowedServiceAccounts (unset: the first).",
  type: 'Migration',
  engine: 'helmHookJob',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      hook: {
        type: 'string',
        description: "The Helm hook event whose Job hooks run (the chart's helm.sh/hook annotation names it)",
        enum: [...MIGRATION_HOOK_EVENTS],
        default: DEFAULT_MIGRATION_HOOK_EVENT,
      },
      configMapName: objectName(
        "Run the Job this ConfigMap holds (key job.yaml) instead of the chart's hooks",
      ),
    },
  },
  outputSchema: outputSchema({
    jobName: 'Name of the last migration Job that ran (kubectl logs job/<jobName>)',
    jobNames: 'The hook Jobs that ran, in order, comma-separated',
  }),
  rbacProfile: 'migration.helmHookJob',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'migration', engine: 'helmHookJob' }] },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
