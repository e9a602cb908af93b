import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aTarget,
  causesOf,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import type { AccessCheck } from './decision.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';

const readSecret: AccessCheck = { verb: 'get', resource: 'secrets', name: 'shop-db' };
const drill = (parameters: Record<string, unknown> = {}) => ({
  type: 'Verify',
  engine: 'velero',
  parameters: { command: ['true'], probeSecret: 'shop-db', ...parameters },
});
const aDrill = (extra: Record<string, unknown> = {}) =>
  anOperation({ ...drill(), ...extra }, { [ANNOTATION_CREATED_BY]: 'dave' });
const target = {
  ok: true,
  value: aTarget({ annotations: { 'ops.vworkspace.io/restore': 'velero' } }),
} as const;
/** Everything allowed but reading the Secret (unless `secret`). */
const facts = (secret: boolean) =>
  someFacts({
    target,
    checks: [{ verb: 'restore', name: 'shop' }, { verb: 'list', resource: 'operations' }, readSecret],
    allow: (c) => ({ ok: true, value: { allowed: secret || c.resource !== 'secrets' } }),
  });

describe('spec.parameters.probeSecret of a Verify Operation', () => {
  it('asks the authorizer whether the requester may get that Secret, and nothing without one', () => {
    expect(operationNeeds(aRequest(aDrill(), { user: 'dave' })).access).toContainEqual(readSecret);
    const none = anOperation({ ...drill(), parameters: { command: ['true'] } });
    expect(operationNeeds(aRequest(none)).access.some((c) => c.resource === 'secrets')).toBe(false);
  });

  it('refuses a requester who may not read it with 403 at the parameter, saying what to do', () => {
    const res = decideOperation(aRequest(aDrill(), { user: 'dave' }), facts(false));
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parameters.probeSecret',
        message: expect.stringMatching(
          /user "dave" may not get secrets\/shop-db in namespace team-a; .*name a Secret you may read.*needs RBAC verb "get" on resource secrets \(group core\)/,
        ),
      },
    ]);
  });

  it('admits a requester who may read it', () => {
    expect(decideOperation(aRequest(aDrill(), { user: 'dave' }), facts(true)).allowed).toBe(true);
  });

  it('retries, never admits, when the review could not be made', () => {
    const res = decideOperation(
      aRequest(aDrill(), { user: 'dave' }),
      someFacts({ target, checks: [{ verb: 'restore', name: 'shop' }] }),
    );
    expect(res.status?.code).toBe(503);
    expect(fieldsOf(res)).toEqual(['spec.parameters.probeSecret']);
  });

  it('refuses a probe Secret filled in from another Operation’s outputs, whoever asks', () => {
    const op = anOperation(
      {
        ...drill(),
        parameters: { command: ['true'] },
        parametersFrom: [
          { latest: { type: 'Backup' }, outputs: [{ output: 'backupName', parameter: 'probeSecret' }] },
        ],
      },
      { [ANNOTATION_CREATED_BY]: 'dave' },
    );
    const res = decideOperation(aRequest(op, { user: 'dave' }), facts(true));
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parametersFrom[0].outputs[0].parameter',
        message: expect.stringContaining('set spec.parameters.probeSecret'),
      },
    ]);
  });
});

describe('probeSecret in a CronOperation', () => {
  const cron = (extra: Record<string, unknown> = {}) =>
    aRequest(aCronOperation(extra, { ...drill(), targetRef: { name: 'shop' } }), { user: 'dave' });

  it('is checked for the requester at admission, at the operationTemplate parameter', () => {
    expect(schedulerNeeds('CronOperation', cron()).access).toContainEqual(readSecret);
    const res = decideScheduler('CronOperation', cron(), facts(false));
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['spec.operationTemplate.spec.parameters.probeSecret']);
    expect(decideScheduler('CronOperation', cron(), facts(true)).allowed).toBe(true);
  });

  it('a run-now needs its requester to read the Secret too (the probe’s output is theirs)', () => {
    const cronOp = aCronOperation({}, { ...drill(), targetRef: { name: 'shop' } });
    const asked = {
      ...cronOp,
      metadata: { ...cronOp.metadata, annotations: { 'ops.vworkspace.io/run-now': 't1' } },
    };
    const runNow = aRequest(asked, { operation: 'UPDATE', oldObject: cronOp, user: 'dave' });
    expect(schedulerNeeds('CronOperation', runNow).access).toContainEqual(readSecret);
    const res = decideScheduler('CronOperation', runNow, facts(false));
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['metadata.annotations[ops.vworkspace.io/run-now]']);
    expect(decideScheduler('CronOperation', runNow, facts(true)).allowed).toBe(true);
  });

  it('may not come from the trigger', () => {
    const res = decideScheduler(
      'CronOperation',
      cron({ parametersFromTrigger: [{ parameter: 'probeSecret', from: 'scheduledTime' }] }),
      facts(true),
    );
    expect(fieldsOf(res)).toContain('spec.parametersFromTrigger[0].parameter');
  });
});
