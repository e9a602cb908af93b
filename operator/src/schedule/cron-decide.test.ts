import { describe, expect, it } from 'vitest';
import { CronWorld, cronOp, HOUR, MIN, slotName } from '../../../test/support/builders/schedule.ts';
import {
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  LABEL_CRON_OPERATION,
} from '../api/index.ts';
import { CRON_EVENT, operationForSlot } from './cron-decide.ts';
import { MAX_MISSED_SLOTS } from './run-plan.ts';

const at = (iso: string) => new Date(iso);

describe('decideCron: creating Operations', () => {
  it('creates nothing before the first slot, and requeues exactly for it', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.requeueAfterMs).toBe(50 * MIN);
    expect(w.cron.status?.nextScheduleTime).toBe('2025-06-01T01:00:00Z');
    expect(w.cron.status?.nextRuns?.map((r) => r.utc)).toEqual([
      '2025-06-01T01:00:00.000Z',
      '2025-06-01T02:00:00.000Z',
      '2025-06-01T03:00:00.000Z',
      '2025-06-01T04:00:00.000Z',
      '2025-06-01T05:00:00.000Z',
    ]);
    expect(w.cron.status?.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'True',
      reason: 'ScheduleActive',
    });
  });

  it('creates one Operation per slot from the template, named <name>-<unix minutes>, labelled and annotated', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:10:00Z');
    w.run(3 * HOUR);
    expect(w.names()).toEqual([
      slotName('2025-06-01T01:00:00Z'),
      slotName('2025-06-01T02:00:00Z'),
      slotName('2025-06-01T03:00:00Z'),
    ]);
    const op = w.ops[0]!;
    expect(op.metadata.labels).toEqual({ kind: 'nightly', [LABEL_CRON_OPERATION]: 'nightly' });
    expect(op.metadata.annotations).toEqual({ [ANNOTATION_SCHEDULED_TIME]: '2025-06-01T01:00:00Z' });
    expect(op.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'CronOperation',
        name: 'nightly',
        uid: 'uid-1',
        controller: true,
      },
    ]);
    expect(op.spec).toEqual({ type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } });
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T03:00:00Z');
    expect(w.cron.status?.active?.map((a) => a.name)).toEqual(w.names());
  });

  it('never copies approval or webhook-owned annotations from the template: each run is approved on its own', () => {
    const cron = cronOp({
      operationTemplate: {
        metadata: {
          annotations: {
            team: 'storage',
            [ANNOTATION_APPROVE]: 'true',
            [ANNOTATION_APPROVED_BY]: 'alice',
            [ANNOTATION_CREATED_BY]: 'alice',
          },
        },
        spec: {
          type: 'Backup',
          engine: 'velero',
          targetRef: { name: 'shop' },
          policy: { requiresApproval: true },
        },
      },
    });
    const op = operationForSlot(cron, at('2025-06-01T01:00:00Z'));
    expect(op.metadata.annotations).toEqual({
      team: 'storage',
      [ANNOTATION_SCHEDULED_TIME]: '2025-06-01T01:00:00Z',
    });
    expect(op.spec.policy).toEqual({ requiresApproval: true });
  });

  it('is idempotent across a restart: the same decision again adopts instead of creating a second run', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T01:00:00Z');
    const first = w.decide();
    expect(first.create[0]?.metadata.name).toBe(slotName('2025-06-01T01:00:00Z'));
    // The create reached the API server, the status write did not (crash); the new process decides again.
    w.ops.push(first.create[0]!);
    const second = w.decide();
    expect(second.create).toEqual([]);
    expect(second.handledSlot).toEqual(at('2025-06-01T01:00:00Z'));
    expect(second.events.map((e) => e.reason)).not.toContain(CRON_EVENT.OperationCreated);
    w.apply(second);
    expect(w.names()).toHaveLength(1);
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T01:00:00Z');
  });

  it('after downtime runs only the most recent missed slot, once', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:30:00Z');
    w.reconcile();
    w.clock.advanceSync(5 * HOUR + 20 * MIN); // down from 00:30 to 05:50
    w.reconcile();
    w.reconcile();
    expect(w.names()).toEqual([slotName('2025-06-01T05:00:00Z')]);
    expect(w.cron.status?.missedSlots).toBeUndefined();
  });

  it('a slot missed past startingDeadlineSeconds is not run, is recorded once, and the schedule moves on', () => {
    const w = new CronWorld(cronOp({ startingDeadlineSeconds: 600 }), '2025-06-01T00:30:00Z');
    w.reconcile();
    w.clock.advanceSync(HOUR); // 01:30: the 01:00 slot is 30 min late
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: CRON_EVENT.MissedSchedule }),
    ]);
    expect(w.cron.status?.missedSlots).toEqual([
      {
        scheduledTime: '2025-06-01T01:00:00Z',
        detectedAt: '2025-06-01T01:30:00Z',
        reason: 'StartingDeadlineExceeded',
      },
    ]);
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T01:00:00Z');
    // Reported once, not on every reconcile.
    expect(w.reconcile().events).toEqual([]);
    // Never stalls: the next slot runs on time.
    w.run(31 * MIN);
    expect(w.names()).toEqual([slotName('2025-06-01T02:00:00Z')]);
  });

  it('the deadline boundary is inclusive', () => {
    const w = new CronWorld(cronOp({ startingDeadlineSeconds: 600 }), '2025-06-01T01:10:00Z');
    w.cron.status = { lastScheduleTime: '2025-06-01T00:00:00Z' };
    expect(w.reconcile().create[0]?.metadata.name).toBe(slotName('2025-06-01T01:00:00Z'));
  });

  it('keeps the ten most recent missed slots', () => {
    const w = new CronWorld(cronOp({ startingDeadlineSeconds: 60 }), '2025-06-01T00:30:00Z');
    for (let i = 0; i < 12; i++) {
      w.clock.advanceSync(HOUR);
      w.reconcile();
    }
    const missed = w.cron.status?.missedSlots ?? [];
    expect(missed).toHaveLength(MAX_MISSED_SLOTS);
    expect(missed[0]?.scheduledTime).toBe('2025-06-01T03:00:00Z');
    expect(missed.at(-1)?.scheduledTime).toBe('2025-06-01T12:00:00Z');
    expect(w.ops).toEqual([]);
  });

  it('warns when more slots were missed than it counts', () => {
    const w = new CronWorld(cronOp({ schedule: '* * * * *' }), '2025-06-01T00:00:30Z');
    w.reconcile();
    w.clock.advanceSync(5 * HOUR);
    const plan = w.reconcile();
    expect(plan.events.map((e) => e.reason)).toEqual([
      CRON_EVENT.TooManyMissedSchedules,
      CRON_EVENT.OperationCreated,
    ]);
    expect(plan.create[0]?.metadata.name).toBe(slotName('2025-06-01T05:00:00Z'));
    expect(plan.events[0]?.note).toMatch(/^more than 100 slots were missed /);
  });

  it('counts missed slots only inside startingDeadlineSeconds, as CronJob does', () => {
    const w = new CronWorld(
      cronOp({ schedule: '* * * * *', startingDeadlineSeconds: 600 }),
      '2025-06-01T00:00:30Z',
    );
    w.reconcile();
    w.clock.advanceSync(5 * HOUR);
    const plan = w.reconcile();
    expect(plan.events.map((e) => e.reason)).toEqual([CRON_EVENT.OperationCreated]);
    // A window that does hold more than 100 slots warns, and says which window it counted.
    const wide = new CronWorld(
      cronOp({ schedule: '* * * * *', startingDeadlineSeconds: 7200 }),
      '2025-06-01T00:00:30Z',
    );
    wide.reconcile();
    wide.clock.advanceSync(5 * HOUR);
    expect(wide.reconcile().events[0]).toMatchObject({
      reason: CRON_EVENT.TooManyMissedSchedules,
      note: expect.stringMatching(
        /^more than 100 slots were missed within startingDeadlineSeconds \(7200s\)/,
      ),
    });
  });
});

describe('decideCron: concurrency', () => {
  const running = (policy: 'Allow' | 'Forbid' | 'Replace') => {
    const w = new CronWorld(cronOp({ concurrencyPolicy: policy }), '2025-06-01T00:30:00Z');
    w.run(31 * MIN); // 01:00 created, still running at 01:01
    expect(w.names()).toEqual([slotName('2025-06-01T01:00:00Z')]);
    return w;
  };

  it('Allow creates the next run while one is running', () => {
    const w = running('Allow');
    w.run(HOUR);
    expect(w.names()).toEqual([slotName('2025-06-01T01:00:00Z'), slotName('2025-06-01T02:00:00Z')]);
    expect(w.ops.every((o) => o.spec.cancel !== true)).toBe(true);
  });

  it('Forbid skips a run due while one is running: Event, recorded, and the schedule moves on', () => {
    const w = running('Forbid');
    w.run(HOUR); // 02:00 due, 01:00 still running
    expect(w.names()).toEqual([slotName('2025-06-01T01:00:00Z')]);
    expect(w.plans.at(-1)?.events.map((e) => e.reason)).toContain(CRON_EVENT.RunSkippedForbidden);
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T02:00:00Z');
    expect(w.cron.status?.missedSlots).toEqual([
      {
        scheduledTime: '2025-06-01T02:00:00Z',
        detectedAt: expect.any(String),
        reason: 'ConcurrencyForbidden',
      },
    ]);
    // finishing the running one does not bring the skipped slot back
    w.finish(slotName('2025-06-01T01:00:00Z'), 'Succeeded');
    expect(w.reconcile().create).toEqual([]);
    w.run(HOUR); // 03:00 runs normally
    expect(w.names()).toEqual([slotName('2025-06-01T01:00:00Z'), slotName('2025-06-01T03:00:00Z')]);
    expect(w.cron.status?.missedSlots?.map((m) => m.scheduledTime)).toEqual(['2025-06-01T02:00:00Z']);
  });

  it('Forbid records each skipped slot once, across repeated reconciles', () => {
    const w = running('Forbid');
    w.run(HOUR);
    w.reconcile();
    w.reconcile();
    expect(w.cron.status?.missedSlots).toHaveLength(1);
    expect(
      w.plans.filter((p) => p.events.some((e) => e.reason === CRON_EVENT.RunSkippedForbidden)),
    ).toHaveLength(1);
  });

  it('a slot missed past its deadline is recorded with reason StartingDeadlineExceeded', () => {
    const w = new CronWorld(cronOp({ startingDeadlineSeconds: 300 }), '2025-06-01T00:30:00Z');
    w.clock.advanceSync(40 * MIN); // 01:00 is now 10 min late
    w.reconcile();
    expect(w.names()).toEqual([]);
    expect(w.cron.status?.missedSlots).toEqual([
      {
        scheduledTime: '2025-06-01T01:00:00Z',
        detectedAt: expect.any(String),
        reason: 'StartingDeadlineExceeded',
      },
    ]);
  });

  it('Replace cancels the running one (spec.cancel, never deleted) and starts the new one', () => {
    const w = running('Replace');
    w.run(HOUR);
    const [old, neu] = w.ops;
    expect(old?.metadata.name).toBe(slotName('2025-06-01T01:00:00Z'));
    expect(old?.spec.cancel).toBe(true);
    expect(neu?.metadata.name).toBe(slotName('2025-06-01T02:00:00Z'));
    expect(neu?.spec.cancel).toBeUndefined();
    expect(w.plans.flatMap((p) => p.events.map((e) => e.reason))).toContain(CRON_EVENT.ReplacingOperation);
    // Already cancelling: not cancelled again.
    expect(w.decide().cancel).toEqual([]);
  });
});

describe('decideCron: suspend, skip-next, invalid schedules', () => {
  it('suspend creates nothing, passes over slots, and resuming does not run an old slot', () => {
    const w = new CronWorld(cronOp({ suspend: true }), '2025-06-01T00:30:00Z');
    w.run(3 * HOUR);
    expect(w.ops).toEqual([]);
    expect(w.cron.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(w.cron.status?.nextRuns).toBeUndefined();
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T03:00:00Z');
    w.clock.advanceSync(20 * MIN);
    w.cron.spec.suspend = false;
    expect(w.reconcile().create).toEqual([]);
    w.run(HOUR);
    expect(w.names()).toEqual([slotName('2025-06-01T04:00:00Z')]);
  });

  it('skip-next skips exactly one slot and asks for the annotation to be removed', () => {
    const w = new CronWorld(cronOp({}, { [ANNOTATION_SKIP_NEXT]: 'true' }), '2025-06-01T00:30:00Z');
    w.run(31 * MIN);
    expect(w.ops).toEqual([]);
    const skip = w.plans.find((p) => p.removeSkipNext);
    expect(skip?.events.map((e) => e.reason)).toEqual([CRON_EVENT.RunSkipped]);
    expect(w.cron.metadata.annotations).toEqual({});
    expect(w.cron.status?.lastScheduleTime).toBe('2025-06-01T01:00:00Z');
    w.run(HOUR);
    expect(w.names()).toEqual([slotName('2025-06-01T02:00:00Z')]);
  });

  it('skip-next with another value than "true" does nothing', () => {
    const w = new CronWorld(cronOp({}, { [ANNOTATION_SKIP_NEXT]: 'yes' }), '2025-06-01T01:00:00Z');
    expect(w.reconcile().create).toHaveLength(1);
  });

  it.each([
    ['0 0 2 * * *', 'UTC', 'InvalidSchedule'],
    ['0 0 31 2 *', 'UTC', 'InvalidSchedule'],
    ['0 * * * *', 'Mars/Olympus', 'InvalidTimeZone'],
    ['0 * * * *', 'america/new_york', 'InvalidTimeZone'],
  ])('schedule %j in %s: Ready=False/%s, no Operations, no requeue', (schedule, timeZone, reason) => {
    const w = new CronWorld(cronOp({ schedule, timeZone }), '2025-06-01T05:00:00Z');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.requeueAfterMs).toBeUndefined();
    expect(plan.events).toEqual([expect.objectContaining({ type: 'Warning', reason })]);
    expect(w.cron.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason });
    expect(w.cron.status?.conditions?.[0]?.message).toMatch(/^spec\.(schedule|timeZone): /);
    expect(w.cron.status?.nextScheduleTime).toBeUndefined();
    // Said once, not on every reconcile.
    expect(w.reconcile().events).toEqual([]);
  });
});

describe('decideCron: a template past the webhook bounds (stored where the webhook did not run)', () => {
  it('says so in Ready, once, and creates nothing, however deep the parameters are', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 9_992; i++) deep = { x: deep };
    const cron = cronOp({ schedule: '* * * * *' });
    const tmpl = cron.spec.operationTemplate;
    const w = new CronWorld(
      {
        ...cron,
        spec: { ...cron.spec, operationTemplate: { ...tmpl, spec: { ...tmpl.spec, parameters: { deep } } } },
      },
      '2025-06-01T05:00:30Z',
    );
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'InvalidOperationTemplate' }),
    ]);
    const ready = w.cron.status?.conditions?.[0];
    expect(ready).toMatchObject({ type: 'Ready', status: 'False', reason: 'InvalidOperationTemplate' });
    expect(ready?.message).toMatch(
      /^spec\.operationTemplate\.spec\.parameters: .*nested more than 32 levels/,
    );
    expect(w.reconcile().events).toEqual([]);
  });
});

describe('decideCron: status and history', () => {
  it('prunes finished Operations beyond the limits, oldest first, never running ones', () => {
    const w = new CronWorld(
      cronOp({ successfulHistoryLimit: 2, failedHistoryLimit: 1 }),
      '2025-06-01T00:30:00Z',
    );
    for (let h = 1; h <= 6; h++) {
      w.run(HOUR);
      w.finish(slotName(`2025-06-01T0${h}:00:00Z`), h % 2 === 0 ? 'Failed' : 'Succeeded');
    }
    w.run(HOUR); // 07:00 created and running
    w.reconcile();
    expect(w.names()).toEqual([
      slotName('2025-06-01T03:00:00Z'),
      slotName('2025-06-01T05:00:00Z'),
      slotName('2025-06-01T06:00:00Z'),
      slotName('2025-06-01T07:00:00Z'),
    ]);
    expect(w.cron.status?.active).toEqual([{ name: slotName('2025-06-01T07:00:00Z'), target: 'shop' }]);
  });

  it('history limit 0 deletes every finished Operation of that kind', () => {
    const w = new CronWorld(cronOp({ successfulHistoryLimit: 0 }), '2025-06-01T00:30:00Z');
    w.run(31 * MIN);
    w.finish(slotName('2025-06-01T01:00:00Z'), 'Succeeded');
    expect(w.reconcile().prune).toEqual([slotName('2025-06-01T01:00:00Z')]);
    expect(w.cron.status?.lastSuccessfulTime).toBe('2025-06-01T01:01:00.000Z');
    // lastSuccessfulTime survives its Operation being pruned.
    w.reconcile();
    expect(w.cron.status?.lastSuccessfulTime).toBe('2025-06-01T01:01:00.000Z');
  });

  it('nextRuns flags a run DST moves, with local times in the zone', () => {
    const w = new CronWorld(
      cronOp({ schedule: '30 2 * * *', timeZone: 'America/New_York' }),
      '2025-03-08T12:00:00Z',
    );
    w.reconcile();
    const first = w.cron.status?.nextRuns?.[0];
    expect(first).toEqual({
      utc: '2025-03-09T07:00:00.000Z',
      local: '2025-03-09T03:00:00-04:00',
      dstShifted: true,
    });
    expect(w.cron.status?.nextRuns?.[1]?.dstShifted).toBe(false);
  });

  it('a reconcile with nothing to do returns the same status (no write)', () => {
    const w = new CronWorld(cronOp(), '2025-06-01T00:30:00Z');
    w.reconcile();
    const before = structuredClone(w.cron.status);
    w.clock.advanceSync(MIN);
    expect(w.decide().status).toEqual(before);
  });
});
