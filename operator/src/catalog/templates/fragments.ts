// Parameter schemas several built-in templates share.
import { DNS1123_SUBDOMAIN } from '../../api/schema-helpers.ts';
import { GO_DURATION_PATTERN } from '../template.ts';

/** The runner ServiceAccount the namespace admin creates and binds (DESIGN §4: job, helm). */
export const DEFAULT_RUNNER_SERVICE_ACCOUNT = 'vworkspace-runner';

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
