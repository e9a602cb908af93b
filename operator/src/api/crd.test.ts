import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { crdFileName, renderCrdYaml, toCustomResourceDefinition } from './crd.ts';
import { ALL_KINDS } from './index.ts';

interface Node {
  [key: string]: unknown;
  type?: string;
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
}

/** Visits every schema node below `node` with its dotted path. */
function walk(node: Node, path: string, visit: (n: Node, path: string) => void): void {
  visit(node, path);
  for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${path}.${name}`, visit);
  if (node.items) walk(node.items, `${path}[]`, visit);
  if (node.additionalProperties && typeof node.additionalProperties === 'object')
    walk(node.additionalProperties, `${path}{}`, visit);
}

function openApiSchema(kind: (typeof ALL_KINDS)[number]): Node {
  const crd = toCustomResourceDefinition(kind) as {
    spec: { versions: { schema: { openAPIV3Schema: Node } }[] };
  };
  return crd.spec.versions[0]!.schema.openAPIV3Schema;
}

describe.each(ALL_KINDS.map((k) => [k.resource.kind, k] as const))('CRD of %s', (_name, kind) => {
  const schema = openApiSchema(kind);

  it('documents every field, so kubectl explain reads well', () => {
    const missing: string[] = [];
    walk(schema, kind.resource.kind, (n, path) => {
      if (!path.endsWith('{}') && path !== `${kind.resource.kind}.metadata` && !n.description)
        missing.push(path);
    });
    expect(missing).toEqual([]);
  });

  it('is a structural schema: every node typed, no JSON Schema keywords the API server refuses', () => {
    const problems: string[] = [];
    walk(schema, kind.resource.kind, (n, path) => {
      if (!n.type && !n['x-kubernetes-preserve-unknown-fields'] && !n['x-kubernetes-int-or-string'])
        problems.push(`${path}: no type`);
      if (n.properties && n.additionalProperties !== undefined)
        problems.push(`${path}: properties with additionalProperties`);
      for (const k of [
        'const',
        'anyOf',
        'oneOf',
        'allOf',
        'patternProperties',
        '$id',
        '$ref',
        'definitions',
      ]) {
        if (k in n) problems.push(`${path}: ${k}`);
      }
    });
    expect(problems).toEqual([]);
  });

  it('bounds every string and list a CEL rule reads', () => {
    const unbounded: string[] = [];
    walk(schema, kind.resource.kind, (n, path) => {
      const rules = n['x-kubernetes-validations'] as { rule: string }[] | undefined;
      if (!rules) return;
      // A rule on a string or list itself needs the bound on that node.
      if (n.type === 'string' && n.maxLength === undefined && n.enum === undefined) unbounded.push(path);
      if (n.type === 'array' && n.maxItems === undefined) unbounded.push(path);
    });
    expect(unbounded).toEqual([]);
  });

  it('has a status subresource, the category and the expected short names', () => {
    const crd = YAML.parse(renderCrdYaml(kind));
    expect(crd.metadata.name).toBe(`${kind.resource.plural}.${kind.resource.group}`);
    expect(crd.spec.names.categories).toEqual(['vworkspace']);
    expect(crd.spec.versions[0].subresources).toEqual({ status: {} });
    expect(
      crd.spec.versions[0].additionalPrinterColumns.at(
        -1 - kind.printerColumns.filter((c) => c.priority === 1).length,
      ).name,
    ).toBe('Age');
    expect(crdFileName(kind)).toBe(`${kind.resource.group}_${kind.resource.plural}.yaml`);
  });

  it('renders deterministically with sorted keys', () => {
    const text = renderCrdYaml(kind);
    expect(renderCrdYaml(kind)).toBe(text);
    walk(schema, kind.resource.kind, (n) => {
      const keys = Object.keys(n);
      expect(keys).toEqual([...keys].sort());
    });
  });
});

describe('names', () => {
  it('matches the design: short names and groups', () => {
    const byKind = Object.fromEntries(ALL_KINDS.map((k) => [k.resource.kind, k]));
    expect(byKind.ApplicationInstance?.shortNames).toEqual(['ai']);
    expect(byKind.ApplicationInstance?.resource.apiVersion).toBe('apps.vworkspace.io/v1alpha1');
    expect(byKind.Operation?.shortNames).toEqual(['op', 'ops']);
    expect(byKind.Operation?.resource.apiVersion).toBe('ops.vworkspace.io/v1alpha1');
    expect(byKind.CronOperation?.shortNames).toEqual(['cronop']);
    expect(byKind.WatchOperation?.shortNames).toEqual(['watchop']);
  });

  it('shows the Operation columns the design lists, in order', () => {
    const op = ALL_KINDS.find((k) => k.resource.kind === 'Operation')!;
    expect(op.printerColumns.filter((c) => c.priority !== 1).map((c) => c.name)).toEqual([
      'Type',
      'Engine',
      'Target',
      'Phase',
      'Reason',
      'Age',
    ]);
  });
});
