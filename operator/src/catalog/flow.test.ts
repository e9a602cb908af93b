import { describe, expect, it } from 'vitest';
import { aTemplate, catalogConfigMap } from '../../../test/support/builders/catalog.ts';
import {
  declaresOutput,
  parameterSources,
  RELAXED_COPIES_PER_SCHEMA,
  suppliedParameters,
  withoutRequired,
} from './flow.ts';
import { parseCatalog } from './parse.ts';
import { compileOpenApiSchema } from './schema-validation.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

const restore = BUILTIN_TEMPLATES.find((t) => t.name === 'velero-restore')!;
const snapshot = BUILTIN_TEMPLATES.find((t) => t.name === 'snapshot-backup')!;

describe('template flow', () => {
  it('declaresOutput: properties and patternProperties; unknown without an outputSchema', () => {
    expect(declaresOutput(snapshot, 'snapshotNames')).toBe(true);
    expect(declaresOutput(snapshot, 'snapshot.data-0')).toBe(true);
    expect(declaresOutput(snapshot, 'backupName')).toBe(false);
    expect(declaresOutput(aTemplate(), 'anything')).toBeUndefined();
  });

  it("the template's parametersFrom applies only to parameters the Operation leaves unset", () => {
    expect(parameterSources({}, restore)).toEqual([
      {
        from: 'template velero-restore parametersFrom[0]',
        source: { latest: { type: 'Backup', engine: 'velero' } },
        outputs: [{ output: 'backupName' }],
      },
    ]);
    expect(parameterSources({ parameters: { backupName: 'x' } }, restore)).toEqual([]);
    const own = parameterSources(
      { parametersFrom: [{ operationRef: { name: 'b' }, outputs: [{ output: 'backupName' }] }] },
      restore,
    );
    expect(own.map((s) => s.from)).toEqual(['spec.parametersFrom[0]']);
    expect(suppliedParameters(own)).toEqual(new Set(['backupName']));
  });

  it('withoutRequired drops only the supplied root requirements', () => {
    expect(withoutRequired({ type: 'object', required: ['a', 'b'] }, new Set(['a']))).toEqual({
      type: 'object',
      required: ['b'],
    });
    expect(withoutRequired({ type: 'object', required: ['a'] }, new Set(['a']))).toEqual({ type: 'object' });
  });

  it('withoutRequired gives the same copy for the same schema and keys: a second request compiles nothing', () => {
    const schema = {
      type: 'object',
      required: ['a', 'b', 'c'],
      properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } },
    };
    const first = withoutRequired(schema, new Set(['a']));
    const second = withoutRequired(schema, new Set(['a', 'not-required']));
    expect(second).toBe(first);
    expect(compileOpenApiSchema(second)).toBe(compileOpenApiSchema(first));
    expect(second).toEqual({ ...schema, required: ['b', 'c'] });
    expect(schema.required).toEqual(['a', 'b', 'c']);
    // Other keys, another copy; keys that drop nothing, the schema itself.
    expect(withoutRequired(schema, new Set(['b']))).toEqual({ ...schema, required: ['a', 'c'] });
    expect(withoutRequired(schema, new Set(['x']))).toBe(schema);
  });

  it('withoutRequired keeps a bounded number of copies per schema, the newest', () => {
    const names = Array.from({ length: RELAXED_COPIES_PER_SCHEMA + 1 }, (_, i) => `p${i}`);
    const schema = { type: 'object', required: names };
    const copies = names.map((n) => withoutRequired(schema, new Set([n])));
    expect(withoutRequired(schema, new Set([names.at(-1)!]))).toBe(copies.at(-1));
    // The first was let go: an equal copy, not the same one.
    const again = withoutRequired(schema, new Set([names[0]!]));
    expect(again).not.toBe(copies[0]);
    expect(again).toEqual(copies[0]);
  });

  it('the catalog skips templates whose outputs, sources or dependencies cannot work', () => {
    const bad = [
      aTemplate({ name: 'a', outputSchema: { type: 'string' } }),
      aTemplate({ name: 'b', outputSchema: { type: 'object', properties: { x: { type: 'strin' } } } }),
      aTemplate({
        name: 'c',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          properties: { bucket: { type: 'string' } },
        },
        parametersFrom: [{ latest: { type: 'Backup' }, outputs: [{ output: 'x', parameter: 'nope' }] }],
      }),
      aTemplate({ name: 'd', dependencies: [{ type: 'Upgrade', engine: 'snapshot' }] }),
      aTemplate({ name: 'e', dependencies: [{ type: 'Backup', maxAge: '0s' }] }),
      aTemplate({
        name: 'ok',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          properties: { from: { type: 'string' } },
        },
        outputSchema: { type: 'object', properties: { result: { type: 'string' } } },
        parametersFrom: [
          {
            latest: { type: 'Backup', engine: 'velero' },
            outputs: [{ output: 'backupName', parameter: 'from' }],
          },
        ],
        dependencies: [{ type: 'Backup', maxAge: '1h' }],
      }),
    ];
    const { catalog, problems } = parseCatalog([catalogConfigMap('base', { templates: bad })]);
    expect(catalog.templates.map((t) => t.name)).toEqual(['ok']);
    expect(problems.map((p) => [p.path, p.message])).toEqual([
      [
        'templates[0].outputSchema',
        expect.stringContaining('the root of outputSchema must have type: object'),
      ],
      ['templates[1].outputSchema', expect.stringContaining('not a valid schema')],
      [
        'templates[2].parametersFrom[0].outputs[0]',
        expect.stringContaining('inputSchema has no parameter nope'),
      ],
      ['templates[3].dependencies[0].engine', expect.stringContaining('engine snapshot never runs Upgrade')],
      [
        'templates[4].dependencies[0].maxAge',
        expect.stringContaining('duration "0s" must be greater than zero'),
      ],
    ]);
  });
});
