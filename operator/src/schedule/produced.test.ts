import { describe, expect, it } from 'vitest';
import { anInstance, cronOp } from '../../../test/support/builders/schedule.ts';
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER } from '../api/annotations.ts';
import type { ApplicationInstance, Operation, WatchOperation } from '../api/index.ts';
import { type CronRun, operationForRun } from './cron-decide.ts';
import { producedMismatch } from './produced.ts';
import { operationForTrigger } from './watch-decide.ts';

const withAnnotations = (i: ApplicationInstance, annotations: Record<string, string>) => ({
  ...i,
  metadata: { ...i.metadata, annotations },
});
const web1 = withAnnotations(anInstance('web-1', { tier: 'web' }), { 'example.com/version': '1.0.0' });
const web2 = withAnnotations(anInstance('web-2', { tier: 'web' }), { 'example.com/version': '2.0.0' });
const db = anInstance('db', { tier: 'db' });

const SUBS = [
  { parameter: 'version', from: "object.metadata.annotations['example.com/version']" },
  { parameter: 'why.reason', from: 'trigger.reason' },
  { parameter: 'why.request', from: 'trigger.request' },
  { parameter: 'at', from: 'trigger.scheduledTime' },
];
const fleet = cronOp({
  targetSelector: { matchLabels: { tier: 'web' } },
  parametersFromTrigger: SUBS,
  operationTemplate: { spec: { type: 'Backup', engine: 'velero', parameters: { ttl: '24h' } } },
});
const single = cronOp({ parametersFromTrigger: SUBS });
const slot: CronRun = { reason: 'schedule', time: new Date('2025-06-01T02:00:00Z') };
const manual: CronRun = { reason: 'manual', time: new Date('2025-06-01T02:03:04Z'), request: 'go-1' };

const cronScheduler = (object = fleet) => ({ kind: 'CronOperation' as const, object });
const withParameters = (op: Operation, parameters: Record<string, unknown>): Operation => ({
  ...op,
  spec: { ...op.spec, parameters: { ...op.spec.parameters, ...parameters } },
});

describe('producedMismatch: what a CronOperation produces', () => {
  it('admits every Operation the controller makes: slots and run-now requests, fleet and one target', () => {
    for (const run of [slot, manual]) {
      for (const target of [web1, web2]) {
        const { op } = operationForRun(fleet, run, target.metadata.name ?? '', target);
        expect(producedMismatch(cronScheduler(), op, target)).toBeUndefined();
      }
      const shop = withAnnotations(anInstance('shop'), { 'example.com/version': '3' });
      const { op } = operationForRun(single, run, 'shop', shop);
      expect(producedMismatch(cronScheduler(single), op, shop)).toBeUndefined();
    }
  });

  it('refuses a target the selector does not pick now, or another than the fixed one', () => {
    const { op } = operationForRun(fleet, slot, 'db', db);
    expect(producedMismatch(cronScheduler(), op, db)).toMatchObject({
      field: 'spec.targetRef.name',
      message: expect.stringContaining('does not match spec.targetSelector'),
    });
    const { op: other } = operationForRun(single, slot, 'shop', anInstance('shop'));
    const moved = { ...other, spec: { ...other.spec, targetRef: { name: 'web-1' } } };
    expect(producedMismatch(cronScheduler(single), moved, web1)?.field).toBe('spec.targetRef.name');
  });

  it('refuses a substituted value the target does not carry now, naming the parameter', () => {
    const { op } = operationForRun(fleet, slot, 'web-1', web1);
    const m = producedMismatch(cronScheduler(), withParameters(op, { version: '6.6.6' }), web1);
    expect(m).toEqual({
      field: 'spec.parameters.version',
      message: 'CronOperation nightly produces "1.0.0" here for ApplicationInstance web-1, not "6.6.6"',
    });
    expect(
      producedMismatch(cronScheduler(), withParameters(op, { why: { reason: 'manual' } }), web1)?.field,
    ).toBe('spec.parameters.why.reason');
  });

  it('refuses anything the template does not write: another field, a parameter of its own', () => {
    const { op } = operationForRun(fleet, slot, 'web-1', web1);
    expect(
      producedMismatch(cronScheduler(), { ...op, spec: { ...op.spec, template: 'x' } }, web1)?.field,
    ).toBe('spec.template');
    expect(producedMismatch(cronScheduler(), withParameters(op, { extra: true }), web1)?.field).toBe(
      'spec.parameters.extra',
    );
  });

  it('binds a run-now value to the name it was hashed into, and times to their form', () => {
    const { op } = operationForRun(fleet, manual, 'web-1', web1);
    expect(
      producedMismatch(
        cronScheduler(),
        withParameters(op, { why: { reason: 'manual', request: 'go-2' } }),
        web1,
      ),
    ).toMatchObject({ field: 'spec.parameters.why.request' });
    expect(producedMismatch(cronScheduler(), withParameters(op, { at: 'yesterday' }), web1)).toMatchObject({
      field: 'spec.parameters.at',
      message: expect.stringContaining('RFC 3339'),
    });
    // A slot's time is its annotation's.
    const { op: scheduled } = operationForRun(fleet, slot, 'web-1', web1);
    expect(
      producedMismatch(cronScheduler(), withParameters(scheduled, { at: '2025-06-01T03:00:00Z' }), web1)
        ?.field,
    ).toBe('spec.parameters.at');
  });

  it('needs the annotation that says which run it is', () => {
    const { op } = operationForRun(fleet, slot, 'web-1', web1);
    const bare = { ...op, metadata: { ...op.metadata, annotations: {} } };
    expect(producedMismatch(cronScheduler(), bare, web1)?.field).toBe(
      `metadata.annotations[${ANNOTATION_SCHEDULED_TIME}]`,
    );
  });
});

describe('producedMismatch: what a WatchOperation produces', () => {
  const watch: WatchOperation = {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'WatchOperation',
    metadata: { name: 'on-chart', namespace: 'team', uid: 'w-uid' },
    spec: {
      selector: { matchLabels: { tier: 'web' } },
      triggers: { fieldPaths: ["metadata.annotations['example.com/version']"] },
      parametersFromTrigger: [
        { parameter: 'version', from: "object.metadata.annotations['example.com/version']" },
        { parameter: 'reason', from: 'trigger.reason' },
        { parameter: 'at', from: 'trigger.time' },
      ],
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
    },
  };
  const scheduler = { kind: 'WatchOperation' as const, object: watch };
  const trigger = "field:metadata.annotations['example.com/version']";

  it('admits the Operation a trigger makes, with the changed instance as target', () => {
    const { op } = operationForTrigger(watch, web2, trigger, 'h', undefined, '2025-06-01T00:00:00Z');
    expect(producedMismatch(scheduler, op, web2)).toBeUndefined();
  });

  it('refuses another instance, another trigger reason, a forged value', () => {
    const { op } = operationForTrigger(watch, web2, trigger, 'h', undefined, '2025-06-01T00:00:00Z');
    expect(
      producedMismatch(scheduler, { ...op, spec: { ...op.spec, targetRef: { name: 'db' } } }, db)?.field,
    ).toBe('spec.targetRef.name');
    const relabelled = {
      ...op,
      metadata: { ...op.metadata, annotations: { [ANNOTATION_TRIGGER]: 'label:other' } },
    };
    expect(producedMismatch(scheduler, relabelled, web2)?.field).toBe('spec.parameters.reason');
    expect(producedMismatch(scheduler, withParameters(op, { version: '9' }), web2)?.field).toBe(
      'spec.parameters.version',
    );
    const untriggered = { ...op, metadata: { ...op.metadata, annotations: {} } };
    expect(producedMismatch(scheduler, untriggered, web2)?.field).toBe(
      `metadata.annotations[${ANNOTATION_TRIGGER}]`,
    );
  });
});
