// Property: whatever body arrives (missing, extra, wrong-typed fields, arbitrary JSON), the pure
// admission decisions never throw, and every denial names a field path for each cause.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENGINES, OPERATION_TYPES } from '../api/enums.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { accessKey, type Facts, type Lookup } from './decision.ts';
import { decideOperation, mutateOperation, operationNeeds } from './operation.ts';
import type { AdmissionRequest, AdmissionResponse } from './review.ts';
import { decideScheduler, type SchedulerKind, schedulerNeeds } from './schedules.ts';

const json = fc.jsonValue({ maxDepth: 3 });
/** Mostly-plausible values, sometimes garbage: so the deep checks are reached, not only the shape ones. */
const maybe = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 3, arbitrary: good },
    { weight: 1, arbitrary: json },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
const annotationKeys = fc.constantFrom(
  'ops.vworkspace.io/approve',
  'ops.vworkspace.io/approved-by',
  'ops.vworkspace.io/created-by',
  'x/y',
);
const annotations = maybe(
  fc.dictionary(annotationKeys, fc.oneof(fc.constantFrom('true', 'alice', 'bob', ''), json), { maxKeys: 3 }),
);
const params = maybe(
  fc.dictionary(
    fc.constantFrom('ttl', 'storageLocation', 'quiesce', 'backupName', 'version', 'zz'),
    fc.oneof(fc.constantFrom('1h', 'default', 'exec', '1.2.3'), json),
    { maxKeys: 3 },
  ),
);
const opSpec = maybe(
  fc.record(
    {
      type: maybe(fc.constantFrom(...OPERATION_TYPES)),
      engine: maybe(fc.constantFrom(...ENGINES)),
      targetRef: maybe(fc.record({ name: maybe(fc.constantFrom('shop', 'Bad_Name', '')) })),
      template: maybe(fc.constantFrom('velero-backup', 'helm-upgrade', 'nope')),
      parameters: params,
      policy: maybe(fc.record({ requiresApproval: json })),
      cancel: json,
      extra: json,
    },
    { requiredKeys: [] },
  ),
);
const metadata = maybe(fc.record({ name: json, annotations }, { requiredKeys: [] }));
const operation = maybe(fc.record({ metadata, spec: opSpec }, { requiredKeys: [] }));
const scheduler = maybe(
  fc.record(
    {
      metadata,
      spec: maybe(
        fc.record(
          {
            schedule: maybe(fc.constantFrom('@daily', '0 2 * * *', '* *', '@often', '0 0 31 2 *')),
            timeZone: maybe(fc.constantFrom('UTC', 'Europe/Berlin', 'Nowhere/Land')),
            operationTemplate: maybe(fc.record({ spec: opSpec }, { requiredKeys: [] })),
          },
          { requiredKeys: [] },
        ),
      ),
    },
    { requiredKeys: [] },
  ),
);
const lookup = <T>(value: fc.Arbitrary<T>): fc.Arbitrary<Lookup<T>> =>
  fc.oneof(
    value.map((v) => ({ ok: true as const, value: v })),
    fc.constant({ ok: false as const, message: 'transient' }),
  );
const user = fc.oneof(
  fc.record({
    username: fc.constantFrom('alice', 'bob'),
    groups: fc.constant<string[]>(['system:authenticated']),
  }),
  fc.constant({}),
);
const factsArb = fc.record({
  templates: lookup(fc.constant(BUILTIN_TEMPLATES)),
  target: lookup(
    fc.option(
      fc.record({
        name: fc.constant('shop'),
        annotations: fc.dictionary(
          fc.constantFrom('ops.vworkspace.io/backup', 'ops.vworkspace.io/upgrade'),
          fc.constantFrom('velero', 'helm'),
        ),
      }),
      { nil: undefined },
    ),
  ),
  allowed: lookup(fc.boolean()),
});

function request(
  operationName: 'CREATE' | 'UPDATE' | 'DELETE',
  object: unknown,
  oldObject: unknown,
  userInfo: AdmissionRequest['userInfo'],
): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: 'ops.vworkspace.io', version: 'v1alpha1', kind: 'X' },
    resource: { group: 'ops.vworkspace.io', version: 'v1alpha1', resource: 'x' },
    namespace: 'ns',
    operation: operationName,
    userInfo,
    object,
    ...(operationName === 'UPDATE' ? { oldObject } : {}),
  };
}

function factsFor(
  f: { templates: Facts['templates']; target: Facts['target']; allowed: Lookup<boolean> },
  needs: { access: { verb: string; name?: string }[] },
): Facts {
  const result = f.allowed.ok ? { ok: true as const, value: { allowed: f.allowed.value } } : f.allowed;
  return {
    templates: f.templates,
    ...(f.target ? { target: f.target } : {}),
    access: Object.fromEntries(needs.access.map((c) => [accessKey(c), result])),
  };
}

function expectWellFormed(res: AdmissionResponse): void {
  expect(res.uid).toBe('u');
  if (res.allowed) return;
  const causes = res.status?.details?.causes ?? [];
  expect(causes.length).toBeGreaterThan(0);
  for (const c of causes) {
    expect(c.field).toMatch(/^(spec|metadata)(\.|\[|$)/);
    expect(c.message.length).toBeGreaterThan(0);
  }
}

const verb = fc.constantFrom<'CREATE' | 'UPDATE' | 'DELETE'>(
  'CREATE',
  'UPDATE',
  'UPDATE',
  'CREATE',
  'DELETE',
);

// 10,000 bodies in all: a few seconds alone, far more on a loaded 2-core CI machine, so the time limit
// is generous (this is a correctness test, not a speed test).
describe('admission decisions on random input', { timeout: 120_000 }, () => {
  it('Operation: never throws; every denial names field paths', () => {
    fc.assert(
      fc.property(verb, operation, operation, user, factsArb, (op, obj, old, u, f) => {
        const req = request(op, obj, old, u);
        expectWellFormed(mutateOperation(req));
        expectWellFormed(decideOperation(req, factsFor(f, operationNeeds(req))));
      }),
      { numRuns: 5_000 },
    );
  });

  it('CronOperation / WatchOperation: never throws; every denial names field paths', () => {
    const kind = fc.constantFrom<SchedulerKind>('CronOperation', 'WatchOperation');
    fc.assert(
      fc.property(kind, verb, scheduler, scheduler, user, factsArb, (k, op, obj, old, u, f) => {
        const req = request(op, obj, old, u);
        expectWellFormed(decideScheduler(k, req, factsFor(f, schedulerNeeds(k, req))));
      }),
      { numRuns: 5_000 },
    );
  });
});
