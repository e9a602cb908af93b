// Renders the field reference of a kind (the tables of docs/api/<kind>.md) from its schema, so the docs
// say exactly what `kubectl explain` and the API server say.
import type { KindDefinition } from './crd.ts';

export const BEGIN_MARKER = '<!-- BEGIN GENERATED: field reference (hack/generate.ts) -->';
export const END_MARKER = '<!-- END GENERATED: field reference -->';

export function docFileName(kind: KindDefinition): string {
  return `${kind.resource.kind.toLowerCase()}.md`;
}

interface Node {
  type?: string;
  format?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  maxProperties?: number;
  pattern?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  additionalProperties?: Node | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-validations'?: { message?: string; messageExpression?: string }[];
}

function typeLabel(n: Node): string {
  if (n.type === 'array') return `[]${n.items ? typeLabel(n.items) : 'any'}`;
  if (n.type === 'object') {
    if (n['x-kubernetes-preserve-unknown-fields']) return 'object (free-form)';
    if (n.additionalProperties && typeof n.additionalProperties === 'object')
      return `map[string]${typeLabel(n.additionalProperties)}`;
    return 'object';
  }
  return n.format ? `${n.type} (${n.format})` : (n.type ?? 'any');
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function details(n: Node): string {
  const parts: string[] = [n.description ?? ''];
  if (n.enum) parts.push(`One of: ${n.enum.map((v) => `\`${String(v)}\``).join(', ')}.`);
  if (n.default !== undefined) parts.push(`Default: \`${JSON.stringify(n.default)}\`.`);
  const bounds: string[] = [];
  if (n.minimum !== undefined) bounds.push(`min ${n.minimum}`);
  if (n.maximum !== undefined) bounds.push(`max ${n.maximum}`);
  if (n.minLength !== undefined && n.minLength > 0) bounds.push(`min length ${n.minLength}`);
  if (n.maxLength !== undefined) bounds.push(`max length ${n.maxLength}`);
  if (n.maxItems !== undefined) bounds.push(`max ${n.maxItems} items`);
  if (n.maxProperties !== undefined) bounds.push(`max ${n.maxProperties} keys`);
  if (bounds.length > 0) parts.push(`Bounds: ${bounds.join(', ')}.`);
  for (const v of n['x-kubernetes-validations'] ?? []) {
    if (v.message) parts.push(`Rule: ${v.message}.`);
  }
  return parts.filter(Boolean).join(' ');
}

function rows(node: Node, path: string, required: boolean, out: string[]): void {
  out.push(`| \`${path}\` | ${cell(typeLabel(node))} | ${required ? 'yes' : ''} | ${cell(details(node))} |`);
  const obj = node.type === 'array' ? node.items : node;
  if (!obj?.properties) return;
  const prefix = node.type === 'array' ? `${path}[]` : path;
  for (const [name, child] of Object.entries(obj.properties)) {
    rows(child, `${prefix}.${name}`, obj.required?.includes(name) ?? false, out);
  }
}

export function renderReference(kind: KindDefinition): string {
  const root = kind.schema as unknown as Node;
  const out: string[] = [];
  for (const section of ['spec', 'status'] as const) {
    const node = root.properties?.[section];
    if (!node) continue;
    out.push(`### ${section}`, '', '| Field | Type | Required | Description |', '|---|---|---|---|');
    rows(node, section, root.required?.includes(section) ?? false, out);
    out.push('');
  }
  const cols = kind.printerColumns
    .map(
      (c) => `| ${c.name} | \`${c.jsonPath}\` | ${c.priority === 1 ? 'wide' : ''} | ${cell(c.description)} |`,
    )
    .join('\n');
  return [
    `Group \`${kind.resource.group}\`, version \`${kind.resource.version}\`, kind \`${kind.resource.kind}\`, ${kind.scope.toLowerCase()}; ` +
      `short names ${kind.shortNames.map((s) => `\`${s}\``).join(', ')}; category \`${kind.categories.join(', ')}\`.`,
    '',
    '### kubectl get columns',
    '',
    '| Column | JSONPath | Shown | Meaning |',
    '|---|---|---|---|',
    cols,
    '',
    ...out,
  ].join('\n');
}

/** Replaces the text between the markers of `doc` with the generated reference of `kind`. */
export function spliceReference(doc: string, kind: KindDefinition, docPath: string): string {
  const begin = doc.indexOf(BEGIN_MARKER);
  const end = doc.indexOf(END_MARKER);
  if (begin < 0 || end < begin)
    throw new Error(`${docPath}: markers ${BEGIN_MARKER} ... ${END_MARKER} not found`);
  return `${doc.slice(0, begin + BEGIN_MARKER.length)}\n\n${renderReference(kind)}\n${doc.slice(end)}`;
}
