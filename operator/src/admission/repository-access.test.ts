// A restore drill's repository Secrets need the requester's get (repository-access.ts), for an Operation
// and for a CronOperation's template alike.
import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aTarget,
  causesOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_CREATED_BY } from '../api/annotations.ts';
import type { AccessCheck } from './decision.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { repositorySecrets } from './repository-access.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';

const drill = (repository: unknown) => ({
  type: 'Verify',
  engine: 'volsync',
  parameters: { repository, command: ['true'] },
});
const target = aTarget({ annotations: { 'ops.vworkspace.io/restore': 'volsync' } });
const secretCheck = (name: string): AccessCheck => ({ verb: 'get', resource: 'secrets', name });
/** Everything allowed but get on `denied`. */
const facts = (denied: string[], checks: AccessCheck[]) =>
  someFacts({
    target: { ok: true, value: target },
    checks: [{ verb: 'restore', name: 'shop' }, ...checks],
    allow: (c) => ({
      ok: true,
      value: { allowed: !(c.resource === 'secrets' && denied.includes(c.name ?? '')) },
    }),
  });

describe('a drill needs get on its repository Secrets', () => {
  it('names each Secret once, from a name or a claim map', () => {
    expect(repositorySecrets('restic-db')).toEqual(['restic-db']);
    expect(repositorySecrets({ b: 'restic-b', a: 'restic-a', c: 'restic-a' })).toEqual([
      'restic-a',
      'restic-b',
    ]);
    expect(repositorySecrets(undefined)).toEqual([]);
  });

  it('asks for get on each repository Secret of a volsync Verify, Backup or Restore', () => {
    const op = anOperation(drill({ 'data-0': 'restic-a', 'wal-0': 'restic-b' }), {
      [ANNOTATION_CREATED_BY]: 'alice',
    });
    const needs = operationNeeds(aRequest(op), someFacts());
    expect(needs.access).toEqual(expect.arrayContaining([secretCheck('restic-a'), secretCheck('restic-b')]));
    const backup = anOperation(
      { engine: 'volsync', parameters: { repository: 'restic-a' } },
      { [ANNOTATION_CREATED_BY]: 'alice' },
    );
    expect(operationNeeds(aRequest(backup), someFacts()).access).toContainEqual(secretCheck('restic-a'));
  });

  it('denies at the field naming a Secret the requester may not read, and admits one they may', () => {
    const op = anOperation(drill({ 'data-0': 'restic-a', 'wal-0': 'restic-payroll' }), {
      [ANNOTATION_CREATED_BY]: 'alice',
    });
    const checks = [secretCheck('restic-a'), secretCheck('restic-payroll')];
    const res = decideOperation(aRequest(op), facts(['restic-payroll'], checks));
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parameters.repository[wal-0]',
        message: expect.stringContaining('may not get secrets/restic-payroll in namespace'),
      },
    ]);
    expect(decideOperation(aRequest(op), facts([], checks)).allowed).toBe(true);
  });

  it("checks a CronOperation's drill when it is created", () => {
    const cron = aCronOperation({}, drill('restic-payroll'));
    const needs = schedulerNeeds('CronOperation', aRequest(cron), someFacts());
    expect(needs.access).toContainEqual(secretCheck('restic-payroll'));
    const res = decideScheduler(
      'CronOperation',
      aRequest(cron),
      facts(['restic-payroll'], [secretCheck('restic-payroll')]),
    );
    expect(causesOf(res).map((c) => c.field)).toEqual(['spec.operationTemplate.spec.parameters.repository']);
  });
});
