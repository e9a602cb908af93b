import { describe, expect, it } from 'vitest';
import { decideScheduler, schedulerNeeds } from './schedules.ts';
import {
  aCronOperation,
  aRequest,
  aTarget,
  aWatchOperation,
  causesOf,
  fieldsOf,
  someFacts,
} from './testing.ts';

const T = 'spec.operationTemplate.spec';

describe('CronOperation admission', () => {
  it('admits a valid schedule and asks for the fixed target and the type verb on it', () => {
    const req = aRequest(aCronOperation());
    expect(schedulerNeeds('CronOperation', req)).toEqual({
      target: 'shop',
      access: [{ verb: 'backup', name: 'shop' }],
    });
    expect(decideScheduler('CronOperation', req, someFacts())).toEqual({ uid: 'uid-1', allowed: true });
  });

  it.each([
    ['0 2 * *', 'UTC', 'spec.schedule', 'has 4 fields'],
    ['0 0 2 * * *', 'UTC', 'spec.schedule', 'seconds are not supported'],
    ['@fortnightly', 'UTC', 'spec.schedule', 'supported macros are'],
    ['61 * * * *', 'UTC', 'spec.schedule', 'minute field'],
    ['0 2 * * *', 'Mars/Olympus', 'spec.timeZone', 'unknown time zone'],
    ['0 2 * * *', 'utc', 'spec.timeZone', 'did you mean "UTC"'],
  ])('refuses schedule %j in %j at %s', (schedule, timeZone, field, text) => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation({ schedule, timeZone })),
      someFacts(),
    );
    expect(causesOf(res)).toEqual([{ field, message: expect.stringContaining(text) }]);
  });

  it.each(['@hourly', '@daily', '@weekly', '@monthly', '*/15 9-17 * * 1-5'])('admits %s', (schedule) => {
    expect(
      decideScheduler('CronOperation', aRequest(aCronOperation({ schedule })), someFacts()).allowed,
    ).toBe(true);
  });

  it('checks the embedded Operation: template, parameters, target existence', () => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation({}, { template: 'nope' })),
      someFacts({ target: { ok: true, value: undefined } }),
    );
    expect(fieldsOf(res)).toEqual([`${T}.template`, `${T}.targetRef.name`]);
    const params = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation({}, { parameters: { ttl: 'soon' } })),
      someFacts(),
    );
    expect(fieldsOf(params)).toEqual([`${T}.parameters.ttl`]);
  });

  it('only warns when the fixed target lacks the capability (each run is checked again)', () => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation()),
      someFacts({ target: { ok: true, value: aTarget({ annotations: {} }) } }),
    );
    expect(res.allowed).toBe(true);
    expect(res.warnings?.[0]).toContain('every scheduled Operation will be refused');
  });

  it('refuses a requester without the type verb on the target', () => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation({}, { type: 'Restore', parameters: { backupName: 'b1' } })),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'restore' } }) }),
    );
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual([`${T}.targetRef.name`]);
  });

  it('refuses a missing operationTemplate', () => {
    const cron = aCronOperation();
    const res = decideScheduler(
      'CronOperation',
      aRequest({ ...cron, spec: { schedule: '@daily' } }),
      someFacts(),
    );
    expect(fieldsOf(res)).toEqual(['spec.operationTemplate']);
  });

  it('re-checks on UPDATE only when spec changed', () => {
    const old = aCronOperation({ schedule: 'not a schedule at all' });
    const annotated = {
      ...old,
      metadata: { ...old.metadata, annotations: { 'ops.vworkspace.io/skip-next': 'true' } },
    };
    const req = aRequest(annotated, { operation: 'UPDATE', oldObject: old });
    expect(schedulerNeeds('CronOperation', req)).toEqual({ access: [] });
    expect(decideScheduler('CronOperation', req, someFacts()).allowed).toBe(true);
    const changed = aRequest(aCronOperation({ schedule: '0 2 * *' }), {
      operation: 'UPDATE',
      oldObject: old,
    });
    expect(fieldsOf(decideScheduler('CronOperation', changed, someFacts()))).toEqual(['spec.schedule']);
  });
});

describe('WatchOperation admission', () => {
  it('asks for the type verb on every instance of the namespace', () => {
    expect(schedulerNeeds('WatchOperation', aRequest(aWatchOperation()))).toEqual({
      access: [{ verb: 'backup' }],
    });
  });

  it('admits a valid template without looking up a target', () => {
    const res = decideScheduler('WatchOperation', aRequest(aWatchOperation()), {
      ...someFacts(),
      target: undefined,
    });
    expect(res.allowed).toBe(true);
  });

  it('refuses bad parameters and a missing namespace-wide verb', () => {
    const res = decideScheduler(
      'WatchOperation',
      aRequest(aWatchOperation({ parameters: { quiesce: 'sometimes' } })),
      someFacts({ allow: () => ({ ok: true, value: { allowed: false } }) }),
    );
    expect(res.status?.code).toBe(422);
    expect(fieldsOf(res)).toEqual([`${T}.parameters.quiesce`, `${T}.type`]);
    expect(res.status?.message).toContain('for every ApplicationInstance');
  });
});
