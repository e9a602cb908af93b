import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aSource,
  aTarget,
  causesOf,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import type { AccessCheck } from './decision.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';

const restoreTarget = {
  ok: true,
  value: aTarget({ annotations: { 'ops.vworkspace.io/restore': 'velero' } }),
} as const;
const restore = (spec: Record<string, unknown> = {}) =>
  aRequest(anOperation({ type: 'Restore', engine: 'velero', ...spec }, { [ANNOTATION_CREATED_BY]: 'alice' }));
const fromRef = (name: string, outputs: unknown = [{ output: 'backupName' }]) => ({
  parametersFrom: [{ operationRef: { name }, outputs }],
});
const denyOperations = (c: AccessCheck) =>
  ({ ok: true, value: { allowed: c.resource !== 'operations', reason: 'no RBAC rule' } }) as const;
const templates = { templates: someFacts().templates };

describe('Restore without backupName (velero-restore parametersFrom default)', () => {
  it('is admitted when the requester may list operations: the reconciler reads the latest backup', () => {
    const req = restore();
    expect(operationNeeds(req, templates).access).toContainEqual({ verb: 'list', resource: 'operations' });
    const res = decideOperation(req, someFacts({ target: restoreTarget }));
    expect(causesOf(res)).toEqual([]);
    expect(res.allowed).toBe(true);
  });

  it('is forbidden at spec.parameters when RBAC does not let the requester list operations', () => {
    const res = decideOperation(restore(), someFacts({ target: restoreTarget, allow: denyOperations }));
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parameters',
        message: expect.stringMatching(
          /may not list operations\.ops\.vworkspace\.io in namespace team-a; leaving spec\.parameters\.backupName unset .*set it explicitly/,
        ),
      },
    ]);
  });

  it('needs no operations access when backupName is set', () => {
    const req = restore({ parameters: { backupName: 'b1-abcde' } });
    expect(operationNeeds(req, templates).access).toEqual([{ verb: 'restore', name: 'shop' }]);
  });

  it('a CronOperation restoring the latest backup needs list operations from its creator too', () => {
    const cron = aRequest(aCronOperation({}, { type: 'Restore', engine: 'velero' }));
    expect(schedulerNeeds('CronOperation', cron, templates).access).toContainEqual({
      verb: 'list',
      resource: 'operations',
    });
    const res = decideScheduler(
      'CronOperation',
      cron,
      someFacts({ target: restoreTarget, allow: denyOperations }),
    );
    expect(fieldsOf(res)).toEqual(['spec.operationTemplate.spec.parameters']);
    expect(res.status?.code).toBe(403);
  });
});

describe('spec.parametersFrom operationRef', () => {
  it('reads the named Operation and asks for get on it', () => {
    const req = restore(fromRef('b1'));
    const needs = operationNeeds(req, templates);
    expect(needs.operations).toEqual(['b1']);
    expect(needs.access).toContainEqual({ verb: 'get', resource: 'operations', name: 'b1' });
    expect(needs.access).not.toContainEqual({ verb: 'list', resource: 'operations' });
    const res = decideOperation(req, someFacts({ target: restoreTarget, sources: { b1: aSource() } }));
    expect(causesOf(res)).toEqual([]);
  });

  it('admits a source still running whose template declares the output', () => {
    const res = decideOperation(
      restore(fromRef('b1')),
      someFacts({ target: restoreTarget, sources: { b1: aSource({ phase: 'Running', outputs: {} }) } }),
    );
    expect(causesOf(res)).toEqual([]);
  });

  it('refuses a missing, failed or dry-run source and an output it does not have', () => {
    const field = 'spec.parametersFrom[0].operationRef.name';
    const cases = [
      [undefined, /Not found: Operation b1 does not exist/],
      [aSource({ phase: 'Failed' }), /ended Failed and has no outputs/],
      [aSource({ dryRun: true }), /was a dry run/],
    ] as const;
    for (const [src, message] of cases) {
      const res = decideOperation(
        restore(fromRef('b1')),
        someFacts({ target: restoreTarget, sources: { b1: src } }),
      );
      expect(causesOf(res)).toEqual([{ field, message: expect.stringMatching(message) }]);
    }
    const undeclared = decideOperation(
      restore(fromRef('b1', [{ output: 'jobName', parameter: 'backupName' }])),
      someFacts({ target: restoreTarget, sources: { b1: aSource() } }),
    );
    expect(causesOf(undeclared)).toEqual([
      {
        field: 'spec.parametersFrom[0].outputs[0].output',
        message: expect.stringContaining('never has output jobName; velero-backup declares backupName'),
      },
    ]);
  });

  it('tells a requester who may not get the source nothing of it: the same causes whether it exists', () => {
    const causes = (sources: Record<string, ReturnType<typeof aSource> | undefined>) =>
      causesOf(
        decideOperation(
          restore(fromRef('b1')),
          someFacts({ target: restoreTarget, sources, allow: denyOperations }),
        ),
      );
    const missing = causes({ b1: undefined });
    expect(missing).toEqual(causes({ b1: aSource({ phase: 'Failed', outputs: {} }) }));
    expect(missing).toEqual(causes({ b1: aSource() }));
    expect(JSON.stringify(missing)).not.toMatch(/does not exist|ended|has no output/);
  });

  it('is forbidden when RBAC does not let the requester get the source', () => {
    const res = decideOperation(
      restore(fromRef('b1')),
      someFacts({ target: restoreTarget, sources: { b1: aSource() }, allow: denyOperations }),
    );
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parametersFrom[0].operationRef.name',
        message: expect.stringContaining(
          'may not get operations.ops.vworkspace.io/b1 in namespace team-a; reading the outputs of Operation b1',
        ),
      },
    ]);
  });

  it('refuses another namespace, both sources, and parameters set twice or unknown', () => {
    const res = decideOperation(
      restore({
        parameters: { backupName: 'x' },
        parametersFrom: [
          { operationRef: { name: 'b1', namespace: 'other' }, outputs: [{ output: 'backupName' }] },
          { operationRef: { name: 'b1' }, latest: { type: 'Backup' }, outputs: [{ output: 'backupName' }] },
        ],
      }),
      someFacts({ target: restoreTarget, sources: { b1: aSource() } }),
    );
    expect(fieldsOf(res).sort()).toEqual([
      'spec.parametersFrom[0].operationRef.namespace',
      'spec.parametersFrom[1]',
    ]);
    const twice = decideOperation(
      restore({
        parameters: { backupName: 'x' },
        parametersFrom: [
          {
            operationRef: { name: 'b1' },
            outputs: [{ output: 'backupName' }, { output: 'backupName', parameter: 'nope' }],
          },
        ],
      }),
      someFacts({ target: restoreTarget, sources: { b1: aSource() } }),
    );
    expect(causesOf(twice)).toEqual([
      { field: 'spec.parametersFrom[0].outputs[0].output', message: expect.stringContaining('is set too') },
      {
        field: 'spec.parametersFrom[0].outputs[1].parameter',
        message: expect.stringContaining('has no parameter nope'),
      },
    ]);
  });
});

describe('spec.parametersFrom latest', () => {
  it('checks that some template of the type declares the output', () => {
    const latest = (outputs: unknown) =>
      restore({ parametersFrom: [{ latest: { type: 'Backup', engine: 'velero' }, outputs }] });
    expect(
      causesOf(decideOperation(latest([{ output: 'backupName' }]), someFacts({ target: restoreTarget }))),
    ).toEqual([]);
    const bad = decideOperation(
      latest([{ output: 'snapshotNames', parameter: 'backupName' }]),
      someFacts({ target: restoreTarget }),
    );
    expect(fieldsOf(bad)).toEqual(['spec.parametersFrom[0].outputs[0].output']);
    const engine = decideOperation(
      restore({
        parametersFrom: [
          { latest: { type: 'Restore', engine: 'helm' }, outputs: [{ output: 'backupName' }] },
        ],
      }),
      someFacts({ target: restoreTarget }),
    );
    expect(causesOf(engine)).toEqual([
      {
        field: 'spec.parametersFrom[0].latest.engine',
        message: 'engine helm never runs Restore: no such Operation can exist',
      },
    ]);
  });
});
