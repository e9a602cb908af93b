import { FakeClock } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_APPROVE,
  ANNOTATION_CREATED_BY,
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  LABEL_WATCH_OPERATION,
  type Operation,
  type OperationPhase,
  type WatchOperation,
  type WatchOperationSpec,
  watchProcessedAnnotation,
} from '../api/index.ts';
import {
  changedPath,
  decideWatch,
  fieldsHash,
  selectorProblem,
  valueAt,
  WATCH_EVENT,
  type WatchPlan,
} from './watch-decide.ts';

const LABEL = 'maintenance.example.com/backup-now';
const VERSION = 'spec.appRef.chart.version';
const PROCESSED = watchProcessedAnnotation('pre-upgrade');

function watchOp(spec: Partial<WatchOperationSpec> = {}): WatchOperation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'WatchOperation',
    metadata: { name: 'pre-upgrade', namespace: 'team', uid: 'w-uid', generation: 1 },
    spec: {
      triggers: { labels: [LABEL], fieldPaths: [VERSION] },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      ...spec,
    },
  };
}

function instance(name: string, version = '1.0.0', labels: Record<string, string> = {}): ApplicationInstance {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: { name, namespace: 'team', uid: `${name}-uid`, generation: 1, labels },
    spec: {
      appRef: { catalogId: 'shop', chart: { sourceType: 'oci', url: 'oci://r/c', name: 'shop', version } },
      release: { name },
    },
  } as ApplicationInstance;
}

/** A WatchOperation, instances and Operations; `reconcile()` decides and applies like the controller. */
class World {
  watch: WatchOperation;
  instances: ApplicationInstance[];
  ops: Operation[] = [];
  clock = new FakeClock(Date.parse('2025-06-01T00:00:00Z'));
  plans: WatchPlan[] = [];
  constructor(watch: WatchOperation, instances: ApplicationInstance[]) {
    this.watch = watch;
    this.instances = instances;
  }
  decide(): WatchPlan {
    return decideWatch(this.watch, this.instances, this.ops, new Date(this.clock.now()));
  }
  apply(plan: WatchPlan): WatchPlan {
    for (const op of plan.create)
      if (!this.ops.some((o) => o.metadata.name === op.metadata.name)) this.ops.push(structuredClone(op));
    for (const n of plan.cancel) {
      const o = this.ops.find((x) => x.metadata.name === n);
      if (o) o.spec = { ...o.spec, cancel: true };
    }
    this.ops = this.ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));
    for (const p of plan.instances) {
      const inst = this.get(p.instance);
      const ann = { ...(inst.metadata.annotations ?? {}) };
      if (p.processed === null) delete ann[PROCESSED];
      else ann[PROCESSED] = p.processed;
      inst.metadata.annotations = ann;
      const labels = { ...(inst.metadata.labels ?? {}) };
      for (const k of p.removeLabels) delete labels[k];
      inst.metadata.labels = labels;
    }
    this.watch.status = plan.status;
    this.plans.push(plan);
    this.clock.advanceSync(1000);
    return plan;
  }
  reconcile(): WatchPlan {
    return this.apply(this.decide());
  }
  get(name: string): ApplicationInstance {
    const i = this.instances.find((x) => x.metadata.name === name);
    if (!i) throw new Error(name);
    return i;
  }
  setVersion(name: string, version: string): void {
    const i = this.get(name);
    (i.spec.appRef.chart as { version: string }).version = version;
  }
  label(name: string, value = 'now'): void {
    const i = this.get(name);
    i.metadata.labels = { ...(i.metadata.labels ?? {}), [LABEL]: value };
  }
  finishAll(phase: OperationPhase = 'Succeeded'): void {
    for (const o of this.ops)
      if (!o.status?.phase)
        o.status = { phase, finishedAt: new Date(this.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }
  triggers(): string[] {
    return this.ops.map((o) => `${o.spec.targetRef.name} ${o.metadata.annotations?.[ANNOTATION_TRIGGER]}`);
  }
}

describe('field values and hashes', () => {
  it('reads spec paths and label/annotation paths', () => {
    const i = instance('a', '2.0.0', { tier: 'prod' });
    expect(valueAt(i, VERSION)).toBe('2.0.0');
    expect(valueAt(i, "metadata.labels['tier']")).toBe('prod');
    expect(valueAt(i, 'spec.nope.deeper')).toBeUndefined();
  });

  it('names the path that changed; a different path list is not comparable', () => {
    const paths = ['spec.release.name', VERSION];
    const a = fieldsHash(instance('a', '1'), paths);
    const b = fieldsHash(instance('a', '2'), paths);
    expect(a).not.toBe(b);
    expect(changedPath(a, b, paths)).toBe(VERSION);
    expect(changedPath(a, a, paths)).toBeUndefined();
    expect(changedPath(fieldsHash(instance('a', '1'), [VERSION]), b, paths)).toBeUndefined();
    // 16 paths fit the schema's 128 characters.
    expect(
      fieldsHash(
        instance('a'),
        Array.from({ length: 16 }, (_, n) => `spec.p${n}`),
      )?.length,
    ).toBeLessThanOrEqual(128);
  });

  it('flags selectors the API server would refuse', () => {
    expect(selectorProblem({ matchExpressions: [{ key: 'k', operator: 'In', values: [] }] })).toMatch(
      /needs at least one/,
    );
    expect(selectorProblem({ matchExpressions: [{ key: 'k', operator: 'Exists', values: ['x'] }] })).toMatch(
      /takes no values/,
    );
    expect(selectorProblem({ matchLabels: { a: 'b' } })).toBeUndefined();
  });
});

describe('decideWatch: triggers', () => {
  it('the first sighting records a baseline and triggers nothing', () => {
    const w = new World(watchOp(), [instance('shop')]);
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.watch.status?.targets).toEqual([
      { name: 'shop', fieldsHash: fieldsHash(w.get('shop'), [VERSION]) },
    ]);
    expect(w.watch.status?.watchingResources).toBe(1);
    expect(w.watch.status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'WatchActive' });
  });

  it('a chart version change creates one Operation that targets the changed instance', () => {
    const w = new World(watchOp(), [instance('shop'), instance('blog')]);
    w.reconcile();
    w.setVersion('blog', '1.1.0');
    w.reconcile();
    w.reconcile();
    expect(w.triggers()).toEqual([`blog field:${VERSION}`]);
    const op = w.ops[0]!;
    expect(op.spec).toEqual({ type: 'Backup', engine: 'velero', targetRef: { name: 'blog' } });
    expect(op.metadata.labels).toEqual({ [LABEL_WATCH_OPERATION]: 'pre-upgrade' });
    expect(op.metadata.name).toMatch(/^pre-upgrade-[0-9a-f]{8}$/);
    expect(w.watch.status?.active).toEqual([{ name: op.metadata.name, target: 'blog' }]);
  });

  it('never copies approval or webhook-owned annotations from the template', () => {
    const w = new World(
      watchOp({
        operationTemplate: {
          metadata: {
            annotations: { team: 'storage', [ANNOTATION_APPROVE]: 'true', [ANNOTATION_CREATED_BY]: 'bob' },
          },
          spec: { type: 'Backup', engine: 'velero', policy: { requiresApproval: true } },
        },
      }),
      [instance('shop')],
    );
    w.reconcile();
    w.setVersion('shop', '1.1.0');
    w.reconcile();
    expect(w.ops[0]?.metadata.annotations).toEqual({
      team: 'storage',
      [ANNOTATION_TRIGGER]: `field:${VERSION}`,
    });
    expect(w.ops[0]?.spec.policy).toEqual({ requiresApproval: true });
  });

  it('status-only and unrelated metadata updates never trigger', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    const i = w.get('shop');
    i.status = {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ReleaseFailed', message: '', lastTransitionTime: 'x' },
      ],
    };
    i.metadata.labels = { unrelated: 'x' };
    i.metadata.annotations = { 'example.com/note': 'y' };
    i.metadata.resourceVersion = '999';
    i.spec.release.namespace = 'elsewhere';
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.decided).toBe(false);
  });

  it('is idempotent across a restart: the same change decided again has the same name', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    w.setVersion('shop', '2.0.0');
    const first = w.decide();
    // The Operation was created, the status write was lost (crash): the new process decides again.
    w.ops.push(...first.create);
    const second = w.decide();
    expect(second.create).toEqual([]);
    expect(second.status.targets?.[0]?.lastTrigger).toBe(`field:${VERSION}`);
    expect(w.ops).toHaveLength(1);
  });

  it('a change back to an earlier value is a new change with a new Operation name', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    w.setVersion('shop', '2.0.0');
    w.reconcile();
    w.finishAll();
    w.reconcile();
    w.setVersion('shop', '1.0.0');
    w.reconcile();
    w.finishAll();
    w.setVersion('shop', '2.0.0');
    w.reconcile();
    expect(new Set(w.ops.map((o) => o.metadata.name)).size).toBe(3);
  });

  it('a trigger label fires once, is marked processed, and is removed with the mark when the Operation finished', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    w.label('shop');
    w.reconcile();
    expect(w.triggers()).toEqual([`shop label:${LABEL}`]);
    expect(w.get('shop').metadata.annotations?.[PROCESSED]).toBe(LABEL);
    // Still labelled while it runs: no second Operation.
    w.reconcile();
    w.reconcile();
    expect(w.ops).toHaveLength(1);
    expect(w.get('shop').metadata.labels?.[LABEL]).toBe('now');
    w.finishAll('Failed'); // failure counts as finished too
    const plan = w.reconcile();
    expect(plan.events.map((e) => e.reason)).toEqual([WATCH_EVENT.TriggerLabelRemoved]);
    expect(w.get('shop').metadata.labels?.[LABEL]).toBeUndefined();
    expect(w.get('shop').metadata.annotations?.[PROCESSED]).toBeUndefined();
    w.reconcile();
    expect(w.ops).toHaveLength(1);
    // Labelling again is a new request.
    w.label('shop');
    w.reconcile();
    expect(w.ops).toHaveLength(2);
  });

  it('a label and a field change seen together make one Operation (label first)', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    w.label('shop');
    w.setVersion('shop', '3.0.0');
    w.reconcile();
    expect(w.triggers()).toEqual([`shop label:${LABEL}`]);
    w.reconcile();
    expect(w.ops).toHaveLength(1);
  });

  it('only watches instances matching the selector, and drops targets that stop matching', () => {
    const w = new World(watchOp({ selector: { matchLabels: { tier: 'prod' } } }), [
      instance('shop', '1', { tier: 'prod' }),
      instance('blog', '1', { tier: 'dev' }),
    ]);
    w.reconcile();
    w.setVersion('blog', '2');
    w.label('blog');
    w.reconcile();
    expect(w.ops).toEqual([]);
    expect(w.watch.status?.targets?.map((t) => t.name)).toEqual(['shop']);
    w.get('shop').metadata.labels = { tier: 'dev' };
    w.reconcile();
    expect(w.watch.status?.targets).toBeUndefined();
    expect(w.watch.status?.watchingResources).toBe(0);
  });

  it('an invalid selector: Ready=False/InvalidSelector, nothing created', () => {
    const w = new World(watchOp({ selector: { matchExpressions: [{ key: 'k', operator: 'In' }] } }), [
      instance('shop'),
    ]);
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(w.watch.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'InvalidSelector' });
    expect(w.reconcile().events).toEqual([]);
  });
});

describe('decideWatch: a template past the webhook bounds (stored where the webhook did not run)', () => {
  it('says so in Ready, once, and creates nothing on a trigger', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 9_992; i++) deep = { x: deep };
    const w = new World(
      watchOp({ operationTemplate: { spec: { type: 'Backup', engine: 'velero', parameters: { deep } } } }),
      [instance('shop')],
    );
    w.reconcile();
    w.label('shop');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    const ready = w.watch.status?.conditions?.[0];
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidOperationTemplate' });
    expect(ready?.message).toMatch(/^spec\.operationTemplate\.spec\.parameters: /);
    expect(w.plans.flatMap((p) => p.events)).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'InvalidOperationTemplate' }),
    ]);
  });
});

describe('decideWatch: concurrency and coalescing', () => {
  const busy = (policy: 'Allow' | 'Forbid' | 'Replace') => {
    const w = new World(watchOp({ concurrencyPolicy: policy }), [instance('shop')]);
    w.reconcile();
    w.setVersion('shop', '2.0.0');
    w.reconcile();
    expect(w.ops).toHaveLength(1);
    return w;
  };

  it('Forbid keeps the LATEST change while one runs and runs it afterwards, never dropping it', () => {
    const w = busy('Forbid');
    w.setVersion('shop', '3.0.0');
    w.reconcile();
    w.label('shop');
    w.reconcile();
    w.setVersion('shop', '4.0.0');
    const plan = w.reconcile();
    expect(plan.events.map((e) => e.reason)).toEqual([WATCH_EVENT.TriggerPending]);
    expect(w.ops).toHaveLength(1);
    expect(w.watch.status?.targets?.[0]?.pendingTrigger).toBe(`field:${VERSION}`);
    // The label was coalesced into the pending run: marked, not lost, not removed yet.
    expect(w.get('shop').metadata.annotations?.[PROCESSED]).toBe(LABEL);
    w.finishAll();
    w.reconcile();
    expect(w.triggers()).toEqual([`shop field:${VERSION}`, `shop field:${VERSION}`]);
    expect(w.watch.status?.targets?.[0]?.pendingTrigger).toBeUndefined();
    expect(w.get('shop').metadata.labels?.[LABEL]).toBe('now');
    w.finishAll();
    w.reconcile();
    expect(w.get('shop').metadata.labels?.[LABEL]).toBeUndefined();
    w.reconcile();
    expect(w.ops).toHaveLength(2);
  });

  it('Allow creates another Operation while one runs', () => {
    const w = busy('Allow');
    w.setVersion('shop', '3.0.0');
    w.reconcile();
    expect(w.ops).toHaveLength(2);
    expect(w.ops.every((o) => o.spec.cancel !== true)).toBe(true);
  });

  it('Replace cancels the running one with spec.cancel (never deletes it) and creates the new one', () => {
    const w = busy('Replace');
    w.setVersion('shop', '3.0.0');
    const plan = w.reconcile();
    expect(plan.prune).toEqual([]);
    expect(w.ops).toHaveLength(2);
    expect(w.ops[0]?.spec.cancel).toBe(true);
    expect(w.ops[1]?.spec.cancel).toBeUndefined();
  });

  it('Forbid only waits for Operations of the same instance', () => {
    const w = new World(watchOp({ concurrencyPolicy: 'Forbid' }), [instance('shop'), instance('blog')]);
    w.reconcile();
    w.setVersion('shop', '2');
    w.reconcile();
    w.setVersion('blog', '2');
    w.reconcile();
    expect(w.triggers()).toEqual([`shop field:${VERSION}`, `blog field:${VERSION}`]);
  });

  it('suspend: no Operations; field changes meanwhile are not replayed, labels fire after resume', () => {
    const w = new World(watchOp({ suspend: true }), [instance('shop')]);
    w.reconcile();
    w.setVersion('shop', '2');
    w.label('shop');
    w.reconcile();
    expect(w.ops).toEqual([]);
    expect(w.watch.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Suspended' });
    w.watch.spec.suspend = false;
    w.reconcile();
    expect(w.triggers()).toEqual([`shop label:${LABEL}`]);
  });

  it('prunes finished Operations beyond the history limits', () => {
    const w = new World(watchOp({ successfulHistoryLimit: 1 }), [instance('shop')]);
    w.reconcile();
    for (const v of ['2', '3', '4']) {
      w.setVersion('shop', v);
      w.reconcile();
      w.finishAll();
    }
    w.reconcile();
    expect(w.ops).toHaveLength(1);
    expect(w.watch.status?.lastSuccessfulTime).toBeDefined();
    expect(w.watch.status?.active).toBeUndefined();
  });
});

describe('decideWatch: maxConcurrent across instances', () => {
  it('a trigger beyond the limit waits as pending and runs, oldest first, as running ones finish', () => {
    const w = new World(
      watchOp({ maxConcurrent: 1 }),
      ['a', 'b', 'c'].map((n) => instance(n)),
    );
    w.reconcile();
    w.label('c');
    w.reconcile(); // c runs
    w.label('b');
    w.reconcile(); // b waits
    w.label('a');
    const plan = w.reconcile(); // a waits, after b
    expect(plan.events.map((e) => e.note)).toEqual([
      `label:${LABEL} on a waits: maxConcurrent (1) Operations of this WatchOperation are running`,
    ]);
    expect(w.watch.status?.targets?.map((t) => [t.name, t.pendingTrigger ?? '-'])).toEqual([
      ['a', `label:${LABEL}`],
      ['b', `label:${LABEL}`],
      ['c', '-'],
    ]);
    w.finishAll();
    w.reconcile();
    expect(w.triggers()).toEqual([`c label:${LABEL}`, `b label:${LABEL}`]);
    w.finishAll();
    w.reconcile();
    expect(w.triggers().at(-1)).toBe(`a label:${LABEL}`);
    expect(w.watch.status?.targets?.every((t) => t.pendingTrigger === undefined)).toBe(true);
  });
});

describe('decideWatch: parametersFromTrigger', () => {
  it('"upgrade to the version the label names": the label value, the reason and the time become parameters', () => {
    const w = new World(
      watchOp({
        triggers: { labels: ['upgrade.example.com/to'] },
        operationTemplate: { spec: { type: 'Upgrade', engine: 'helm', parameters: { timeout: '10m' } } },
        parametersFromTrigger: [
          { parameter: 'version', from: "object.metadata.labels['upgrade.example.com/to']" },
          { parameter: 'reason', from: 'trigger.reason' },
          { parameter: 'at', from: 'trigger.time' },
        ],
      }),
      [instance('shop')],
    );
    w.reconcile();
    w.get('shop').metadata.labels = { 'upgrade.example.com/to': '2.3.4' };
    const plan = w.reconcile();
    expect(plan.create[0]?.spec.parameters).toEqual({
      timeout: '10m',
      version: '2.3.4',
      reason: 'label:upgrade.example.com/to',
      at: '2025-06-01T00:00:01Z',
    });
    expect(w.watch.spec.operationTemplate.spec.parameters).toEqual({ timeout: '10m' });
  });

  it('a field the instance does not carry leaves the parameter alone and is said in an Event', () => {
    const w = new World(
      watchOp({ parametersFromTrigger: [{ parameter: 'x', from: "object.metadata.annotations['nope']" }] }),
      [instance('shop')],
    );
    w.reconcile();
    w.setVersion('shop', '2.0.0');
    const plan = w.reconcile();
    expect(plan.create[0]?.spec.parameters).toEqual({});
    expect(plan.events.map((e) => e.reason)).toContain(WATCH_EVENT.TriggerParameterMissing);
  });
});

describe('decideWatch: a paused instance', () => {
  it('keeps the trigger pending while ops.vworkspace.io/paused is "true" and runs it once removed', () => {
    const w = new World(watchOp(), [instance('shop')]);
    w.reconcile();
    w.get('shop').metadata.annotations = { 'ops.vworkspace.io/paused': 'true' };
    w.setVersion('shop', '2.0.0');
    const plan = w.reconcile();
    expect(plan.create).toEqual([]);
    expect(plan.events.map((e) => e.note)).toEqual([
      `field:${VERSION} on shop waits: ops.vworkspace.io/paused is "true" on the instance; it runs once the annotation is removed`,
    ]);
    expect(w.watch.status?.targets?.[0]?.pendingTrigger).toBe(`field:${VERSION}`);
    w.get('shop').metadata.annotations = {};
    w.reconcile();
    expect(w.triggers()).toEqual([`shop field:${VERSION}`]);
  });
});
