// decideCron with spec.rollout: a fleet run created wave by wave from status.rollout, halted by a spent
// failure budget, resumed or abandoned through the CronOperation's annotations.
import { describe, expect, it } from 'vitest';
import { anInstance, CronWorld, cronOp, MIN } from '../../../test/support/builders/schedule.ts';
import {
  ANNOTATION_ABANDON,
  ANNOTATION_RESUME,
  ANNOTATION_RUN_NOW,
  type CronOperationSpec,
  MAX_ROLLOUT_INSTANCES,
  type Operation,
} from '../api/index.ts';

const fleetSpec = (rollout: CronOperationSpec['rollout'], extra: Partial<CronOperationSpec> = {}) => ({
  targetSelector: { matchLabels: { tier: 'prod' } },
  rollout,
  operationTemplate: { spec: { type: 'Upgrade' as const, engine: 'helm' as const } },
  ...extra,
});

/** A world of `n` prod instances db-00.. under `rollout`, past its first slot. */
function world(n: number, rollout: CronOperationSpec['rollout'], extra: Partial<CronOperationSpec> = {}) {
  const w = new CronWorld(cronOp(fleetSpec(rollout, extra)), '2025-06-01T00:30:00Z');
  w.instances = Array.from({ length: n }, (_, i) =>
    anInstance(`db-${String(i).padStart(2, '0')}`, { tier: 'prod' }),
  );
  w.reconcile();
  w.clock.advanceSync(30 * MIN); // 01:00, the first slot
  return w;
}

const targets = (ops: readonly Operation[]) => ops.map((o) => o.spec.targetRef.name).sort();
const opFor = (w: CronWorld, target: string) =>
  w.ops.find((o) => o.spec.targetRef.name === target)?.metadata.name ?? '';
const halted = (w: CronWorld) => w.cron.status?.conditions?.find((c) => c.type === 'Halted');
const annotate = (w: CronWorld, key: string, value: string) => {
  w.cron.metadata.annotations = { ...w.cron.metadata.annotations, [key]: value };
};

describe('decideCron with spec.rollout', () => {
  it('creates the first wave only, and the next when it has finished', () => {
    const w = world(10, { waves: [1, '50%'] });
    w.reconcile();
    expect(targets(w.ops)).toEqual(['db-00']);
    expect(w.cron.status?.rollout).toMatchObject({
      phase: 'Progressing',
      wave: { index: 1, of: 3, size: 1 },
      running: { count: 1, names: ['db-00'] },
      notStarted: { count: 9 },
    });
    expect(halted(w)).toMatchObject({ status: 'False', reason: 'WaveRunning' });
    w.reconcile();
    expect(w.ops).toHaveLength(1); // nothing more while the wave runs
    w.finish(opFor(w, 'db-00'), 'Succeeded');
    w.reconcile();
    expect(targets(w.ops)).toEqual(['db-00', 'db-01', 'db-02', 'db-03', 'db-04']);
  });

  it('halts when failures pass the budget: nothing else starts, the condition and an Event name the failed', () => {
    const w = world(10, { waves: [3, '100%'], failureBudget: 1 });
    w.reconcile();
    for (const t of ['db-00', 'db-01']) w.finish(opFor(w, t), 'Failed');
    w.finish(opFor(w, 'db-02'), 'Succeeded');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.rollout).toMatchObject({
      phase: 'Halted',
      reason: 'FailureBudgetExceeded',
      failed: { count: 2, names: ['db-00', 'db-01'] },
      succeeded: { count: 1, names: ['db-02'] },
      notStarted: { count: 7 },
      failures: { counted: 2, budget: 1 },
    });
    expect(halted(w)).toMatchObject({ status: 'True', reason: 'FailureBudgetExceeded' });
    expect(halted(w)?.message).toContain('db-00, db-01');
    expect(plan.events).toContainEqual(
      expect.objectContaining({ type: 'Warning', reason: 'FailureBudgetExceeded' }),
    );
    w.reconcile();
    expect(w.ops).toHaveLength(3);
  });

  it('goes on after a resume, counting failures afresh; a second resume value is needed to resume again', () => {
    const w = world(6, { waves: [2, 4] });
    w.reconcile();
    w.finish(opFor(w, 'db-00'), 'Failed');
    w.finish(opFor(w, 'db-01'), 'Succeeded');
    w.reconcile();
    expect(w.cron.status?.rollout?.phase).toBe('Halted');
    w.clock.advanceSync(MIN);
    annotate(w, ANNOTATION_RESUME, 'r1');
    const plan = w.reconcile();
    expect(plan.events).toContainEqual(expect.objectContaining({ reason: 'RolloutResumed' }));
    expect(targets(plan.create)).toEqual(['db-02', 'db-03']);
    expect(w.cron.status?.rollout).toMatchObject({ phase: 'Progressing', resumeRequest: 'r1' });
    w.clock.advanceSync(MIN);
    w.finish(opFor(w, 'db-02'), 'Failed');
    w.reconcile();
    expect(w.cron.status?.rollout?.phase).toBe('Halted');
    w.reconcile(); // the same value does not resume again
    expect(w.cron.status?.rollout?.phase).toBe('Halted');
  });

  it('abandon ends the run; later slots begin a new run', () => {
    const w = world(4, { waves: [1] });
    w.reconcile();
    w.finish(opFor(w, 'db-00'), 'Failed');
    w.reconcile();
    annotate(w, ANNOTATION_ABANDON, 'a1');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.rollout).toMatchObject({ phase: 'Abandoned', reason: 'RolloutAbandoned' });
    expect(halted(w)).toMatchObject({ status: 'False', reason: 'RolloutAbandoned' });
    w.clock.advanceSync(60 * MIN);
    w.reconcile();
    expect(w.cron.status?.rollout).toMatchObject({ phase: 'Progressing', run: { reason: 'schedule' } });
    expect(w.cron.status?.rollout?.abandonRequest).toBe('a1'); // the old value does not end the new run
    expect(w.ops.filter((o) => o.spec.targetRef.name === 'db-00')).toHaveLength(2);
  });

  it('skips slots and refuses run-now while a run is unfinished', () => {
    const w = world(3, { waves: [1] });
    w.reconcile();
    w.clock.advanceSync(60 * MIN);
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.missedSlots).toContainEqual(
      expect.objectContaining({ reason: 'RolloutInProgress' }),
    );
    annotate(w, ANNOTATION_RUN_NOW, 'now-1');
    w.reconcile();
    expect(w.cron.status?.manualRun).toMatchObject({ request: 'now-1', phase: 'Refused' });
    expect(w.ops).toHaveLength(1);
  });

  it('keeps an instance finished when its Operation is deleted, and passes over one removed before it started', () => {
    const w = world(3, { waves: [1, 2] });
    w.reconcile();
    w.finish(opFor(w, 'db-00'), 'Succeeded');
    w.reconcile();
    w.finish(opFor(w, 'db-01'), 'Succeeded');
    w.ops = w.ops.filter((o) => o.spec.targetRef.name !== 'db-00'); // TTL or a person deleted it
    w.instances = w.instances.filter((i) => i.metadata.name !== 'db-02');
    w.reconcile();
    expect(targets(w.ops)).toEqual(['db-01']);
    expect(w.cron.status?.rollout).toMatchObject({
      phase: 'Completed',
      succeeded: { count: 2, names: ['db-00', 'db-01'] },
      removed: { count: 1, names: ['db-02'] },
    });
  });

  it('waits pauseBetweenWaves and asks to be woken when it ends', () => {
    const w = world(2, { waves: [1], pauseBetweenWaves: '10m' });
    w.reconcile();
    w.finish(opFor(w, 'db-00'), 'Succeeded');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.requeueAfterMs).toBe(10 * MIN);
    expect(w.cron.status?.rollout?.reason).toBe('PausedBetweenWaves');
    w.clock.advanceSync(10 * MIN);
    expect(targets(w.reconcile().create)).toEqual(['db-01']);
  });

  it('caps a wave by maxConcurrent and starts nothing while suspended', () => {
    const w = world(6, { waves: ['100%'] }, { maxConcurrent: 2 });
    w.reconcile();
    expect(w.ops).toHaveLength(2);
    w.cron.spec.suspend = true;
    w.finish(opFor(w, 'db-00'), 'Succeeded');
    w.reconcile();
    expect(w.ops).toHaveLength(2);
    w.cron.spec.suspend = false;
    w.reconcile();
    expect(targets(w.ops)).toEqual(['db-00', 'db-01', 'db-02']);
  });

  it('does not start a run larger than status.rollout can hold, and says how to split it', () => {
    const w = world(MAX_ROLLOUT_INSTANCES + 1, { waves: [1] });
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.rollout).toBeUndefined();
    expect(plan.events).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'InvalidRollout',
        note: expect.stringContaining('narrow spec.targetSelector'),
      }),
    );
  });

  it('counts an instance whose Operation was refused or deleted while it ran as failed: the run halts', () => {
    const w = world(4, { waves: [2] });
    w.reconcile();
    w.ops = w.ops.filter((o) => o.spec.targetRef.name !== 'db-00'); // the create was refused
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.cron.status?.rollout).toMatchObject({
      phase: 'Halted',
      failed: { count: 1, names: ['db-00'] },
      running: { count: 1, names: ['db-01'] },
    });
    w.reconcile();
    expect(targets(w.ops)).toEqual(['db-01']); // never started again
  });
});
