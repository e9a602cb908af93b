import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_ABANDON,
  ANNOTATION_RESUME,
  type ApplicationInstance,
  type Operation,
  type OperationPhase,
  type WatchOperation,
  type WatchOperationSpec,
} from '../api/index.ts';
import { decideWatch, type WatchPlan } from './watch-decide.ts';
import { CHANGE_GATHER_MS, changeKey, stepWatchRollout, type WaitingChange } from './watch-rollout.ts';

const VERSION = 'spec.appRef.chart.version';
const T0 = Date.parse('2025-06-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function watchOp(spec: Partial<WatchOperationSpec> = {}): WatchOperation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'WatchOperation',
    metadata: { name: 'pre-upgrade', namespace: 'team', uid: 'w-uid', generation: 1 },
    spec: {
      triggers: { fieldPaths: [VERSION] },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      rollout: { waves: [1, '50%', '100%'] },
      ...spec,
    },
  };
}

function instance(name: string, version: string): ApplicationInstance {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: { name, namespace: 'team', uid: `${name}-uid`, generation: 1 },
    spec: {
      appRef: { catalogId: 'shop', chart: { sourceType: 'oci', url: 'oci://r/c', name: 'shop', version } },
      release: { name },
    },
  } as ApplicationInstance;
}

/** A WatchOperation with a fleet; each reconcile applies the plan like the controller, a second later. */
class Fleet {
  now = T0;
  ops: Operation[] = [];
  created: Operation[][] = [];
  readonly watch: WatchOperation;
  readonly instances: ApplicationInstance[];
  constructor(n: number, spec: Partial<WatchOperationSpec> = {}) {
    this.watch = watchOp(spec);
    this.instances = Array.from({ length: n }, (_, i) => instance(`i${String(i).padStart(2, '0')}`, '1.0.0'));
    this.reconcile(); // the baseline
  }
  reconcile(): WatchPlan {
    const plan = decideWatch(this.watch, this.instances, this.ops, new Date(this.now));
    for (const op of plan.create) this.ops.push(structuredClone(op));
    this.ops = this.ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));
    this.created.push(plan.create);
    this.watch.status = plan.status;
    this.now += 1000;
    return plan;
  }
  /** Reconciles until the gather window has passed. */
  settle(): void {
    this.now += CHANGE_GATHER_MS;
    this.reconcile();
  }
  setVersion(version: string, names = this.instances.map((i) => i.metadata.name ?? '')): void {
    for (const i of this.instances)
      if (names.includes(i.metadata.name ?? ''))
        (i.spec.appRef.chart as { version: string }).version = version;
  }
  finish(phase: (target: string) => OperationPhase): void {
    for (const o of this.ops)
      if (!o.status?.phase) o.status = { phase: phase(o.spec.targetRef.name), finishedAt: iso(this.now) };
  }
  annotate(key: string, value: string): void {
    this.watch.metadata.annotations = { ...(this.watch.metadata.annotations ?? {}), [key]: value };
  }
  /** Every instance an Operation was created for (pruned ones included), in order. */
  targets(): string[] {
    return this.created.flat().map((o) => o.spec.targetRef.name);
  }
  get rollout() {
    const r = this.watch.status?.rollout;
    if (!r) throw new Error('no rollout');
    return r;
  }
}

describe('changeKey', () => {
  it('is the trigger label value, or all watched values', () => {
    expect(changeKey('label:upgrade', { upgrade: 'v2' }, 'h')).toBe('label:upgrade=v2');
    expect(changeKey('field:spec.x', {}, 'abc:def')).toBe('fields=abc:def');
  });
});

describe('stepWatchRollout (pure)', () => {
  const starter = (started: string[]) => ({
    waits: () => false,
    room: () => Number.POSITIVE_INFINITY,
    start: (t: string) => void started.push(t),
  });
  const waiting = (entries: [string, string, number][]) =>
    new Map<string, WaitingChange>(entries.map(([n, change, at]) => [n, { change, since: iso(at) }]));

  it('begins a change only after its gather window, with every instance of that change', () => {
    const started: string[] = [];
    const w = waiting([
      ['b', 'fields=v2', T0],
      ['a', 'fields=v2', T0 + 3000],
      ['c', 'fields=v3', T0 + 1000],
    ]);
    const base = {
      strategy: { waves: [1, '100%'] },
      rollout: undefined,
      waiting: w,
      operationOf: () => undefined,
      annotations: undefined,
      starter: starter(started),
    };
    const early = stepWatchRollout({ ...base, now: new Date(T0 + CHANGE_GATHER_MS - 1) });
    expect(early.rollout).toBeUndefined();
    expect(early.requeueAt).toEqual(new Date(T0 + CHANGE_GATHER_MS));
    const due = stepWatchRollout({ ...base, now: new Date(T0 + CHANGE_GATHER_MS) });
    expect(due.rollout?.run).toEqual({ reason: 'change', scheduledTime: iso(T0), change: 'fields=v2' });
    expect(due.rollout?.instances.map((i) => i.name)).toEqual(['a', 'b']);
    expect(started).toEqual(['a']); // wave 1: one instance, in name order; c's change waits
  });
});

describe('a WatchOperation rolled out in waves (decideWatch)', () => {
  it('a change on the fleet is one run: it halts beyond the budget, resumes, and ends', () => {
    const f = new Fleet(10);
    f.setVersion('2.0.0');
    f.reconcile();
    expect(f.ops).toEqual([]); // gathering
    f.settle();
    expect(f.targets()).toEqual(['i00']); // wave 1 of [1, 50%, 100%]
    expect(f.rollout.run.reason).toBe('change');
    const first = f.rollout.run.change;
    f.finish(() => 'Failed');
    f.reconcile();
    expect(f.rollout.phase).toBe('Halted');
    expect(f.rollout.failed.names).toEqual(['i00']);
    expect(f.rollout.notStarted.count).toBe(9);
    const halted = f.watch.status?.conditions?.find((c) => c.type === 'Halted');
    expect(halted).toMatchObject({ status: 'True', reason: 'FailureBudgetExceeded' });
    // A different change waits behind the halted run; nothing more starts.
    f.setVersion('3.0.0', ['i09']);
    f.reconcile();
    f.settle();
    expect(f.targets()).toEqual(['i00']);
    expect(f.rollout.removed.names).toEqual(['i09']);
    // Resume: wave 2 (up to 5) starts.
    f.annotate(ANNOTATION_RESUME, 'r1');
    f.reconcile();
    expect(f.targets()).toEqual(['i00', 'i01', 'i02', 'i03', 'i04']);
    expect(f.watch.status?.conditions?.find((c) => c.type === 'Halted')?.status).toBe('False');
    f.finish(() => 'Succeeded');
    f.reconcile();
    expect(f.targets()).toHaveLength(9); // wave 3: i05..i08 (i09 left with its newer change)
    f.finish(() => 'Succeeded');
    const done = f.reconcile();
    expect(done.events.map((e) => e.reason)).toContain('CompletedWithFailures');
    // In the same reconcile, the change 3.0.0 that waited (its gather window long passed) is the next run.
    expect(f.rollout.run.change).not.toBe(first);
    expect(f.rollout.instances.map((i) => i.name)).toEqual(['i09']);
    expect(f.targets()).toHaveLength(10);
  });

  it('an instance of the same change seen later joins the unfinished run', () => {
    const f = new Fleet(4);
    f.setVersion('2.0.0', ['i00', 'i01']);
    f.reconcile();
    f.settle();
    expect(f.rollout.instances.map((i) => i.name)).toEqual(['i00', 'i01']);
    f.setVersion('2.0.0', ['i03']);
    f.reconcile();
    expect(f.rollout.instances.map((i) => i.name)).toEqual(['i00', 'i01', 'i03']);
  });

  it('abandon ends the change: what had not started is dropped, not rolled out later', () => {
    const f = new Fleet(6);
    f.setVersion('2.0.0');
    f.reconcile();
    f.settle();
    f.finish(() => 'Failed');
    f.reconcile();
    expect(f.rollout.phase).toBe('Halted');
    f.annotate(ANNOTATION_ABANDON, 'a1');
    f.reconcile();
    expect(f.rollout.phase).toBe('Abandoned');
    f.settle();
    f.settle();
    expect(f.targets()).toEqual(['i00']);
    expect(f.watch.status?.targets?.some((t) => t.pendingTrigger)).toBe(false);
  });

  it('removing spec.rollout abandons the unfinished run instead of running the rest unguarded', () => {
    const f = new Fleet(4);
    f.setVersion('2.0.0');
    f.reconcile();
    f.settle();
    f.finish(() => 'Failed');
    f.reconcile();
    delete f.watch.spec.rollout;
    f.reconcile();
    f.reconcile();
    expect(f.rollout.phase).toBe('Abandoned');
    expect(f.targets()).toEqual(['i00']);
  });

  it('property: beyond the budget in a wave, no later wave ever starts without a resume', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 30 }),
        fc.integer({ min: 0, max: 3 }),
        fc.func(fc.boolean()),
        (n, budget, fails) => {
          const f = new Fleet(n, { rollout: { waves: ['20%', '60%', '100%'], failureBudget: budget } });
          f.setVersion('2.0.0');
          f.reconcile();
          f.settle();
          let failed = 0;
          for (let round = 0; round < 5; round++) {
            f.finish((t) => {
              const bad = fails(t);
              if (bad) failed++;
              return bad ? 'Failed' : 'Succeeded';
            });
            const before = f.targets().length;
            f.reconcile();
            if (failed > budget) {
              // Halted, or every instance had already started when the budget was spent.
              expect(f.targets().length).toBe(before);
              expect(f.rollout.phase).toBe(before === n ? 'Completed' : 'Halted');
              expect(f.rollout.notStarted.count + before).toBe(n);
              return;
            }
          }
          expect(f.rollout.phase).toBe('Completed');
          expect([...new Set(f.targets())]).toHaveLength(n);
          expect(f.targets()).toHaveLength(n);
        },
      ),
      { numRuns: 60 },
    );
  });
});
