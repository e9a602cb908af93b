// The docs stay true: their YAML examples validate against the generated CRD schemas and the catalog
// parser, and every well-known key is documented.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import * as keys from '../api/annotations.ts';
import { CAPABILITY_VERBS } from '../api/enums.ts';
import { ALL_KINDS } from '../api/index.ts';
import { mergeTemplates } from './merge.ts';
import { type ConfigMapLike, parseCatalog } from './parse.ts';
import { formatFieldError, type JsonSchema, validateWithSchema } from './schema-validation.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

const DOCS = join(import.meta.dirname, '../../../docs');
const read = (path: string) => readFileSync(join(DOCS, path), 'utf8');

function yamlBlocks(markdown: string): Record<string, unknown>[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map(
    (m) => YAML.parse(m[1]!) as Record<string, unknown>,
  );
}

const apiDocs = readdirSync(join(DOCS, 'api')).filter((f) => f.endsWith('.md'));

describe('docs/api examples', () => {
  const examples = apiDocs.flatMap((f) =>
    yamlBlocks(read(join('api', f)))
      .filter((o) => typeof o.kind === 'string')
      .map((o) => [`${f}: ${String((o.metadata as { name?: string })?.name)}`, o] as const),
  );

  it('has examples for every kind', () => {
    const kinds = new Set(examples.map(([, o]) => o.kind));
    for (const k of ALL_KINDS) expect(kinds).toContain(k.resource.kind);
  });

  it('would catch a broken example', () => {
    const op = ALL_KINDS.find((k) => k.resource.kind === 'Operation')!;
    const broken = {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      spec: { type: 'Snapshot', engine: 'velero' },
    };
    const r = validateWithSchema(op.schema as unknown as JsonSchema, broken, '');
    expect(r.ok ? [] : r.errors.map(formatFieldError).sort()).toEqual([
      'spec.targetRef: Required value: set spec.targetRef: The ApplicationInstance to operate on. It must be in the same namespace as the Operation: cross-namespace targets do not exist by design',
      expect.stringMatching(/^spec\.type: Unsupported value: "Snapshot"/),
    ]);
  });

  it.each(examples)('%s validates against its CRD schema', (_name, obj) => {
    const kind = ALL_KINDS.find((k) => k.resource.kind === obj.kind)!;
    expect(obj.apiVersion).toBe(kind.resource.apiVersion);
    const r = validateWithSchema(kind.schema as unknown as JsonSchema, obj, '');
    expect(r.ok ? [] : r.errors.map(formatFieldError)).toEqual([]);
  });
});

describe('docs/templates.md', () => {
  it('shows a catalog ConfigMap that loads without a problem and extends, replaces and disables', () => {
    const configMaps = yamlBlocks(read('templates.md')).filter(
      (o) => o.kind === 'ConfigMap',
    ) as ConfigMapLike[];
    expect(configMaps).toHaveLength(1);
    const { catalog, problems } = parseCatalog(configMaps);
    expect(problems).toEqual([]);
    expect(Object.keys(catalog.applications)).toEqual(['nextcloud', 'wordpress']);
    const names = mergeTemplates(BUILTIN_TEMPLATES, catalog).map((t) => t.name);
    expect(names).toContain('db-dump');
    expect(names).not.toContain('job-runcommand');
  });
});

describe('docs/templates.md catalog fragments', () => {
  it('load without a problem (e.g. the outputs/dependencies example)', () => {
    const fragments = yamlBlocks(read('templates.md')).filter(
      (o) => o.kind === undefined && 'templates' in o,
    );
    expect(fragments.length).toBeGreaterThan(0);
    for (const f of fragments) {
      const { problems } = parseCatalog([
        {
          metadata: { name: 'doc', namespace: 'vworkspace-system' },
          data: { 'catalog.yaml': YAML.stringify(f) },
        },
      ]);
      expect(problems).toEqual([]);
    }
  });
});

describe('docs/labels-and-annotations.md', () => {
  it('documents every well-known key and capability verb', () => {
    const doc = read('labels-and-annotations.md');
    const constants = Object.entries(keys as Record<string, unknown>).flatMap(([name, value]) =>
      typeof value === 'string' && /^(LABEL|ANNOTATION)_/.test(name) ? [[name, value] as const] : [],
    );
    expect(constants.length).toBeGreaterThan(10);
    for (const [, key] of constants) expect(doc).toContain(`\`${key}\``);
    for (const verb of CAPABILITY_VERBS) expect(doc).toContain(`\`ops.vworkspace.io/${verb}\``);
    expect(doc).toContain(keys.watchProcessedAnnotation('<watchoperation>'));
  });
});
