import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  aRequest,
  aTarget,
  aWatchOperation,
  causesOf,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';

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
      metadata: { ...old.metadata, labels: { team: 'a' }, annotations: { 'example.com/note': 'x' } },
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

describe('run-now (ops.vworkspace.io/run-now on a CronOperation)', () => {
  const RUN_NOW = 'ops.vworkspace.io/run-now';
  const withRunNow = (value: string, spec: Record<string, unknown> = {}) => {
    const c = aCronOperation(spec);
    return { ...c, metadata: { ...c.metadata, annotations: { [RUN_NOW]: value } } };
  };
  const update = (value: string, oldValue?: string, spec: Record<string, unknown> = {}) =>
    aRequest(withRunNow(value, spec), {
      operation: 'UPDATE',
      oldObject: oldValue === undefined ? aCronOperation(spec) : withRunNow(oldValue, spec),
    });

  it('needs the type verb on the target, as creating that Operation would', () => {
    expect(schedulerNeeds('CronOperation', update('t1'))).toEqual({
      access: [{ verb: 'backup', name: 'shop' }],
    });
    expect(decideScheduler('CronOperation', update('t1'), someFacts()).allowed).toBe(true);
    const denied = decideScheduler(
      'CronOperation',
      update('t1'),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'backup' } }) }),
    );
    expect(denied.status?.code).toBe(403);
    expect(causesOf(denied)).toEqual([
      {
        field: `metadata.annotations[${RUN_NOW}]`,
        message: expect.stringContaining('runs the template now'),
      },
    ]);
  });

  it('a fleet needs the verb on every instance; an unchanged or removed value needs nothing', () => {
    const fleet = { targetSelector: {}, operationTemplate: { spec: { type: 'Backup', engine: 'velero' } } };
    expect(schedulerNeeds('CronOperation', update('t1', undefined, fleet))).toEqual({
      access: [{ verb: 'backup' }],
    });
    expect(schedulerNeeds('CronOperation', update('t1', 't1'))).toEqual({ access: [] });
    const removed = aRequest(aCronOperation(), { operation: 'UPDATE', oldObject: withRunNow('t1') });
    expect(schedulerNeeds('CronOperation', removed)).toEqual({ access: [] });
    expect(decideScheduler('CronOperation', removed, someFacts({ checks: [] })).allowed).toBe(true);
  });

  it('refuses a value longer than status.manualRun can record, at its annotation, on update and create', () => {
    const long = 'x'.repeat(257);
    const res = decideScheduler('CronOperation', update(long), someFacts());
    expect(res.status?.code).toBe(422);
    expect(causesOf(res)).toEqual([
      { field: `metadata.annotations[${RUN_NOW}]`, message: expect.stringContaining('(got 257)') },
    ]);
    expect(fieldsOf(decideScheduler('CronOperation', aRequest(withRunNow(long)), someFacts()))).toEqual([
      `metadata.annotations[${RUN_NOW}]`,
    ]);
    expect(decideScheduler('CronOperation', update('x'.repeat(256)), someFacts()).allowed).toBe(true);
  });
});

describe('skip-next (ops.vworkspace.io/skip-next on a CronOperation)', () => {
  const SKIP = 'ops.vworkspace.io/skip-next';
  const withSkip = (value?: string) => {
    const c = aCronOperation();
    return value === undefined ? c : { ...c, metadata: { ...c.metadata, annotations: { [SKIP]: value } } };
  };
  const update = (value?: string, oldValue?: string) =>
    aRequest(withSkip(value), { operation: 'UPDATE', oldObject: withSkip(oldValue) });

  it('skipping a run needs the type verb on the target, as editing the schedule does', () => {
    expect(schedulerNeeds('CronOperation', update('true'))).toEqual({
      access: [{ verb: 'backup', name: 'shop' }],
    });
    const denied = decideScheduler(
      'CronOperation',
      update('true'),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'backup' } }) }),
    );
    expect(denied.status?.code).toBe(403);
    expect(causesOf(denied)).toEqual([
      {
        field: `metadata.annotations[${SKIP}]`,
        message: expect.stringContaining("skips the schedule's next run"),
      },
    ]);
    expect(decideScheduler('CronOperation', update('true'), someFacts()).allowed).toBe(true);
  });

  it('keeping it, or removing it (the run happens as scheduled), needs nothing', () => {
    expect(schedulerNeeds('CronOperation', update('true', 'true'))).toEqual({ access: [] });
    expect(schedulerNeeds('CronOperation', update(undefined, 'true'))).toEqual({ access: [] });
    expect(schedulerNeeds('CronOperation', update('false'))).toEqual({ access: [] });
  });
});

describe('fleet CronOperations (spec.targetSelector)', () => {
  const fleet = (opSpec: Record<string, unknown> = {}) => ({
    targetSelector: { matchLabels: { tier: 'prod' } },
    operationTemplate: { spec: { type: 'Backup', engine: 'velero', ...opSpec } },
  });

  it('need the verb on every instance of the namespace and no target lookup', () => {
    const req = aRequest(aCronOperation(fleet()));
    expect(schedulerNeeds('CronOperation', req)).toEqual({ access: [{ verb: 'backup' }] });
    expect(decideScheduler('CronOperation', req, { ...someFacts(), target: undefined }).allowed).toBe(true);
    const denied = decideScheduler(
      'CronOperation',
      req,
      someFacts({ allow: () => ({ ok: true, value: { allowed: false } }) }),
    );
    expect(fieldsOf(denied)).toEqual([`${T}.type`]);
    expect(denied.status?.message).toContain('on any matching ApplicationInstance');
  });

  it('refuse a targetRef next to the selector', () => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(aCronOperation(fleet({ targetRef: { name: 'shop' } }))),
      someFacts(),
    );
    expect(fieldsOf(res)).toEqual([`${T}.targetRef`]);
  });
});

describe('spec.rollout', () => {
  const withRollout = (rollout: unknown, selector = true) => {
    const c = aCronOperation({}, { targetRef: undefined });
    return {
      ...c,
      spec: {
        ...c.spec,
        ...(selector ? { targetSelector: { matchLabels: { tier: 'prod' } } } : {}),
        rollout,
      },
    };
  };

  it('admits waves, a budget and a pause', () => {
    const req = aRequest(
      withRollout({ waves: [1, '10%', '100%'], failureBudget: '10%', pauseBetweenWaves: '10m' }),
    );
    expect(decideScheduler('CronOperation', req, someFacts()).allowed).toBe(true);
  });

  it('denies each problem at its field', () => {
    const res = decideScheduler(
      'CronOperation',
      aRequest(withRollout({ waves: [2, 1, '0%'], failureBudget: -1, pauseBetweenWaves: 'soon' })),
      someFacts(),
    );
    expect(res.status?.code).toBe(422);
    expect(causesOf(res)).toEqual([
      { field: 'spec.rollout.waves[1]', message: expect.stringContaining('waves are cumulative') },
      { field: 'spec.rollout.waves[2]', message: expect.stringContaining('from 1% to 100%') },
      { field: 'spec.rollout.failureBudget', message: expect.stringContaining('0 or more') },
      { field: 'spec.rollout.pauseBetweenWaves', message: expect.any(String) },
    ]);
  });

  it('denies a rollout without spec.targetSelector, and one of the wrong shape', () => {
    const one = aCronOperation();
    const fixed = { ...one, spec: { ...one.spec, rollout: { waves: [1] } } };
    expect(fieldsOf(decideScheduler('CronOperation', aRequest(fixed), someFacts()))).toEqual([
      'spec.rollout',
    ]);
    const shape = decideScheduler('CronOperation', aRequest(withRollout({ waves: 'all' })), someFacts());
    expect(causesOf(shape)).toEqual([
      { field: 'spec.rollout', message: expect.stringContaining('set waves') },
    ]);
  });
});

describe('resume and abandon (ops.vworkspace.io/resume, /abandon on a CronOperation)', () => {
  const fleet = (annotations: Record<string, string> = {}) => {
    const c = aCronOperation({}, { targetRef: undefined });
    return {
      ...c,
      metadata: { ...c.metadata, annotations },
      spec: { ...c.spec, targetSelector: { matchLabels: { tier: 'prod' } }, rollout: { waves: [1] } },
    };
  };
  const update = (key: string, value: string, old?: string) =>
    aRequest(fleet({ [key]: value }), {
      operation: 'UPDATE',
      oldObject: fleet(old === undefined ? {} : { [key]: old }),
    });

  it.each([
    ['ops.vworkspace.io/resume', 'starts the remaining waves'],
    ['ops.vworkspace.io/abandon', 'ends the fleet run'],
  ])('a new %s value needs the type verb on every instance, as running the fleet does', (key, why) => {
    expect(schedulerNeeds('CronOperation', update(key, 't1'))).toEqual({ access: [{ verb: 'backup' }] });
    const denied = decideScheduler(
      'CronOperation',
      update(key, 't1'),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'backup' } }) }),
    );
    expect(denied.status?.code).toBe(403);
    expect(causesOf(denied)).toEqual([
      { field: `metadata.annotations[${key}]`, message: expect.stringContaining(why) },
    ]);
    expect(decideScheduler('CronOperation', update(key, 't1'), someFacts()).allowed).toBe(true);
    expect(schedulerNeeds('CronOperation', update(key, 't1', 't1'))).toEqual({ access: [] });
  });
});

describe('a WatchOperation with spec.rollout (ADR 0056)', () => {
  const watch = (rollout: unknown, annotations: Record<string, string> = {}) => {
    const w = aWatchOperation();
    return { ...w, metadata: { ...w.metadata, annotations }, spec: { ...w.spec, rollout } };
  };

  it('admits a strategy without a targetSelector, and denies each problem at its field', () => {
    const ok = decideScheduler('WatchOperation', aRequest(watch({ waves: [1, '100%'] })), someFacts());
    expect(ok.allowed).toBe(true);
    const bad = decideScheduler('WatchOperation', aRequest(watch({ waves: [2, 1] })), someFacts());
    expect(causesOf(bad)).toEqual([
      { field: 'spec.rollout.waves[1]', message: expect.stringContaining('waves are cumulative') },
    ]);
  });

  it.each([
    ['ops.vworkspace.io/resume', 'starts the remaining waves'],
    ['ops.vworkspace.io/abandon', 'ends the fleet run'],
  ])('a new %s value needs the type verb on any instance, as creating it does', (key, why) => {
    const update = (value: string, old?: string) =>
      aRequest(watch({ waves: [1] }, { [key]: value }), {
        operation: 'UPDATE',
        oldObject: watch({ waves: [1] }, old === undefined ? {} : { [key]: old }),
      });
    expect(schedulerNeeds('WatchOperation', update('t1'))).toEqual({ access: [{ verb: 'backup' }] });
    const denied = decideScheduler(
      'WatchOperation',
      update('t1'),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'backup' } }) }),
    );
    expect(denied.status?.code).toBe(403);
    expect(causesOf(denied)).toEqual([
      { field: `metadata.annotations[${key}]`, message: expect.stringContaining(why) },
    ]);
    expect(schedulerNeeds('WatchOperation', update('t1', 't1'))).toEqual({ access: [] });
  });
});

describe('spec.parametersFromTrigger', () => {
  const watch = (subs: unknown, parameters: Record<string, unknown> = {}) => {
    const w = aWatchOperation({ type: 'Upgrade', engine: 'helm', parameters });
    return { ...w, spec: { ...w.spec, parametersFromTrigger: subs } };
  };
  const decide = (kind: 'CronOperation' | 'WatchOperation', obj: unknown) =>
    decideScheduler(kind, aRequest(obj), someFacts());

  it('admits the label value as a required parameter the template does not write', () => {
    const res = decide(
      'WatchOperation',
      watch([{ parameter: 'version', from: "object.metadata.labels['upgrade.example.com/to']" }]),
    );
    expect(res).toEqual({ uid: 'uid-1', allowed: true });
    // Without the substitution the same template lacks its required version.
    expect(fieldsOf(decide('WatchOperation', watch(undefined)))).toEqual([`${T}.parameters.version`]);
  });

  it.each([
    [
      'trigger.scheduledTime',
      'unknown variable "trigger.scheduledTime": a WatchOperation provides trigger.reason, trigger.time and object.<path>',
    ],
    ['labels.x', 'unknown variable "labels.x"'],
    [
      'object.spec.appRef.chart.verison',
      'ApplicationInstance has no field spec.appRef.chart.verison (fields of spec.appRef.chart: sourceType, url, name, version)',
    ],
    ['object.status.release.chartVersion', 'status is not available'],
    ['object.metadata.uid', 'is not a field path'],
  ])('refuses from %j at its field path', (from, text) => {
    const res = decide('WatchOperation', watch([{ parameter: 'version', from }]));
    expect(causesOf(res)).toContainEqual({
      field: 'spec.parametersFromTrigger[0].from',
      message: expect.stringContaining(text),
    });
  });

  it('refuses a parameter the template does not declare, naming those it does', () => {
    const res = decide(
      'WatchOperation',
      watch([{ parameter: 'verison', from: 'trigger.reason' }], { version: '1.0.0' }),
    );
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parametersFromTrigger[0].parameter',
        message: expect.stringContaining(
          'template helm-upgrade declares no parameter verison (it declares version, timeout, values, serviceAccountName)',
        ),
      },
    ]);
  });

  it('a CronOperation provides trigger.scheduledTime, trigger.reason and trigger.request, not trigger.time', () => {
    const cron = (from: string) => aCronOperation({ parametersFromTrigger: [{ parameter: 'ttl', from }] });
    expect(decide('CronOperation', cron('trigger.scheduledTime')).allowed).toBe(true);
    expect(fieldsOf(decide('CronOperation', cron('trigger.time')))).toEqual([
      'spec.parametersFromTrigger[0].from',
    ]);
  });
});
