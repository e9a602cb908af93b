// decideCron beyond one slot for one target: run-now requests (ops.vworkspace.io/run-now), fleets
// (spec.targetSelector), maxConcurrent and its queue, and parametersFromTrigger.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  anInstance,
  CronWorld,
  cronOp,
  HOUR,
  MIN,
  slotName,
} from '../../../test/support/builders/schedule.ts';
import { ANNOTATION_RUN_NOW, ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER } from '../api/index.ts';
import { CRON_EVENT, runOperationName } from './cron-decide.ts';

const runNow = (w: CronWorld, value: string) => {
  w.cron.metadata.annotations = { ...w.cron.metadata.annotations, [ANNOTATION_RUN_NOW]: value };
};
const manualName = (value: string) =>
  runOperationName(cronOp(), { reason: 'manual', time: new Date(0), request: value }, 'shop');

describe('decideCron: run-now', () => {
  it('runs the template at once, once per value, marked manual and recorded in status.manualRun', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    w.reconcile();
    runNow(w, '2025-06-01T00:10:05Z');
    const plan = w.reconcile();
    const name = manualName('2025-06-01T00:10:05Z');
    expect(name).toMatch(/^nightly-m[0-9a-f]{7}$/);
    expect(plan.create.map((o) => o.metadata.name)).toEqual([name]);
    expect(plan.create[0]?.metadata.annotations).toEqual({ [ANNOTATION_TRIGGER]: 'manual' });
    expect(plan.create[0]?.spec.targetRef).toEqual({ name: 'shop' });
    expect(plan.events.map((e) => e.note)).toEqual([
      `created Operation ${name} for the run requested by ${ANNOTATION_RUN_NOW}=2025-06-01T00:10:05Z`,
    ]);
    expect(w.cron.status?.manualRun).toEqual({
      request: '2025-06-01T00:10:05Z',
      phase: 'Created',
      time: '2025-06-01T00:10:00Z',
      operation: name,
    });
    // The schedule is untouched: the next slot still runs at 01:00.
    expect(w.cron.status?.lastScheduleTime).toBeUndefined();
    expect(w.reconcile().create).toEqual([]);
    w.clock.advanceSync(50 * MIN);
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([slotName('2025-06-01T01:00:00Z')]);
    // A new value is a new request.
    runNow(w, 'again');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('again')]);
  });

  it('records a value longer than status.manualRun holds as Refused, by its digest, once; nothing runs', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    w.reconcile();
    runNow(w, 'x'.repeat(300));
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: CRON_EVENT.RunNowRefused }),
    ]);
    expect(plan.events[0]?.note).toContain('300 characters long, more than 256');
    expect(w.cron.status?.manualRun).toMatchObject({
      request: `sha256:${createHash('sha256').update('x'.repeat(300)).digest('hex')}`,
      phase: 'Refused',
    });
    expect(w.cron.status?.manualRun?.request.length).toBeLessThanOrEqual(256);
    expect(w.reconcile().events).toEqual([]);
    // A short value afterwards runs as usual.
    runNow(w, 'short');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('short')]);
  });

  it('is idempotent across a restart that lost the status write: the same name is adopted', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    runNow(w, 'r1');
    const first = w.decide();
    w.ops.push(...first.create); // created; the status write is lost
    w.clock.advanceSync(MIN);
    const second = w.reconcile();
    expect(second.create).toEqual([]);
    expect(w.ops.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'r1', phase: 'Created' });
  });

  it('Forbid: a request waits (Pending, in status.queue) while an Operation runs, then runs, never dropped', () => {
    const w = new CronWorld(cronOp({ concurrencyPolicy: 'Forbid' }), '2025-06-01T00:30:00Z');
    w.run(31 * MIN); // 01:00 created, still running
    runNow(w, 'r1');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events.map((e) => e.reason)).toEqual([CRON_EVENT.RunNowPending]);
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'r1', phase: 'Pending' });
    expect(w.cron.status?.queue).toEqual([
      {
        reason: 'manual',
        scheduledTime: '2025-06-01T01:01:00Z',
        request: 'r1',
        targets: ['shop'],
      },
    ]);
    expect(w.reconcile().create).toEqual([]); // still running: still waiting, no second Event
    w.finish(slotName('2025-06-01T01:00:00Z'), 'Succeeded');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'r1', phase: 'Created' });
    expect(w.cron.status?.queue).toBeUndefined();
  });

  it('a waiting request is not lost when the next slot comes: the slot is skipped, the request runs later', () => {
    const w = new CronWorld(cronOp({ concurrencyPolicy: 'Forbid' }), '2025-06-01T00:30:00Z');
    w.run(31 * MIN); // 01:00 runs
    runNow(w, 'r1');
    w.reconcile(); // r1 waits
    w.clock.advanceSync(HOUR); // 02:00 comes while 01:00 still runs: skipped
    expect(w.reconcile().events.map((e) => e.reason)).toEqual([CRON_EVENT.RunSkippedForbidden]);
    expect(w.cron.status?.queue?.map((q) => q.request)).toEqual(['r1']);
    w.finish(slotName('2025-06-01T01:00:00Z'), 'Succeeded');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'r1', phase: 'Created' });
  });

  it('a manual run counts as running: Forbid skips the next slot while it runs', () => {
    const w = new CronWorld(cronOp({ concurrencyPolicy: 'Forbid' }), '2025-06-01T00:30:00Z');
    runNow(w, 'r1');
    w.reconcile();
    w.clock.advanceSync(30 * MIN);
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events.map((e) => e.reason)).toEqual([CRON_EVENT.RunSkippedForbidden]);
  });

  it('Replace cancels the running Operation and runs; Allow runs alongside', () => {
    const replace = new CronWorld(cronOp({ concurrencyPolicy: 'Replace' }), '2025-06-01T00:30:00Z');
    replace.run(31 * MIN);
    runNow(replace, 'r1');
    const plan = replace.reconcile();
    expect(plan.cancel).toEqual([slotName('2025-06-01T01:00:00Z')]);
    expect(plan.create.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
    const allow = new CronWorld(cronOp(), '2025-06-01T00:30:00Z');
    allow.run(31 * MIN);
    runNow(allow, 'r1');
    expect(allow.reconcile()).toMatchObject({
      cancel: [],
      create: [{ metadata: { name: manualName('r1') } }],
    });
  });

  it('runs while suspended (as kubectl create job --from does), while slots stay passed over', () => {
    const w = new CronWorld(cronOp({ suspend: true }), '2025-06-01T00:30:00Z');
    w.run(2 * HOUR);
    runNow(w, 'r1');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
    expect(w.names()).toEqual([manualName('r1')]);
  });

  it('manual runs are history like the others: the oldest finished ones are pruned', () => {
    const w = new CronWorld(cronOp({ successfulHistoryLimit: 1 }), '2025-06-01T00:10:00Z');
    for (const v of ['a', 'b']) {
      runNow(w, v);
      w.reconcile();
      w.finish(manualName(v), 'Succeeded');
      w.clock.advanceSync(MIN);
    }
    expect(w.reconcile().prune).toEqual([manualName('a')]);
  });
});

describe('decideCron: fleets (targetSelector) and maxConcurrent', () => {
  const fleet = (extra: Parameters<typeof cronOp>[0] = {}) =>
    cronOp({
      targetSelector: { matchLabels: { tier: 'prod' } },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      ...extra,
    });
  const world = (extra: Parameters<typeof cronOp>[0] = {}) => {
    const w = new CronWorld(fleet(extra), '2025-06-01T00:30:00Z');
    w.instances = ['a', 'b', 'c'].map((n) => anInstance(n, { tier: 'prod' }));
    w.instances.push(anInstance('dev', { tier: 'dev' }));
    return w;
  };
  const slot = { reason: 'schedule' as const, time: new Date('2025-06-01T01:00:00Z') };
  const nameFor = (w: CronWorld, target: string) => runOperationName(w.cron, slot, target);

  it('creates one Operation per matching instance per slot, named per slot and instance', () => {
    const w = world();
    w.run(31 * MIN);
    expect(w.ops.map((o) => o.spec.targetRef.name)).toEqual(['a', 'b', 'c']);
    expect(w.names()).toEqual(['a', 'b', 'c'].map((t) => nameFor(w, t)));
    expect(nameFor(w, 'a')).toMatch(/^nightly-29145660-[0-9a-f]{6}$/);
    expect(w.ops[0]?.metadata.annotations).toEqual({ [ANNOTATION_SCHEDULED_TIME]: '2025-06-01T01:00:00Z' });
    // A long name is cut to fit the Operation name limit (56), deterministically.
    const long = runOperationName(fleet({}), slot, 'a');
    const cut = runOperationName({ ...fleet(), metadata: { name: 'x'.repeat(47) } }, slot, 'a');
    expect(long.length).toBeLessThanOrEqual(56);
    expect(cut.length).toBeLessThanOrEqual(56);
  });

  it('maxConcurrent: the rest wait in status.queue and start in name order as running ones finish', () => {
    const w = world({ maxConcurrent: 2 });
    w.run(31 * MIN);
    expect(w.ops.map((o) => o.spec.targetRef.name)).toEqual(['a', 'b']);
    expect(w.cron.status?.queue).toEqual([
      {
        reason: 'schedule',
        scheduledTime: '2025-06-01T01:00:00Z',
        targets: ['c'],
      },
    ]);
    expect(w.plans.flatMap((p) => p.events).map((e) => e.reason)).toContain(CRON_EVENT.RunQueued);
    expect(w.reconcile().create).toEqual([]);
    w.finish(nameFor(w, 'b'), 'Failed');
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([nameFor(w, 'c')]);
    expect(w.cron.status?.queue).toBeUndefined();
  });

  it('the next slot replaces the waiting targets of the previous one; an instance that no longer matches is dropped with an Event', () => {
    const w = world({ maxConcurrent: 1 });
    w.run(31 * MIN); // a runs; b, c wait
    w.instances = w.instances.filter((i) => i.metadata.name !== 'c');
    w.clock.advanceSync(HOUR);
    const plan = w.reconcile();
    expect(plan.events.find((e) => e.reason === CRON_EVENT.QueuedRunDropped)?.note).toBe(
      'c left the queue without an Operation: no longer an ApplicationInstance matching spec.targetSelector',
    );
    expect(w.cron.status?.queue).toMatchObject([
      {
        scheduledTime: '2025-06-01T02:00:00Z',
        targets: ['a', 'b'],
      },
    ]);
  });

  it('suspending drops what a slot left waiting, so resuming never runs an old slot', () => {
    const w = world({ maxConcurrent: 1 });
    w.run(31 * MIN);
    w.cron.spec.suspend = true;
    expect(w.reconcile().events.map((e) => e.note)).toEqual([
      'b, c left the queue without an Operation: spec.suspend is true',
    ]);
    w.finish(nameFor(w, 'a'), 'Succeeded');
    w.cron.spec.suspend = false;
    expect(w.reconcile().create).toEqual([]);
  });

  it('Forbid is per instance: a slot skips only the instance whose Operation still runs', () => {
    const w = world({ concurrencyPolicy: 'Forbid' });
    w.run(31 * MIN);
    for (const t of ['a', 'c']) w.finish(nameFor(w, t), 'Succeeded');
    w.clock.advanceSync(HOUR);
    const plan = w.reconcile();
    expect(plan.create.map((o) => o.spec.targetRef.name)).toEqual(['a', 'c']);
    expect(plan.events.find((e) => e.reason === CRON_EVENT.RunSkippedForbidden)?.note).toMatch(
      /skipped on b: /,
    );
    // Not every target was skipped: the slot is not a missed slot.
    expect(w.cron.status?.missedSlots).toBeUndefined();
  });

  it('run-now on a fleet runs every matching instance', () => {
    const w = world();
    runNow(w, 'now');
    expect(w.reconcile().create.map((o) => o.spec.targetRef.name)).toEqual(['a', 'b', 'c']);
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'now', phase: 'Created' });
    expect(w.cron.status?.manualRun?.operation).toBeUndefined();
  });
});

describe('decideCron: parametersFromTrigger', () => {
  it('fills parameters from the slot, the reason and the targeted instance; a missing value is said', () => {
    const cron = cronOp({
      targetSelector: {},
      operationTemplate: {
        spec: { type: 'Upgrade', engine: 'helm', parameters: { version: '1.0.0', keep: true } },
      },
      parametersFromTrigger: [
        { parameter: 'version', from: "object.metadata.labels['upgrade-to']" },
        { parameter: 'note.when', from: 'trigger.scheduledTime' },
        { parameter: 'note.why', from: 'trigger.reason' },
      ],
    });
    const w = new CronWorld(cron, '2025-06-01T00:30:00Z');
    w.instances = [anInstance('a', { 'upgrade-to': '2.1.0' }), anInstance('b')];
    w.run(31 * MIN);
    const plan = w.plans.find((p) => p.create.length > 0)!;
    expect(w.ops.map((o) => [o.spec.targetRef.name, o.spec.parameters])).toEqual([
      ['a', { version: '2.1.0', keep: true, note: { when: '2025-06-01T01:00:00Z', why: 'schedule' } }],
      ['b', { version: '1.0.0', keep: true, note: { when: '2025-06-01T01:00:00Z', why: 'schedule' } }],
    ]);
    expect(plan.events.find((e) => e.reason === CRON_EVENT.TriggerParameterMissing)?.note).toContain(
      "object.metadata.labels['upgrade-to'] has no value for ApplicationInstance b",
    );
    // The template itself is never changed.
    expect(w.cron.spec.operationTemplate.spec.parameters).toEqual({ version: '1.0.0', keep: true });
  });
});

describe('decideCron: a paused target (ops.vworkspace.io/paused: "true")', () => {
  const pause = (w: CronWorld, name: string, on: boolean) => {
    const i = w.instances.find((x) => x.metadata.name === name)!;
    i.metadata.annotations = on ? { 'ops.vworkspace.io/paused': 'true' } : {};
  };

  it('a slot passes it over (recorded, Event) and the next slot after resuming runs', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:30:00Z');
    w.instances = [anInstance('shop')];
    pause(w, 'shop', true);
    w.run(31 * MIN);
    expect(w.ops).toEqual([]);
    expect(w.cron.status?.missedSlots).toEqual([
      { scheduledTime: '2025-06-01T01:00:00Z', detectedAt: '2025-06-01T01:00:00Z', reason: 'TargetPaused' },
    ]);
    expect(w.plans.flatMap((p) => p.events).map((e) => e.reason)).toContain(CRON_EVENT.RunSkippedPaused);
    pause(w, 'shop', false);
    w.run(HOUR);
    expect(w.names()).toEqual([slotName('2025-06-01T02:00:00Z')]);
  });

  it('a run-now request waits until the annotation is removed', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    w.instances = [anInstance('shop')];
    pause(w, 'shop', true);
    runNow(w, 'r1');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events.map((e) => e.note)).toEqual([
      '1 target of the run requested by ops.vworkspace.io/run-now=r1 waits (shop): ops.vworkspace.io/paused is "true" on shop; it runs once the annotation is removed',
    ]);
    expect(w.cron.status?.manualRun?.phase).toBe('Pending');
    pause(w, 'shop', false);
    expect(w.reconcile().create.map((o) => o.metadata.name)).toEqual([manualName('r1')]);
  });

  it('in a fleet only the paused instance is passed over', () => {
    const w = new CronWorld(
      cronOp({ targetSelector: {}, operationTemplate: { spec: { type: 'Backup', engine: 'velero' } } }),
      '2025-06-01T00:30:00Z',
    );
    w.instances = [anInstance('a'), anInstance('b')];
    pause(w, 'b', true);
    w.run(31 * MIN);
    expect(w.ops.map((o) => o.spec.targetRef.name)).toEqual(['a']);
    expect(w.cron.status?.missedSlots).toBeUndefined();
  });
});
