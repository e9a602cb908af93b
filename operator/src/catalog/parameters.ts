// spec.parameters against a template: validation with field paths, defaults applied, and the names of
// the Secrets and ServiceAccounts the template's preconditions require.
import {
  type FieldError,
  formatFieldErrors,
  type JsonSchema,
  validateWithSchema,
} from './schema-validation.ts';
import type { Template } from './template.ts';

export type ParametersResult =
  | { ok: true; parameters: Record<string, unknown> }
  | { ok: false; reason: 'InvalidParameters'; errors: FieldError[]; message: string };

export function validateParameters(
  template: Pick<Template, 'name' | 'inputSchema'>,
  parameters: unknown,
): ParametersResult {
  const result = validateWithSchema(template.inputSchema, parameters ?? {}, 'spec.parameters');
  if (result.ok) return { ok: true, parameters: result.value as Record<string, unknown> };
  return {
    ok: false,
    reason: 'InvalidParameters',
    errors: result.errors,
    message: `spec.parameters do not match template ${template.name}: ${formatFieldErrors(result.errors)}`,
  };
}

export interface RequiredObjects {
  secrets: string[];
  serviceAccounts: string[];
}

/** Names the RequiredSecretsPresent / RequiredServiceAccountPresent preconditions check, from defaulted parameters. */
export function requiredObjects(
  template: Pick<Template, 'preconditions'>,
  parameters: JsonSchema,
): RequiredObjects {
  const out: RequiredObjects = { secrets: [], serviceAccounts: [] };
  for (const p of template.preconditions) {
    const list =
      p.name === 'RequiredSecretsPresent'
        ? out.secrets
        : p.name === 'RequiredServiceAccountPresent'
          ? out.serviceAccounts
          : undefined;
    if (!list) continue;
    list.push(...(p.names ?? []));
    const value = p.parameter ? parameters[p.parameter] : undefined;
    if (typeof value === 'string' && value !== '') list.push(value);
    // A map of names (volsync's repositories: claim → Secret): every value.
    else if (value !== null && typeof value === 'object' && !Array.isArray(value))
      list.push(...Object.values(value).filter((v): v is string => typeof v === 'string' && v !== ''));
  }
  return { secrets: [...new Set(out.secrets)], serviceAccounts: [...new Set(out.serviceAccounts)] };
}
