// Renders the parameter reference of the built-in templates (the generated part of docs/templates.md).
import { PRECONDITIONS } from '../api/enums.ts';
import { describeFilter } from './flow.ts';
import { allowedServiceAccounts } from './grants.ts';
import type { JsonSchema } from './schema-validation.ts';
import {
  capabilitySelectors,
  DEFAULT_WORKFLOW_SHUTDOWN,
  type Template,
  type WorkflowShutdown,
} from './template.ts';

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function typeOf(s: JsonSchema): string {
  if (Array.isArray(s.anyOf)) return (s.anyOf as JsonSchema[]).map(typeOf).join(' or ');
  if (s.type === 'array') return `[]${typeOf((s.items ?? {}) as JsonSchema)}`;
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object')
    return `map[string]${typeOf(s.additionalProperties as JsonSchema)}`;
  return s.format ? `${String(s.type)} (${String(s.format)})` : String(s.type ?? 'any');
}

function about(s: JsonSchema): string {
  const parts = [typeof s.description === 'string' ? `${s.description.replace(/\.$/, '')}.` : ''];
  if (Array.isArray(s.enum)) parts.push(`One of ${s.enum.map((v) => `\`${String(v)}\``).join(', ')}.`);
  const bounds: string[] = [];
  for (const [k, w] of [
    ['minimum', 'min'],
    ['maximum', 'max'],
    ['minItems', 'min items'],
    ['maxItems', 'max items'],
    ['maxLength', 'max length'],
    ['maxProperties', 'max keys'],
  ] as const) {
    if (typeof s[k] === 'number') bounds.push(`${w} ${String(s[k])}`);
  }
  if (bounds.length > 0) parts.push(`Bounds: ${bounds.join(', ')}.`);
  return parts.filter(Boolean).join(' ');
}

function parameterRows(schema: JsonSchema, prefix: string, out: string[]): void {
  const required = (schema.required ?? []) as string[];
  for (const [name, raw] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
    const path = prefix ? `${prefix}.${name}` : name;
    const def = raw.default === undefined ? '' : `\`${JSON.stringify(raw.default)}\``;
    out.push(
      `| \`${path}\` | ${cell(typeOf(raw))} | ${required.includes(name) ? 'yes' : ''} | ${def} | ${cell(about(raw))} |`,
    );
    if (raw.type === 'object' && raw.properties) parameterRows(raw, path, out);
  }
}

/** What the template grants a requester (catalog/grants.ts), for the templates where it matters. */
function grantsLine(t: Template): string | undefined {
  const props = (t.inputSchema.properties ?? {}) as Record<string, unknown>;
  const parts: string[] = [];
  if ('serviceAccountName' in props || t.engine === 'helmHookJob') {
    parts.push(
      `ServiceAccounts: ${allowedServiceAccounts(t)
        .map((s) => `\`${s}\``)
        .join(', ')}`,
    );
  }
  if (t.engine === 'workflow')
    parts.push(`ClusterWorkflowTemplates: ${t.allowClusterWorkflowTemplates ? 'yes' : 'no'}`);
  if (t.engine === 'velero' && t.type === 'Restore') {
    parts.push(`cluster-scoped objects: ${t.allowClusterResources ? 'yes' : 'no'}`);
  }
  return parts.length > 0 ? `grants: ${parts.join('; ')}` : undefined;
}

/** What stopping a workflow Operation does (the template's workflowShutdown). */
function shutdownLine(s: WorkflowShutdown): string {
  return s === 'Stop'
    ? "`spec.shutdown: Stop` (running steps stop; the Workflow's exit handler still runs)"
    : '`spec.shutdown: Terminate` (running steps stop; the exit handler does not run)';
}

export function renderTemplateReference(t: Template): string {
  const caps = capabilitySelectors(t)
    .map((c) => `\`ops.vworkspace.io/${c.verb}: ${c.engine}\``)
    .join(' or ');
  const pre = t.preconditions
    .map((p) => (p.parameter ? `${p.name} (from \`${p.parameter}\`)` : p.name))
    .join(' → ');
  const defaults = Object.entries(t.defaults ?? {})
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ');
  const rows: string[] = [];
  parameterRows(t.inputSchema, '', rows);
  const reach = grantsLine(t);
  const sources = (t.parametersFrom ?? []).map(
    (s) =>
      `- parametersFrom (when unset): ${s.outputs.map((m) => `\`${m.parameter ?? m.output}\``).join(', ')} from the output${s.outputs.length > 1 ? 's' : ''} ${s.outputs.map((m) => `\`${m.output}\``).join(', ')} of the latest Succeeded ${describeFilter(s.latest)} Operation on the target`,
  );
  const deps = (t.dependencies ?? []).map(
    (d) => `- depends on: a Succeeded ${describeFilter(d)}${d.maxAge ? ` started within ${d.maxAge}` : ''}`,
  );
  return [
    `### ${t.name}`,
    '',
    t.description ?? '',
    '',
    `- type / engine: \`${t.type}\` / \`${t.engine}\``,
    `- target must advertise: ${caps}`,
    `- RBAC profile: \`${t.rbacProfile}\``,
    `- preconditions: ${pre}`,
    `- policy defaults: ${defaults || '(none)'}`,
    ...sources,
    ...deps,
    ...(reach ? [`- ${reach}`] : []),
    ...(t.engine === 'workflow'
      ? [`- cancel: ${shutdownLine(t.workflowShutdown ?? DEFAULT_WORKFLOW_SHUTDOWN)}`]
      : []),
    '',
    '| Parameter | Type | Required | Default | Description |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    ...outputRows(t),
  ].join('\n');
}

/** The `status.outputs` table: what the template's outputSchema declares. */
function outputRows(t: Template): string[] {
  if (!t.outputSchema) return [];
  const props = Object.entries((t.outputSchema.properties ?? {}) as Record<string, JsonSchema>);
  const patterns = Object.entries((t.outputSchema.patternProperties ?? {}) as Record<string, JsonSchema>);
  return [
    '| Output (`status.outputs`) | Type | Description |',
    '|---|---|---|',
    ...props.map(([k, s]) => `| \`${k}\` | ${cell(typeOf(s))} | ${cell(about(s))} |`),
    ...patterns.map(([p, s]) => `| keys matching \`${cell(p)}\` | ${cell(typeOf(s))} | ${cell(about(s))} |`),
    '',
  ];
}

export function renderTemplatesReference(templates: readonly Template[]): string {
  const order = `Preconditions are evaluated in this order: ${PRECONDITIONS.join(' → ')}.`;
  return [order, '', ...templates.map(renderTemplateReference)].join('\n');
}
