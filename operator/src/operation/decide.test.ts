import type { KubernetesObject } from '@kubernetes/client-node';
import { FakeClock } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import {
  fakeAdapter,
  fakeChildName,
  instance,
  operation,
  ran,
} from '../../../test/support/builders/operation.ts';
import { ANNOTATION_RECONCILE_REQUESTED_BY } from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import type { ChildManifest, EngineAdapter } from '../engines/types.ts';
import type { AdmissionFacts } from './admitted.ts';
import {
  ANNOTATION_RECONCILE_HANDLED,
  type DecideInput,
  type Decision,
  decide,
  mayMaterialize,
  retryBackoffMs,
} from './decide.ts';
import type { PreconditionFacts } from './preconditions.ts';

const adapter = fakeAdapter('velero', ['Backup', 'Restore']);

function facts(clock: FakeClock, over: Partial<PreconditionFacts> = {}): PreconditionFacts {
  return {
    now: new Date(clock.now()),
    target: instance(),
    rbac: { allowed: true },
    operations: [],
    secrets: new Set(),
    serviceAccounts: new Set(),
    ...over,
  };
}

/** Drives one Operation through decide like the controller does: status applied, children kept in memory. */
class Harness {
  readonly clock = new FakeClock(Date.parse('2025-01-01T00:00:00Z'));
  op: Operation;
  children = new Map<string, KubernetesObject>();
  failureSeenAt: number | undefined;
  factsOver: Partial<PreconditionFacts> = {};
  last!: Decision;

  constructor(op: Operation) {
    this.op = op;
  }

  step(extra: Partial<DecideInput> = {}): Decision {
    const refs = this.op.status?.childRefs ?? [];
    const d = decide({
      op: this.op,
      now: this.clock.now(),
      templates: BUILTIN_TEMPLATES,
      facts: facts(this.clock, this.factsOver),
      target: instance(),
      adapter,
      env: { veleroNamespace: 'velero' },
      children: refs.map((r) => this.children.get(r.name)).filter((c): c is KubernetesObject => !!c),
      ...(this.failureSeenAt !== undefined ? { failureSeenAt: this.failureSeenAt } : {}),
      ...extra,
    });
    if (d.failureSeen) this.failureSeenAt = this.clock.now();
    for (const c of d.create ?? []) this.children.set(c.metadata.name, structuredClone(c));
    for (const a of d.cancel ?? []) if (a.kind === 'delete') this.children.delete(a.child.metadata.name);
    this.op = { ...this.op, status: d.status };
    if (d.reconcileHandled !== undefined)
      this.annotate({ [ANNOTATION_RECONCILE_HANDLED]: d.reconcileHandled });
    this.last = d;
    return d;
  }

  child(): ChildManifest {
    return this.children.get(this.op.status!.childRef!.name) as ChildManifest;
  }

  setChild(data: Record<string, string>): void {
    const c = this.child();
    this.children.set(c.metadata.name, {
      ...c,
      data: { ...(c.data as object), ...data },
    } as KubernetesObject);
  }

  annotate(a: Record<string, string>): void {
    this.op = {
      ...this.op,
      metadata: { ...this.op.metadata, annotations: { ...this.op.metadata.annotations, ...a } },
    };
  }

  cond(type: string) {
    return this.op.status?.conditions?.find((c) => c.type === type);
  }
}

const REQUESTED_BY = ANNOTATION_RECONCILE_REQUESTED_BY;
describe('decide: the happy path', () => {
  it('creates one child, runs, succeeds with outputs; conditions and events follow', () => {
    const h = new Harness(operation('b'));
    const d1 = h.step();
    expect(d1.create).toHaveLength(1);
    const child = d1.create![0]!;
    expect(child.metadata.name).toBe(fakeChildName(h.op, 1));
    expect(child.metadata.labels).toMatchObject({
      'ops.vworkspace.io/operation': 'b',
      'ops.vworkspace.io/operation-namespace': 'team',
    });
    expect((child.metadata as { ownerReferences?: unknown[] }).ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Operation', name: 'b', uid: 'uid-b', controller: true }),
    ]);
    expect(h.op.status).toMatchObject({
      phase: 'Running',
      attempts: 1,
      startedAt: '2025-01-01T00:00:00Z',
      template: 'velero-backup',
      observedGeneration: 1,
      childRef: { apiVersion: 'v1', kind: 'ConfigMap', name: child.metadata.name, namespace: 'team' },
    });
    expect(h.cond('Accepted')).toMatchObject({
      status: 'True',
      reason: 'TemplateValidated',
      observedGeneration: 1,
    });
    expect(h.cond('Running')).toMatchObject({ status: 'True', reason: 'JobRunning' });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'Unknown', reason: 'JobRunning' });
    expect(d1.events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'Started' })]);
    // Deadline of the template (14400 s) requeues exactly then.
    expect(d1.requeueAfterMs).toBe(14_400_000);

    // Nothing changed: same status, no event, no child.
    h.clock.advanceSync(60_000);
    const same = h.step();
    expect(same.create).toBeUndefined();
    expect(same.events).toEqual([]);
    expect(same.requeueAfterMs).toBe(14_400_000 - 60_000);

    h.setChild({ phase: 'Succeeded', output: 'b-1234' });
    const transition = h.cond('Running')!.lastTransitionTime;
    h.clock.advanceSync(1000);
    const done = h.step();
    expect(h.op.status).toMatchObject({
      phase: 'Succeeded',
      finishedAt: '2025-01-01T00:01:01Z',
      outputs: { result: 'b-1234' },
    });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'True', reason: 'JobSucceeded' });
    expect(h.cond('Running')).toMatchObject({ status: 'False', reason: 'JobSucceeded' });
    expect(h.cond('Running')!.lastTransitionTime).not.toBe(transition);
    expect(done.events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'JobSucceeded' })]);
    // Terminal: nothing more happens.
    expect(h.step()).toMatchObject({ events: [] });
    expect(h.last.create).toBeUndefined();
  });

  it("a running child's actions (e.g. resume the next Job of a sequence) are passed on, only while it runs", () => {
    const h = new Harness(operation('b'));
    h.step();
    const resume = (c: KubernetesObject) => ({
      kind: 'patch' as const,
      child: c as ChildManifest,
      patch: { spec: { suspend: false } },
    });
    const acting = {
      ...adapter,
      observe: (cs: readonly KubernetesObject[], i: Parameters<typeof adapter.observe>[1]) => ({
        ...adapter.observe(cs, i),
        actions: [resume(cs[0]!), { kind: 'none' as const }],
      }),
    };
    const d = h.step({ adapter: acting });
    expect(d.actions).toEqual([resume(h.child())]);
    expect(d.cancel).toBeUndefined();
    expect(h.op.status?.phase).toBe('Running');
    h.setChild({ phase: 'Succeeded' });
    expect(h.step({ adapter: acting }).actions).toBeUndefined();
  });

  it('mayMaterialize: before the start and when a retry may follow, not while the attempt runs', () => {
    const h = new Harness(operation('b'));
    expect(mayMaterialize(h.op, [])).toBe(true);
    h.step();
    const child = h.child();
    expect(mayMaterialize(h.op, [child])).toBe(false);
    expect(mayMaterialize(h.op, [])).toBe(true); // deleted: ChildDeleted may retry
    const failedJob = {
      ...child,
      kind: 'Job',
      status: { conditions: [{ type: 'Failed', status: 'True' }] },
    };
    expect(mayMaterialize(h.op, [failedJob])).toBe(true);
  });

  it('lastTransitionTime moves only when a condition status changes', () => {
    const h = new Harness(operation('b', { policy: { requiresApproval: true } }));
    h.step();
    const t0 = h.cond('Blocked')!.lastTransitionTime;
    h.clock.advanceSync(5000);
    h.step();
    expect(h.cond('Blocked')!.lastTransitionTime).toBe(t0);
  });
});

describe('decide: preconditions', () => {
  it('permanent rejection: Failed, Accepted=False, no child, Warning event', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { target: instance('app', { capabilities: {} }) };
    const d = h.step();
    expect(d.create).toBeUndefined();
    expect(h.op.status).toMatchObject({ phase: 'Failed', finishedAt: '2025-01-01T00:00:00Z' });
    expect(h.cond('Accepted')).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(d.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'CapabilityMissing' })]);
  });

  it('TargetNotFound waits its grace period (Pending), then fails; appearing in time starts it', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { target: undefined };
    const d = h.step({ graceMs: 60_000 });
    expect(h.op.status?.phase).toBe('Pending');
    expect(h.cond('Accepted')).toMatchObject({ status: 'False', reason: 'TargetNotFound' });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'Unknown', reason: 'TargetNotFound' });
    expect(d.requeueAfterMs).toBe(60_000);
    h.clock.advanceSync(30_000);
    expect(h.step({ graceMs: 60_000 }).requeueAfterMs).toBe(30_000);
    h.clock.advanceSync(30_000);
    h.step({ graceMs: 60_000 });
    expect(h.op.status?.phase).toBe('Failed');

    const ok = new Harness(operation('c'));
    ok.factsOver = { target: undefined };
    ok.step({ graceMs: 60_000 });
    ok.factsOver = {};
    ok.clock.advanceSync(10_000);
    expect(ok.step({ graceMs: 60_000 }).create).toHaveLength(1);
    expect(ok.cond('Accepted')).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
  });

  it('Blocked ⇄ Pending → Running: blocked reasons, queue position, wake-up at the window', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { applicationWindow: { schedule: '0 2 * * *', duration: '1h', timeZone: 'UTC' } };
    const d = h.step();
    expect(h.op.status?.phase).toBe('Blocked');
    expect(h.cond('Blocked')).toMatchObject({ status: 'True', reason: 'OutsideMaintenanceWindow' });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'Unknown', reason: 'OutsideMaintenanceWindow' });
    expect(d.requeueAfterMs).toBe(2 * 3600_000);
    expect(d.events).toEqual([expect.objectContaining({ reason: 'OutsideMaintenanceWindow' })]);
    h.clock.advanceSync(2 * 3600_000);
    h.factsOver = {
      ...h.factsOver,
      operations: [
        { ...operation('b0', {}, { created: '2024-12-31T00:00:00Z' }), status: { phase: 'Running' } },
      ],
    };
    const d2 = h.step();
    expect(h.cond('Blocked')).toMatchObject({ reason: 'ConflictingOperation' });
    expect(h.op.status?.queuePosition).toBe(1);
    expect(d2.events).toEqual([expect.objectContaining({ reason: 'ConflictingOperation' })]);
    h.factsOver = { applicationWindow: h.factsOver.applicationWindow! };
    h.step();
    expect(h.op.status?.phase).toBe('Running');
    expect(h.op.status?.queuePosition).toBeUndefined();
    expect(h.cond('Blocked')).toMatchObject({ status: 'False', reason: 'PreconditionsSatisfied' });
  });

  it('dryRun writes status.plan, creates nothing, ends DryRunCompleted', () => {
    const h = new Harness(operation('b', { policy: { dryRun: true } }));
    const d = h.step();
    expect(d.create).toBeUndefined();
    expect(h.op.status?.phase).toBe('Succeeded');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'True', reason: 'DryRunCompleted' });
    const plan = h.op.status?.plan as { children: ChildManifest[] };
    expect(plan.children[0]!.metadata.name).toBe(fakeChildName(h.op, 1));
    expect(h.op.status?.childRef).toBeUndefined();
  });

  it("dryRun writes the adapter's plan (values read from a Secret redacted) instead of the children", () => {
    const h = new Harness(operation('b', { policy: { dryRun: true } }));
    const redacting: EngineAdapter = {
      ...adapter,
      materialize: (input) => {
        const m = adapter.materialize(input);
        if (!m.ok) return m;
        const plan = m.children.map((c) => ({ ...c, data: { secret: '(redacted)' } }));
        return { ...m, children: m.children.map((c) => ({ ...c, data: { secret: 'hunter2' } })), plan };
      },
    };
    h.step({ adapter: redacting });
    const plan = h.op.status?.plan as { children: ChildManifest[] };
    expect(JSON.stringify(plan)).not.toContain('hunter2');
    expect(plan.children[0]).toMatchObject({ data: { secret: '(redacted)' } });
    // Owned like the child it stands for.
    expect(plan.children[0]!.metadata.labels?.['ops.vworkspace.io/operation']).toBe(h.op.metadata.name);
  });
});

describe('decide: policies', () => {
  it('retryLimit: a retryable failure creates attempt 2 (new name) after the backoff, then RetryLimitExceeded', () => {
    const h = new Harness(operation('b', { policy: { retryLimit: 1 } }));
    h.step();
    const first = h.op.status!.childRef!.name;
    h.setChild({ phase: 'Failed' });
    const d = h.step();
    expect(d.failureSeen).toBe(true);
    expect(d.requeueAfterMs).toBe(retryBackoffMs(1));
    expect(d.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'AttemptFailed' })]);
    expect(h.op.status?.phase).toBe('Running');
    h.clock.advanceSync(retryBackoffMs(1) - 1);
    expect(h.step().create).toBeUndefined();
    h.clock.advanceSync(1);
    const retry = h.step();
    expect(retry.create).toHaveLength(1);
    expect(h.op.status).toMatchObject({ attempts: 2, startedAt: '2025-01-01T00:00:00Z' });
    expect(h.op.status!.childRef!.name).not.toBe(first);
    expect(h.op.status!.childRef!.name).toBe(fakeChildName(h.op, 2));
    h.failureSeenAt = undefined;
    h.setChild({ phase: 'Failed' });
    h.step();
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'RetryLimitExceeded' });
  });

  it('a permanent engine failure ends at once with the engine reason verbatim', () => {
    const h = new Harness(operation('b', { policy: { retryLimit: 3 } }));
    h.step();
    h.setChild({ phase: 'Failed', retryable: 'false' });
    h.step();
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'JobFailed' });
  });

  it('activeDeadlineSeconds: DeadlineExceeded exactly at the deadline, child cancelled', () => {
    const h = new Harness(operation('b', { policy: { activeDeadlineSeconds: 60 } }));
    expect(h.step().requeueAfterMs).toBe(60_000);
    h.clock.advanceSync(59_999);
    expect(h.step().requeueAfterMs).toBe(1);
    h.clock.advanceSync(1);
    const d = h.step();
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(d.cancel).toEqual([expect.objectContaining({ kind: 'delete' })]);
  });

  it('cancel: Blocked ends at once; Running stops the child, then Cancelled', () => {
    const blocked = new Harness(operation('b', { policy: { requiresApproval: true } }));
    blocked.step();
    blocked.op = { ...blocked.op, spec: { ...blocked.op.spec, cancel: true } };
    blocked.step();
    expect(blocked.op.status?.phase).toBe('Cancelled');
    expect(blocked.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'Cancelled' });

    const running = new Harness(operation('c'));
    running.step();
    running.op = { ...running.op, spec: { ...running.op.spec, cancel: true } };
    const d = running.step();
    expect(d.cancel).toEqual([expect.objectContaining({ kind: 'delete' })]);
    // The fake cancel deleted the child; the next reconcile sees it gone.
    running.step();
    expect(running.op.status?.phase).toBe('Cancelled');
    expect(running.last.events).toEqual([expect.objectContaining({ reason: 'Cancelled' })]);
  });

  it('cancel: an engine that cannot act yet says why and keeps cancelling until the child is gone', () => {
    const waiting: EngineAdapter = {
      ...adapter,
      cancel: () => [{ kind: 'wait', message: 'the backup cannot be deleted while it runs' }],
    };
    const h = new Harness(operation('w'));
    h.step();
    h.op = { ...h.op, spec: { ...h.op.spec, cancel: true } };
    const d = h.step({ adapter: waiting });
    expect(d.cancel).toEqual([]);
    expect(h.op.status?.phase).toBe('Running');
    expect(h.cond('Running')?.message).toBe('spec.cancel: the backup cannot be deleted while it runs');
    expect(d.events).toEqual([expect.objectContaining({ reason: 'Cancelling' })]);
    // Asked again, the same answer: no second event.
    expect(h.step({ adapter: waiting }).events).toEqual([]);
    // Actions and waits together: the actions are carried out, the waits are what it says.
    const both: EngineAdapter = {
      ...adapter,
      cancel: (children) => [
        { kind: 'delete', child: children[0] as ChildManifest },
        { kind: 'wait', message: 'deleting it' },
      ],
    };
    expect(h.step({ adapter: both }).cancel).toEqual([expect.objectContaining({ kind: 'delete' })]);
    expect(h.cond('Running')?.message).toBe('spec.cancel: deleting it');
    h.children.clear();
    h.step({ adapter: waiting });
    expect(h.op.status?.phase).toBe('Cancelled');
    expect(h.cond('Succeeded')?.message).toMatch(/^spec\.cancel: ConfigMap \S+ deleted$/);
  });

  it('cancel: a child that finished before it could be stopped is said to have finished', () => {
    const h = new Harness(operation('f'));
    h.step();
    h.setChild({ phase: 'Succeeded' });
    h.op = { ...h.op, spec: { ...h.op.spec, cancel: true } };
    const d = h.step();
    expect(d.cancel).toBeUndefined();
    expect(h.op.status?.phase).toBe('Cancelled');
    expect(h.cond('Succeeded')?.message).toMatch(
      /^spec\.cancel: ConfigMap \S+ finished \(JobSucceeded\) before it could be stopped$/,
    );
  });

  it('cancel: a child that ends after the stop was asked is said to be stopped (an Argo Workflow ends Failed)', () => {
    const stopping: EngineAdapter = {
      ...adapter,
      cancel: (children) => [
        { kind: 'patch', child: children[0] as ChildManifest, patch: { spec: { shutdown: 'Stop' } } },
      ],
    };
    const h = new Harness(operation('s'));
    h.step();
    h.op = { ...h.op, spec: { ...h.op.spec, cancel: true } };
    expect(h.step({ adapter: stopping }).cancel).toEqual([expect.objectContaining({ kind: 'patch' })]);
    expect(h.op.status?.phase).toBe('Running');
    // The engine ends the child as asked: it reports a failure, which here is the stop's effect.
    h.setChild({ phase: 'Failed' });
    h.step({ adapter: stopping });
    expect(h.op.status?.phase).toBe('Cancelled');
    expect(h.cond('Succeeded')?.message).toMatch(/^spec\.cancel: ConfigMap \S+ stopped \(JobFailed\)$/);
  });

  it('activeDeadlineSeconds with an engine that cannot stop the child now: says so, nothing to carry out', () => {
    const waiting: EngineAdapter = { ...adapter, cancel: () => [{ kind: 'wait', message: 'in flight' }] };
    const h = new Harness(operation('d', { policy: { activeDeadlineSeconds: 60 } }));
    h.step();
    h.clock.advanceSync(60_000);
    const d = h.step({ adapter: waiting });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(h.cond('Succeeded')?.message).toMatch(/cannot stop \S+ \S+ now; it may still finish on its own/);
    expect(d.cancel).toEqual([]);
  });

  it('activeDeadlineSeconds while the engine puts things back (a settling wait): Running until it is done, then DeadlineExceeded saying how it ended', () => {
    let settled = false;
    const rollingBack: EngineAdapter = {
      ...adapter,
      observe: (children, input) => ({
        ...adapter.observe(children, input),
        ...(settled ? { phase: 'Failed' as const, stopped: 'the release is deployed (revision 6)' } : {}),
      }),
      cancel: (children) =>
        settled
          ? []
          : [
              { kind: 'patch', child: children[0] as ChildManifest, patch: { spec: { suspend: false } } },
              { kind: 'wait', settling: true, message: 'rolling the release back to revision 4' },
            ],
    };
    const h = new Harness(operation('r', { policy: { activeDeadlineSeconds: 60 } }));
    h.step();
    h.clock.advanceSync(60_000);
    const d = h.step({ adapter: rollingBack });
    expect(h.op.status?.phase).toBe('Running');
    expect(h.cond('Running')).toMatchObject({
      status: 'True',
      reason: 'DeadlineExceeded',
      message: expect.stringMatching(/passed; rolling the release back to revision 4$/),
    });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'Unknown', reason: 'DeadlineExceeded' });
    expect(d.cancel).toEqual([expect.objectContaining({ kind: 'patch' })]);
    expect(d.events).toEqual([expect.objectContaining({ reason: 'Cancelling' })]);
    settled = true;
    h.step({ adapter: rollingBack });
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(h.cond('Succeeded')?.message).toMatch(
      /; ConfigMap \S+ was stopped; the release is deployed \(revision 6\)\. Raise the deadline/,
    );
  });

  it('cancel while the engine puts things back: says so, and the Cancelled message says how it ended', () => {
    let settled = false;
    const rollingBack: EngineAdapter = {
      ...adapter,
      observe: (children, input) =>
        settled
          ? { phase: 'Failed', reason: 'HelmUpgradeFailed', message: 'x', stopped: 'the release is deployed' }
          : adapter.observe(children, input),
      cancel: () => (settled ? [] : [{ kind: 'wait', settling: true, message: 'rolling back' }]),
    };
    const h = new Harness(operation('c'));
    h.step();
    h.op = { ...h.op, spec: { ...h.op.spec, cancel: true } };
    h.step({ adapter: rollingBack });
    expect(h.op.status?.phase).toBe('Running');
    expect(h.cond('Running')?.message).toBe('spec.cancel: putting it back: rolling back');
    settled = true;
    h.step({ adapter: rollingBack });
    expect(h.op.status?.phase).toBe('Cancelled');
    expect(h.cond('Succeeded')?.message).toMatch(
      /^spec\.cancel: ConfigMap \S+ stopped \(HelmUpgradeFailed\); the release is deployed$/,
    );
  });

  it('what an engine did to put things back lands in status.rollback; a further child is handed on to adopt', () => {
    const plan: ChildManifest = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'r-plan', namespace: 'team-a' },
    };
    const record = {
      why: 'PostCheckFailed',
      toRevision: 4,
      rolledBackBy: 'Job r',
      restore: 'InProgress' as const,
      state: 'Restoring' as const,
    };
    let ended = false;
    const restoring: EngineAdapter = {
      ...adapter,
      observe: () =>
        ended
          ? {
              phase: 'Failed',
              reason: 'PostCheckFailed',
              message: 'restored',
              retryable: false,
              rollback: { ...record, state: 'Done', restore: 'Restored' },
            }
          : {
              phase: 'Running',
              reason: 'VolumeSnapshotRestoreInProgress',
              message: 'm',
              rollback: record,
              actions: [{ kind: 'adopt', object: plan }],
            },
    };
    const h = new Harness(operation('r', { policy: { retryLimit: 2 } }));
    h.step();
    const d = h.step({ adapter: restoring });
    expect(d.actions).toEqual([{ kind: 'adopt', object: plan }]);
    expect(h.op.status?.rollback).toEqual(record);
    ended = true;
    h.step({ adapter: restoring });
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.op.status?.attempts).toBe(1);
    expect(h.op.status?.rollback).toMatchObject({ state: 'Done', restore: 'Restored' });
  });

  it('a wait for objects that are not children (recheckAfterMs) asks to look again, on cancel and at the deadline', () => {
    const stoppingHooks: EngineAdapter = {
      ...adapter,
      cancel: () => [
        { kind: 'wait', settling: true, message: 'stopping hook Job m', recheckAfterMs: 5000 },
        { kind: 'wait', settling: true, message: 'and rolling back' },
      ],
    };
    const c = new Harness(operation('c'));
    c.step();
    c.op = { ...c.op, spec: { ...c.op.spec, cancel: true } };
    expect(c.step({ adapter: stoppingHooks }).requeueAfterMs).toBe(5000);
    expect(c.op.status?.phase).toBe('Running');
    const d = new Harness(operation('d', { policy: { activeDeadlineSeconds: 60 } }));
    d.step();
    d.clock.advanceSync(60_000);
    expect(d.step({ adapter: stoppingHooks }).requeueAfterMs).toBe(5000);
    expect(d.op.status?.phase).toBe('Running');
  });

  it('what the adapter asks done before its children exist comes with them (not for a dry run)', () => {
    const label = {
      kind: 'patch' as const,
      child: {} as ChildManifest,
      patch: { metadata: { labels: { a: 'b' } } },
    };
    const preparing: EngineAdapter = {
      ...adapter,
      materialize: (input) => {
        const m = adapter.materialize(input);
        return m.ok ? { ...m, prepare: [label] } : m;
      },
    };
    const h = new Harness(operation('p'));
    expect(h.step({ adapter: preparing })).toMatchObject({ prepare: [label], create: [expect.anything()] });
    const dry = new Harness(operation('q', { policy: { dryRun: true } }));
    expect(dry.step({ adapter: preparing }).prepare).toBeUndefined();
  });

  it('ttlSecondsAfterFinished: requeue until then, then delete the Operation', () => {
    const h = new Harness(operation('b', { policy: { ttlSecondsAfterFinished: 30, dryRun: true } }));
    expect(h.step().requeueAfterMs).toBe(30_000);
    h.clock.advanceSync(29_000);
    expect(h.step()).toMatchObject({ requeueAfterMs: 1000 });
    h.clock.advanceSync(1000);
    expect(h.step().deleteOperation).toBe(true);
  });

  it('ops.vworkspace.io/reconcile re-runs retry-exhausted and fixable failures once; never permanent ones', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { target: instance('app', { capabilities: {} }) };
    h.step();
    expect(h.op.status?.phase).toBe('Failed');
    h.factsOver = {};
    h.annotate({ 'ops.vworkspace.io/reconcile': '1' });
    const d = h.step();
    expect(d.reconcileHandled).toBe('1');
    expect(d.create).toHaveLength(1);
    expect(h.op.status?.phase).toBe('Running');
    expect(h.op.status?.finishedAt).toBeUndefined();
    // The same value again does nothing.
    expect(h.step().reconcileHandled).toBeUndefined();

    const bad = new Harness(operation('c', { parameters: { ttl: 'x' } }));
    bad.step();
    bad.annotate({ 'ops.vworkspace.io/reconcile': 'now' });
    const ignored = bad.step();
    expect(ignored.reconcileHandled).toBe('now');
    expect(bad.op.status?.phase).toBe('Failed');
    expect(ignored.events).toEqual([expect.objectContaining({ reason: 'ReconcileIgnored' })]);
  });

  it('re-runs only a request the webhook signed, for a requester who still holds the type verb', () => {
    const stamps = { createdBy: 'alice', creatorGroups: [], actsFor: [] };
    const asked = { value: '1', requestedBy: 'bob', requesterGroups: ['ops'] };
    const rerunWith = (admission: AdmissionFacts) => {
      const h = new Harness(operation('b'));
      h.factsOver = { target: instance('app', { capabilities: {} }) };
      h.step();
      h.factsOver = { admission };
      h.annotate({ 'ops.vworkspace.io/reconcile': '1' });
      return { h, d: h.step() };
    };
    const ignored = (admission: AdmissionFacts, says: string) => {
      const { h, d } = rerunWith(admission);
      expect(d.create ?? []).toEqual([]);
      expect(d.reconcileHandled).toBe('1');
      expect(h.op.status?.phase).toBe('Failed');
      expect(h.cond('Succeeded')?.reason).toBe('CapabilityMissing');
      expect(d.events).toEqual([
        expect.objectContaining({ reason: 'ReconcileIgnored', note: expect.stringContaining(says) }),
      ]);
      expect(h.step().events).toEqual([]);
    };
    // Written where the webhook did not run: the record does not verify.
    ignored({ ok: false, message: 'its record does not match' }, 'its record does not match');
    // A value the webhook never stamped.
    ignored({ ok: true, stamps }, REQUESTED_BY);
    // The requester lost the verb since.
    ignored(
      {
        ok: true,
        stamps: { ...stamps, reconcile: asked },
        rerun: { user: 'bob', verb: 'backup', allowed: false },
      },
      '"bob", who asked to re-run it (ops.vworkspace.io/reconcile), may no longer backup',
    );
    const { h, d } = rerunWith({
      ok: true,
      stamps: { ...stamps, reconcile: asked },
      rerun: { user: 'bob', verb: 'backup', allowed: true },
    });
    expect(d.create).toHaveLength(1);
    expect(h.op.status?.phase).toBe('Running');
  });
});

describe('decide: issue 14 policies', () => {
  const paused = () => {
    const i = instance();
    i.metadata.annotations = { ...i.metadata.annotations, 'ops.vworkspace.io/paused': 'true' };
    return i;
  };

  it('a paused target: nothing starts (Blocked/TargetPaused); resuming starts it', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { target: paused() };
    const d = h.step({ target: paused() });
    expect(d.create).toBeUndefined();
    expect(h.op.status?.phase).toBe('Blocked');
    expect(h.cond('Blocked')).toMatchObject({ status: 'True', reason: 'TargetPaused' });
    expect(h.cond('Blocked')?.message).toContain(
      'kubectl annotate applicationinstance app -n team ops.vworkspace.io/paused-',
    );
    expect(d.events).toEqual([expect.objectContaining({ reason: 'TargetPaused' })]);
    expect(h.step({ target: paused() }).events).toEqual([]);
    // "false" (or anything but "true") does not pause.
    const notPaused = instance();
    notPaused.metadata.annotations = {
      ...notPaused.metadata.annotations,
      'ops.vworkspace.io/paused': 'false',
    };
    h.factsOver = { target: notPaused };
    expect(h.step({ target: notPaused }).create).toHaveLength(1);
    expect(h.op.status?.phase).toBe('Running');
  });

  it('a paused target: a running child is left alone (no observation, deadline or cancel) until resumed', () => {
    const h = new Harness(operation('b', { policy: { activeDeadlineSeconds: 60 } }));
    h.step();
    h.setChild({ phase: 'Failed', retryable: 'false' });
    h.clock.advanceSync(120_000);
    h.op = { ...h.op, spec: { ...h.op.spec, cancel: true } };
    const d = h.step({ target: paused() });
    expect(d.cancel).toBeUndefined();
    expect(d.requeueAfterMs).toBeUndefined();
    expect(h.op.status?.phase).toBe('Running');
    expect(h.cond('Running')).toMatchObject({ status: 'True', reason: 'JobRunning' });
    expect(h.cond('Succeeded')).toMatchObject({ status: 'Unknown', reason: 'TargetPaused' });
    expect(h.cond('Succeeded')?.message).toContain('spec.cancel is acted on once it resumes');
    // Resumed: the cancel is acted on.
    h.step();
    expect(h.op.status?.phase).toBe('Cancelled');

    // Without a cancel, the deadline that passed meanwhile applies at once.
    const d2 = new Harness(operation('c', { policy: { activeDeadlineSeconds: 60 } }));
    d2.step();
    d2.clock.advanceSync(120_000);
    d2.step({ target: paused() });
    expect(d2.op.status?.phase).toBe('Running');
    d2.step();
    expect(d2.cond('Succeeded')?.reason).toBe('DeadlineExceeded');
  });

  it('a paused target: cancelling an Operation that has not started still ends it', () => {
    const h = new Harness(operation('b', { cancel: true }));
    h.step({ target: paused() });
    expect(h.op.status?.phase).toBe('Cancelled');
  });

  it('preconditionDeadlineSeconds: a Blocked Operation is woken at the deadline and fails naming what it waited for', () => {
    const h = new Harness(
      operation('b', { policy: { requiresApproval: true, preconditionDeadlineSeconds: 600 } }),
    );
    const d = h.step();
    expect(h.op.status?.phase).toBe('Blocked');
    expect(d.requeueAfterMs).toBe(600_000);
    h.clock.advanceSync(600_000);
    const end = h.step();
    expect(h.op.status?.phase).toBe('Failed');
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'PreconditionDeadlineExceeded' });
    expect(h.cond('Succeeded')?.message).toMatch(
      /^policy.preconditionDeadlineSeconds \(600s since creation\) passed while waiting: AwaitingApproval: /,
    );
    expect(end.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'PreconditionDeadlineExceeded' }),
    ]);
  });

  it('preconditionDeadlineSeconds: 0 means the preconditions must hold at once; a satisfied Operation ignores it', () => {
    const h = new Harness(
      operation('b', { policy: { requiresApproval: true, preconditionDeadlineSeconds: 0 } }),
    );
    h.step();
    expect(h.cond('Succeeded')?.reason).toBe('PreconditionDeadlineExceeded');
    const ok = new Harness(operation('c', { policy: { preconditionDeadlineSeconds: 0 } }));
    expect(ok.step().create).toHaveLength(1);
  });

  it('preconditionDeadlineSeconds ends a grace period early (EngineNotInstalled polls discovery meanwhile)', () => {
    const h = new Harness(operation('b', { policy: { preconditionDeadlineSeconds: 40 } }));
    h.factsOver = { engine: { installed: false, missing: ['Backup (velero.io/v1)'] } };
    const d = h.step();
    expect(h.op.status?.phase).toBe('Pending');
    expect(h.cond('Accepted')).toMatchObject({ status: 'False', reason: 'EngineNotInstalled' });
    expect(h.cond('Accepted')?.message).toContain('install Velero');
    expect(d.requeueAfterMs).toBe(15_000);
    h.clock.advanceSync(30_000);
    expect(h.step().requeueAfterMs).toBe(10_000);
    h.clock.advanceSync(10_000);
    h.step();
    expect(h.cond('Succeeded')).toMatchObject({ status: 'False', reason: 'PreconditionDeadlineExceeded' });
  });

  it('EngineNotInstalled recovers when the engine appears within the grace period, else fails and may be re-run', () => {
    const h = new Harness(operation('b'));
    h.factsOver = { engine: { installed: false, missing: ['Backup (velero.io/v1)'] } };
    h.step();
    h.factsOver = {};
    h.clock.advanceSync(15_000);
    expect(h.step().create).toHaveLength(1);

    const late = new Harness(operation('c'));
    late.factsOver = { engine: { installed: false, missing: ['Backup (velero.io/v1)'] } };
    late.step();
    late.clock.advanceSync(5 * 60_000);
    late.step();
    expect(late.op.status?.phase).toBe('Failed');
    expect(late.cond('Succeeded')?.reason).toBe('EngineNotInstalled');
    late.factsOver = {};
    late.annotate({ 'ops.vworkspace.io/reconcile': '1' });
    expect(late.step().create).toHaveLength(1);
  });

  it('separate TTLs after success and after failure, ttlSecondsAfterFinished the common default', () => {
    const ttl = (policy: Record<string, number>, failed: boolean) => {
      const h = new Harness(operation('b', { policy: { ...policy, dryRun: !failed } }));
      if (failed) h.factsOver = { target: instance('app', { capabilities: {} }) };
      return h.step().requeueAfterMs;
    };
    const both = {
      ttlSecondsAfterSucceed: 10,
      ttlSecondsAfterUnsuccessfulCompletion: 3600,
      ttlSecondsAfterFinished: 60,
    };
    expect(ttl(both, false)).toBe(10_000);
    expect(ttl(both, true)).toBe(3_600_000);
    expect(ttl({ ttlSecondsAfterFinished: 60 }, true)).toBe(60_000);
    expect(ttl({ ttlSecondsAfterSucceed: 10 }, true)).toBeUndefined();
  });

  it('records status.inputs once and materializes with the parameters read', () => {
    const backup = ran(operation('nightly'), 'Succeeded', { outputs: { backupName: 'nightly-abc' } });
    const h = new Harness(operation('r', { type: 'Restore' }));
    h.factsOver = { operations: [backup] };
    const d = h.step();
    expect(h.op.status?.inputs).toEqual([
      expect.objectContaining({ operation: 'nightly', parameters: { backupName: 'nightly-abc' } }),
    ]);
    expect(
      JSON.parse((d.create![0] as unknown as { data: { parameters: string } }).data.parameters),
    ).toMatchObject({
      backupName: 'nightly-abc',
    });
  });
});
