import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { goDuration, outputSchema, serviceAccountName, VALUES_KEY_PATTERN } from './fragments.ts';

/** batch/v1 Job running the helm CLI: `helm upgrade --atomic --wait` to parameters.version. */
export const helmUpgrade: Template = {
  name: 'helm-upgrade',
  description:
    "Upgrades the release to another chart version with `helm upgrade --atomic --wait --reset-then-reuse-values` in a runner Job: the new chart's defaults, the release's own values, then `values`. A failed upgrade is rolled back by Helm and the condition carries helm's error. The chart source is the instance's spec.appRef.chart.",
  type: 'Upgrade',
  engine: 'helm',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['version'],
    properties: {
      version: {
        type: 'string',
        description: 'Chart version to upgrade to (semantic version, e.g. 6.7.0)',
        minLength: 1,
        maxLength: 128,
        pattern: '^v?[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]+)?$',
      },
      timeout: goDuration(
        'How long helm waits for the upgraded release to become ready (helm --timeout)',
        '10m',
      ),
      values: {
        type: 'object',
        description:
          'Chart values to change, on top of the release\'s own (helm --set-json per top-level key), e.g. {"replicas": 2, "ingress": {"enabled": true}}. Top-level keys are plain names (letters, digits, _ and -): nest objects instead of dotted paths. Visible in the Operation and its Job: never put a secret here',
        maxProperties: 64,
        propertyNames: { pattern: VALUES_KEY_PATTERN, maxLength: 253 },
      },
      serviceAccountName: serviceAccountName('the helm runner Job'),
    },
  },
  outputSchema: outputSchema({
    jobName: 'Name of the helm runner Job (kubectl logs job/<jobName>)',
    snapshotNames:
      'Safe Upgrade with safety.backup (a catalog template): the VolumeSnapshots taken before the upgrade, comma-separated',
  }),
  rbacProfile: 'upgrade.helm',
  preconditions: standardPreconditions([
    { name: 'RequiredServiceAccountPresent', parameter: 'serviceAccountName' },
  ]),
  targetSelectors: { capabilities: [{ verb: 'upgrade', engine: 'helm' }] },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
