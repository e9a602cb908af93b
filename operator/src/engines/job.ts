// job engine (RunCommand): a batch/v1 Job running one command from an allowlisted image, with the
// restricted pod security profile and the runner ServiceAccount.
import type { KubernetesObject } from '@kubernetes/client-node';
import { DEFAULT_RUNNER_SERVICE_ACCOUNT } from '../catalog/templates/fragments.ts';
import { refuseUngranted } from './grants.ts';
import { at, str, stringArray } from './object.ts';
import { cancelJobs, observeJob, runnerJob } from './runner-pod.ts';
import type { EngineAdapter, MaterializeInput, MaterializeResult, Observation } from './types.ts';

/** The image allowlist is the `enum` of the template's `image` parameter; no enum, no image. */
export function allowedImages(inputSchema: unknown): string[] {
  return stringArray(at(inputSchema, 'properties', 'image', 'enum'));
}

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, template, parameters, env, attempt } = input;
  const refused = refuseUngranted(input);
  if (refused) return refused;
  const allowed = allowedImages(template.inputSchema);
  const image = str(parameters.image);
  if (allowed.length === 0) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `template ${template.name} has no image allowlist (inputSchema.properties.image.enum); RunCommand Jobs only run allowlisted images`,
    };
  }
  if (!image || !allowed.includes(image)) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `parameters.image ${JSON.stringify(image ?? null)} is not allowed by template ${template.name}; use one of: ${allowed.join(', ')}`,
    };
  }
  const command = stringArray(parameters.command);
  if (command.length === 0) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: 'parameters.command is required: the command and its arguments',
    };
  }
  const args = stringArray(parameters.args);
  const serviceAccountName = str(parameters.serviceAccountName) ?? DEFAULT_RUNNER_SERVICE_ACCOUNT;
  const job = runnerJob({
    op,
    template,
    env,
    attempt,
    containerName: 'run',
    image,
    command,
    args,
    serviceAccountName,
  });
  return { ok: true, children: [job] };
}

export const jobAdapter: EngineAdapter = {
  engine: 'job',
  types: ['Backup', 'Restore', 'Upgrade', 'Migration', 'RunCommand', 'Runbook'],
  childKinds: [{ apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' }],
  materialize,
  observe: (children: readonly KubernetesObject[]): Observation =>
    observeJob(
      children,
      { running: 'JobRunning', succeeded: 'JobSucceeded', failed: 'JobFailed' },
      'command',
    ),
  cancel: cancelJobs,
};
