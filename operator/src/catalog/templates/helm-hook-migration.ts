import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/** batch/v1 Job from the chart-provided template (ConfigMap `<release>-vworkspace-migration`, key job.yaml), sanitized. */
export const helmHookMigration: Template = {
  name: 'helm-hook-migration',
  description:
    "Runs the migration Job the chart ships: the Job manifest in ConfigMap <release>-vworkspace-migration (or configMapName), key job.yaml, rendered by Helm with the release. Its pod template is untrusted: anything beyond the restricted Pod Security Standard is refused, the restricted settings are forced, and it runs as one of the template's allowedServiceAccounts (unset: the first).",
  type: 'Migration',
  engine: 'helmHookJob',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      configMapName: objectName(
        'ConfigMap holding the rendered Job (key job.yaml); unset uses <release>-vworkspace-migration',
      ),
    },
  },
  outputSchema: outputSchema({ jobName: 'Name of the migration Job (kubectl logs job/<jobName>)' }),
  rbacProfile: 'migration.helmHookJob',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'migration', engine: 'helmHookJob' }] },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
