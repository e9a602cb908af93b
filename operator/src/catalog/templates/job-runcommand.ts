import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { outputSchema, serviceAccountName } from './fragments.ts';

/**
 * Images a RunCommand may use. The allowlist lives in the template's schema, so an organization
 * narrows or replaces it by replacing this template in its catalog (same name).
 */
export const RUNCOMMAND_IMAGES = [
  'docker.io/library/busybox:1.37.0',
  'docker.io/library/alpine:3.22',
  'registry.k8s.io/kubectl:v1.34.1',
] as const;

/** batch/v1 Job running one command from an allowlisted image, restricted pod security, runner ServiceAccount. */
export const jobRunCommand: Template = {
  name: 'job-runcommand',
  description:
    "Runs one command in a batch Job next to the release: image from an allowlist, restricted pod security (non-root, read-only root filesystem, no capabilities), the runner ServiceAccount and never the operator's token.",
  type: 'RunCommand',
  engine: 'job',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['command'],
    properties: {
      image: {
        type: 'string',
        description: 'Container image, one of the allowlisted images',
        enum: [...RUNCOMMAND_IMAGES],
        default: RUNCOMMAND_IMAGES[0],
      },
      command: {
        type: 'array',
        description: 'The command and its arguments, run without a shell (e.g. ["sh", "-c", "echo hi"])',
        minItems: 1,
        maxItems: 64,
        items: { type: 'string', minLength: 1, maxLength: 4096 },
      },
      serviceAccountName: serviceAccountName('the Job'),
    },
  },
  outputSchema: outputSchema({ jobName: 'Name of the batch Job that ran (kubectl logs job/<jobName>)' }),
  rbacProfile: 'runCommand.job',
  preconditions: standardPreconditions([
    { name: 'RequiredServiceAccountPresent', parameter: 'serviceAccountName' },
  ]),
  targetSelectors: { capabilities: [{ verb: 'runcommand', engine: 'job' }] },
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 1800 },
};
