// Parameter schemas several built-in templates share.
import { DNS1123_SUBDOMAIN } from '../../api/schema-helpers.ts';
import { GO_DURATION_PATTERN } from '../template.ts';

/** The runner ServiceAccount the namespace admin creates and binds (DESIGN §4: job, helm). */
export const DEFAULT_RUNNER_SERVICE_ACCOUNT = 'vworkspace-runner';

/** Top-level keys of helm-upgrade's `values`: plain names, so helm's --set-json reads each as one key (no path). */
export const VALUES_KEY_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_-]*$';

/**
 * The Helm events whose hooks a Migration (helmHookJob) may run. Not pre-/post-delete (an uninstall's
 * clean-up) nor test (a test suite): neither is a migration of the running release.
 */
export const MIGRATION_HOOK_EVENTS = [
  'pre-upgrade',
  'post-upgrade',
  'pre-install',
  'post-install',
  'pre-rollback',
  'post-rollback',
] as const;
export const DEFAULT_MIGRATION_HOOK_EVENT = 'pre-upgrade';

export function serviceAccountName(what: string) {
  return {
    type: 'string',
    description: `ServiceAccount ${what} runs as, created and bound by the namespace admin; never the operator's own. One of the template's allowedServiceAccounts, unless the requester may create pods (or impersonate that ServiceAccount) in the namespace themselves.`,
    default: DEFAULT_RUNNER_SERVICE_ACCOUNT,
    minLength: 1,
    maxLength: 253,
    pattern: DNS1123_SUBDOMAIN,
  };
}

export function goDuration(description: string, defaultValue?: string) {
  return {
    type: 'string',
    description: `${description}, as a Go duration such as 720h, 90m or 1h30m`,
    pattern: GO_DURATION_PATTERN,
    maxLength: 32,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  };
}

export function objectName(description: string) {
  return { type: 'string', description, minLength: 1, maxLength: 253, pattern: DNS1123_SUBDOMAIN };
}

/**
 * A restore drill's `probeSecret` (ADR 0057): a Secret of the Operation's namespace whose keys the probe gets
 * as environment variables. Admission requires the requester's `get` on it (the probe's output reaches
 * status); it can only be written in spec.parameters, never filled from parametersFrom.
 */
export function probeSecret() {
  return objectName(
    "Name of a Secret in this namespace whose keys become the probe's environment variables (envFrom), e.g. PGPASSWORD for psql. The probe's last lines reach status, so the requester needs RBAC get on this Secret (checked at admission); the operator never reads it. A Secret that does not exist yet blocks the drill (MissingSecret)",
  );
}

/**
 * An outputSchema: what the engine's observe() writes to status.outputs, every value a string.
 * `patterns` declares keys that depend on the release (e.g. `snapshot.<pvc>`).
 */
export function outputSchema(
  properties: Record<string, string>,
  patterns: Record<string, string> = {},
): Record<string, unknown> {
  const str = (description: string) => ({ type: 'string', description });
  return {
    type: 'object',
    properties: Object.fromEntries(Object.entries(properties).map(([k, d]) => [k, str(d)])),
    ...(Object.keys(patterns).length > 0
      ? { patternProperties: Object.fromEntries(Object.entries(patterns).map(([k, d]) => [k, str(d)])) }
      : {}),
  };
}

/**
 * volsync: the restic repository Secret, one for the release's only claim or one per claim. VolSync's
 * restic mover tells a repository's snapshots apart only by time, so claims must not share one
 * (engines/volsync-repositories.ts).
 */
export const resticRepository = {
  description:
    "The restic repository Secret of the namespace (URL and credentials): its name, when the release has one claim; else one per claim (claim name → Secret), each with a RESTIC_REPOSITORY path of its own: VolSync's restic mover tells a repository's snapshots apart only by time, so claims sharing one would restore each other's data",
  anyOf: [
    objectName('the Secret of the release’s only claim'),
    {
      type: 'object',
      description: 'claim name → Secret',
      minProperties: 1,
      maxProperties: 64,
      additionalProperties: objectName('the Secret of that claim'),
    },
  ],
};
