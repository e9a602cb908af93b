// docs/disaster-recovery.md is a guide a new user follows command by command, so it is checked like code:
// every YAML block of one of our kinds validates against its CRD schema (the source of the generated
// CRDs), an Operation's or a CronOperation's parameters against the template it runs (the built-ins with
// the guide's own catalog entry merged in, as the operator would), that catalog entry loads without a
// problem, and every `kubectl vws` command line parses as the plugin parses it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ALL_KINDS } from '../api/index.ts';
import {
  BUILTIN_TEMPLATES,
  formatFieldError,
  type JsonSchema,
  mergeTemplates,
  parseCatalog,
  resolveTemplate,
  validateParameters,
  validateWithSchema,
} from '../catalog/index.ts';
import { parseArgs } from './args.ts';

const GUIDE = readFileSync(join(import.meta.dirname, '../../../docs/disaster-recovery.md'), 'utf8');

const blocks = (lang: string) =>
  [...GUIDE.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] ?? '');
const documents = blocks('yaml').flatMap((b) =>
  YAML.parseAllDocuments(b).map((d) => d.toJS() as Record<string, unknown>),
);
const ours = documents.filter((d) => ALL_KINDS.some((k) => k.resource.kind === d.kind));
const catalogs = documents.filter((d) => d.kind === undefined && 'templates' in d);

/** The words of a shell command line: quotes removed, a `#` comment dropped. Enough for the guide's lines. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] ?? '';
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unbalanced ${c} in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === '#' && word === undefined) break;
    else word = (word ?? '') + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** The `kubectl vws …` lines of the console and sh blocks, continuations joined, prompts dropped. */
const pluginLines = [...blocks('console'), ...blocks('sh')]
  .flatMap((b) => b.replace(/\\\n\s*/g, '').split('\n'))
  .map((l) => l.replace(/^\$ /, '').trim())
  .filter((l) => l.startsWith('kubectl vws '));

describe('docs/disaster-recovery.md', () => {
  it('has the examples the guide walks through', () => {
    const kinds = ours.map((d) => `${d.kind}`);
    expect(kinds.filter((k) => k === 'Operation').length).toBeGreaterThanOrEqual(4);
    expect(kinds).toContain('CronOperation');
    expect(catalogs).toHaveLength(1);
    expect(pluginLines.length).toBeGreaterThanOrEqual(6);
  });

  it.each(ours.map((d) => [`${d.kind} ${(d.metadata as { name?: string })?.name}`, d] as const))(
    '%s validates against its CRD schema',
    (_name, obj) => {
      const kind = ALL_KINDS.find((k) => k.resource.kind === obj.kind)!;
      expect(obj.apiVersion).toBe(kind.resource.apiVersion);
      const r = validateWithSchema(kind.schema as unknown as JsonSchema, obj, '');
      expect(r.ok ? [] : r.errors.map(formatFieldError)).toEqual([]);
    },
  );

  const templates = () => {
    const { catalog, problems } = parseCatalog(
      catalogs.map((c, i) => ({
        metadata: { name: `guide-${i}`, namespace: 'vworkspace-operator' },
        data: { 'catalog.yaml': YAML.stringify(c) },
      })),
    );
    expect(problems).toEqual([]);
    return mergeTemplates(BUILTIN_TEMPLATES, catalog);
  };

  it('its catalog entry loads and replaces the built-in drill template', () => {
    const drill = templates().find((t) => t.name === 'velero-verify');
    expect(drill?.inputSchema.properties).toHaveProperty('probeSecret');
    expect(drill?.preconditions).toContainEqual({ name: 'RequiredSecretsPresent', parameter: 'probeSecret' });
  });

  it.each(
    ours.flatMap((d) => {
      const spec = d.spec as Record<string, unknown>;
      const op = d.kind === 'Operation' ? spec : (spec.operationTemplate as { spec?: unknown })?.spec;
      return op ? [[`${d.kind} ${(d.metadata as { name?: string })?.name}`, op] as const] : [];
    }),
  )('%s: its parameters are what the template takes', (_name, spec) => {
    const s = spec as { type: string; engine: string; template?: string; parameters?: unknown };
    const r = resolveTemplate(templates(), {
      type: s.type,
      engine: s.engine,
      ...(s.template ? { template: s.template } : {}),
    } as Parameters<typeof resolveTemplate>[1]);
    if (!r.ok) throw new Error(r.message);
    const p = validateParameters(r.template, s.parameters ?? {});
    expect(p.ok ? '' : p.message).toBe('');
  });

  it.each(pluginLines)('%s parses', (line) => {
    const parsed = parseArgs(shellWords(line).slice(2));
    expect(parsed.ok ? '' : parsed.message).toBe('');
  });

  it('would catch a stale command line and a stale parameter', () => {
    expect(parseArgs(shellWords('kubectl vws restore shop --form shop-prod').slice(2)).ok).toBe(false);
    const verify = BUILTIN_TEMPLATES.find((t) => t.name === 'velero-verify')!;
    expect(validateParameters(verify, { command: ['true'], password: 'x' }).ok).toBe(false);
    expect(shellWords(`kubectl vws run template/t -p 'command=["a b"]' # note`)).toEqual([
      'kubectl',
      'vws',
      'run',
      'template/t',
      '-p',
      'command=["a b"]',
    ]);
  });
});
