import { describe, expect, it } from 'vitest';
import {
  compileOpenApiSchema,
  formatFieldError,
  formatFieldErrors,
  SchemaError,
  toDraft07,
  toFieldPath,
  validateWithSchema,
} from './schema-validation.ts';

const errorsOf = (schema: Record<string, unknown>, data: unknown) => {
  const r = validateWithSchema(schema, data);
  return r.ok ? [] : r.errors;
};

describe('OpenAPI v3 → draft-07', () => {
  it('turns boolean exclusiveMinimum/exclusiveMaximum into numbers', () => {
    const schema = {
      type: 'integer',
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 10,
      exclusiveMaximum: false,
    };
    expect(toDraft07(schema)).toEqual({ type: 'integer', exclusiveMinimum: 0, maximum: 10 });
    const obj = { type: 'object', properties: { n: schema } };
    expect(validateWithSchema(obj, { n: 0 }).ok).toBe(false);
    expect(validateWithSchema(obj, { n: 1 }).ok).toBe(true);
    expect(validateWithSchema(obj, { n: 10 }).ok).toBe(true);
  });

  it('admits null for a nullable enum, as the API server does', () => {
    const schema = {
      type: 'object',
      properties: { mode: { type: 'string', nullable: true, enum: ['a', 'b'] } },
    };
    expect(validateWithSchema(schema, { mode: null }).ok).toBe(true);
    expect(validateWithSchema(schema, { mode: 'c' }).ok).toBe(false);
  });

  it('only rewrites keywords, never properties that happen to be named like one', () => {
    const schema = {
      type: 'object',
      properties: {
        nullable: { type: 'boolean' },
        exclusiveMinimum: { type: 'boolean' },
        default: { type: 'string' },
      },
    };
    expect(toDraft07(schema)).toEqual(schema);
    expect(validateWithSchema(schema, { nullable: true, exclusiveMinimum: false, default: 'x' }).ok).toBe(
      true,
    );
  });

  it('accepts x-kubernetes-* keywords and treats int-or-string as integer or string', () => {
    const schema = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      'x-kubernetes-validations': [{ rule: 'self.x > 0' }],
      properties: {
        port: { 'x-kubernetes-int-or-string': true },
        list: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
      },
    };
    expect(validateWithSchema(schema, { port: 80 }).ok).toBe(true);
    expect(validateWithSchema(schema, { port: 'http' }).ok).toBe(true);
    expect(validateWithSchema(schema, { port: true }).ok).toBe(false);
  });

  it('knows the Kubernetes formats: int32, int64, byte, date-time, and duration as a Go duration', () => {
    const schema = {
      type: 'object',
      properties: {
        i: { type: 'integer', format: 'int32' },
        l: { type: 'integer', format: 'int64' },
        b: { type: 'string', format: 'byte' },
        t: { type: 'string', format: 'date-time' },
        d: { type: 'string', format: 'duration' },
      },
    };
    expect(
      validateWithSchema(schema, {
        i: 2 ** 31 - 1,
        l: 2 ** 40,
        b: 'aGk=',
        t: '2026-01-01T00:00:00Z',
        d: '1h30m',
      }).ok,
    ).toBe(true);
    const errors = errorsOf(schema, { i: 2 ** 31, b: 'not base64!', t: 'yesterday', d: 'P1D' });
    expect(errors.map((e) => e.field).sort()).toEqual([
      'spec.parameters.b',
      'spec.parameters.d',
      'spec.parameters.i',
      'spec.parameters.t',
    ]);
  });

  it('refuses unknown keywords and formats with a SchemaError (a typo must not validate nothing)', () => {
    expect(() => compileOpenApiSchema({ type: 'object', propertiez: {} })).toThrow(SchemaError);
    expect(() => compileOpenApiSchema({ type: 'string', format: 'no-such-format' })).toThrow(
      /unknown format/,
    );
  });
});

describe('defaults', () => {
  it('applies defaults to a copy and leaves the input alone', () => {
    const schema = { type: 'object', properties: { ttl: { type: 'string', default: '720h' } } };
    const input = {};
    const r = validateWithSchema(schema, input);
    expect(r).toEqual({ ok: true, value: { ttl: '720h' } });
    expect(input).toEqual({});
  });
});

describe('field paths and messages', () => {
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['backupName'],
    properties: {
      backupName: { type: 'string', description: 'Name of the velero.io Backup to restore.' },
      ttl: {
        type: 'string',
        pattern: '^([0-9]+(h|m|s))+$',
        description: 'Retention, as a Go duration such as 720h.',
      },
      command: { type: 'array', items: { type: 'string', minLength: 1 } },
      labels: { type: 'object', additionalProperties: { type: 'integer' } },
      mode: { type: 'string', enum: ['none', 'exec'] },
      storageLocation: { type: 'string' },
    },
  };

  it('converts instance paths into Kubernetes field paths with array indices and odd keys', () => {
    expect(toFieldPath('spec.parameters', '', {})).toBe('spec.parameters');
    expect(toFieldPath('spec.parameters', '/command/0', { command: ['x'] })).toBe(
      'spec.parameters.command[0]',
    );
    expect(toFieldPath('spec.parameters', '/labels/app.kubernetes.io~1name', { labels: {} })).toBe(
      'spec.parameters.labels[app.kubernetes.io/name]',
    );
    expect(toFieldPath('spec.parameters', '/0', { 0: 'object key, not an index' })).toBe(
      'spec.parameters[0]',
    );
  });

  it('says which field is missing and what it is for', () => {
    const [e] = errorsOf(schema, {});
    expect(e).toEqual({
      field: 'spec.parameters.backupName',
      type: 'Required value',
      detail: 'set spec.parameters.backupName: Name of the velero.io Backup to restore',
    });
    expect(formatFieldError(e!)).toBe(
      'spec.parameters.backupName: Required value: set spec.parameters.backupName: Name of the velero.io Backup to restore',
    );
  });

  it('names the element of an array and the value it refused', () => {
    const errors = errorsOf(schema, { backupName: 'b', command: ['ok', ''], ttl: '7d' });
    expect(errors.map(formatFieldError)).toEqual([
      'spec.parameters.ttl: Invalid value: "7d": Retention, as a Go duration such as 720h; must match the regular expression ^([0-9]+(h|m|s))+$',
      'spec.parameters.command[1]: Invalid value: "": must be at least 1 characters long',
    ]);
  });

  it('refuses unknown parameters and suggests the likely one', () => {
    const [e] = errorsOf(schema, { backupName: 'b', stroageLocation: 'x' });
    expect(e!.field).toBe('spec.parameters.stroageLocation');
    expect(e!.type).toBe('Forbidden');
    expect(e!.detail).toContain('did you mean storageLocation?');
    expect(e!.detail).toContain('allowed fields: backupName, command, labels, mode, storageLocation, ttl');
  });

  it('lists the supported values of an enum and types of map values', () => {
    const errors = errorsOf(schema, { backupName: 'b', mode: 'sometimes', labels: { 'a.b': 'x' } });
    expect(errors.map(formatFieldError).sort()).toEqual([
      'spec.parameters.labels[a.b]: Invalid value: "x": must be an integer',
      'spec.parameters.mode: Unsupported value: "sometimes": supported values: "none", "exec"',
    ]);
    expect(formatFieldErrors(errors)).toMatch(/^\[.*, .*\]$/);
  });

  it('points at a bad map key', () => {
    const s = {
      type: 'object',
      propertyNames: { pattern: '^[a-z]+$' },
      additionalProperties: { type: 'string' },
    };
    expect(errorsOf(s, { good: 'x', 'Bad Key': 'y' }).map(formatFieldError)).toEqual([
      'spec.parameters[Bad Key]: Invalid value: "Bad Key": invalid key: must match the regular expression ^[a-z]+$',
    ]);
  });

  it('folds the branch errors of anyOf into one error at its root', () => {
    const s = {
      type: 'object',
      properties: { v: { anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^x' }] } },
    };
    const errors = errorsOf(s, { v: true });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.field).toBe('spec.parameters.v');
  });
});
