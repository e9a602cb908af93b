// The Operation controller on a real API server (admin identity, so every access review passes), with a
// fake adapter whose child is a ConfigMap the test moves by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeAdapter } from '../../support/builders/operation.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { Api, cond, eventually, type RunningController, startController } from './support.ts';

describe('Operation controller (fake adapter, admin identity)', () => {
  const kc = adminKubeConfig();
  const api = new Api(kc);
  const fake = fakeAdapter('workflow');
  const fakeJob = fakeAdapter('job');
  let ctl: RunningController;
  let ns: string;

  beforeAll(async () => {
    ctl = startController(kc, (e) => (e === 'workflow' ? fake : e === 'job' ? fakeJob : undefined));
  });
  afterAll(async () => {
    await ctl.stop();
  });

  const phase = (name: string, want: string) => async () => {
    const op = await api.getOperation(ns, name);
    return op.status?.phase === want ? op : undefined;
  };

  it('missing capability: Accepted=False/CapabilityMissing, Failed, no child', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { restore: 'workflow' }, true);
    await api.createOperation(ns, 'nocap', { type: 'Backup' });
    const op = await eventually('Failed', phase('nocap', 'Failed'));
    expect(cond(op, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'CapabilityMissing',
      observedGeneration: 1,
    });
    expect(cond(op, 'Succeeded')).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(cond(op, 'Accepted')?.message).toContain('ops.vworkspace.io/backup: workflow');
    expect(await api.configMaps(ns)).toEqual([]);
  });

  it('Blocked/TargetNotReady is released when the instance becomes Ready; child moved to Succeeded ⇒ outputs', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { backup: 'workflow', restore: 'workflow' }, false);
    await api.createOperation(ns, 'restore', { type: 'Restore' });
    const blocked = await eventually('Blocked', phase('restore', 'Blocked'));
    expect(cond(blocked, 'Blocked')).toMatchObject({ status: 'True', reason: 'TargetNotReady' });
    expect(cond(blocked, 'Succeeded')).toMatchObject({ status: 'Unknown', reason: 'TargetNotReady' });
    expect(await api.configMaps(ns)).toEqual([]);

    await api.setReady(ns, 'app', true);
    const running = await eventually('Running', phase('restore', 'Running'));
    expect(running.status).toMatchObject({ attempts: 1, template: 'fake-restore' });
    expect(cond(running, 'Accepted')).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
    expect(cond(running, 'Running')).toMatchObject({ status: 'True', reason: 'JobRunning' });
    const children = await api.configMaps(ns);
    expect(children.map((c) => c.metadata?.name)).toEqual([running.status?.childRef?.name]);
    expect(children[0]?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Operation', name: 'restore' });

    await api.setChild(ns, running.status!.childRef!.name, { phase: 'Succeeded', output: 'restored-42' });
    const done = await eventually('Succeeded', phase('restore', 'Succeeded'));
    expect(done.status?.outputs).toEqual({ result: 'restored-42' });
    expect(cond(done, 'Succeeded')).toMatchObject({ status: 'True', reason: 'JobSucceeded' });
    expect(done.status?.finishedAt).toBeDefined();
    // Counted right after the status write and its Events: the status can be seen first.
    await eventually('vworkspace_operations_total counts the success', async () => {
      const total = await ctl.metrics.registry.getSingleMetricAsString('vworkspace_operations_total');
      return total.includes('type="Restore",engine="workflow",result="succeeded"} 1') || undefined;
    });
  });

  it('conflicting Operations queue FIFO with queuePosition and start in order', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { backup: 'workflow', restore: 'workflow' }, true);
    await api.createOperation(ns, 'q1', { type: 'Restore' });
    const first = await eventually('q1 Running', phase('q1', 'Running'));
    await api.createOperation(ns, 'q2', { type: 'Backup' });
    await api.createOperation(ns, 'q3', { type: 'Backup' });
    const q3 = await eventually('q3 queued 2nd', async () => {
      const op = await api.getOperation(ns, 'q3');
      return op.status?.queuePosition === 2 ? op : undefined;
    });
    expect(cond(q3, 'Blocked')).toMatchObject({ status: 'True', reason: 'ConflictingOperation' });
    const q2 = await api.getOperation(ns, 'q2');
    expect(q2.status).toMatchObject({ phase: 'Blocked', queuePosition: 1 });

    await api.setChild(ns, first.status!.childRef!.name, { phase: 'Succeeded' });
    await eventually('q2 Running', phase('q2', 'Running'));
    // Backup conflicts with Backup: q3 now waits for q2, first in line.
    await eventually('q3 first in line', async () => {
      const op = await api.getOperation(ns, 'q3');
      return op.status?.phase === 'Blocked' && op.status.queuePosition === 1 ? op : undefined;
    });
    expect((await api.configMaps(ns)).length).toBe(2);
  });

  it('dryRun writes status.plan and creates nothing', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'plan', { type: 'Backup', policy: { dryRun: true } });
    const op = await eventually('Succeeded', phase('plan', 'Succeeded'));
    expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'DryRunCompleted' });
    const plan = op.status?.plan as { children: { kind: string; metadata: { name: string } }[] };
    expect(plan.children[0]).toMatchObject({ kind: 'ConfigMap' });
    expect(await api.configMaps(ns)).toEqual([]);
  });

  it('cancel stops the running child and ends Cancelled', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'stopme', { type: 'Backup' });
    await eventually('Running', phase('stopme', 'Running'));
    await api.patchOperation(ns, 'stopme', { spec: { cancel: true } });
    const op = await eventually('Cancelled', phase('stopme', 'Cancelled'));
    expect(cond(op, 'Succeeded')).toMatchObject({ status: 'False', reason: 'Cancelled' });
    await eventually('child deleted', async () => (await api.configMaps(ns)).length === 0);
  });

  it('approval: AwaitingApproval until the annotation is set', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'ask', { type: 'Backup', policy: { requiresApproval: true } });
    const op = await eventually('Blocked', phase('ask', 'Blocked'));
    expect(cond(op, 'Blocked')).toMatchObject({ reason: 'AwaitingApproval' });
    await api.patchOperation(ns, 'ask', {
      metadata: { annotations: { 'ops.vworkspace.io/approve': 'true' } },
    });
    await eventually('Running', phase('ask', 'Running'));
  });

  it('MissingServiceAccount is released when the runner ServiceAccount appears (narrow watch)', async () => {
    ns = await createNamespace(kc, 'op');
    await api.createInstance(ns, 'app', { runcommand: 'job' }, true);
    await api.createOperation(ns, 'cmd', {
      type: 'RunCommand',
      engine: 'job',
      parameters: { command: ['true'] },
    });
    const op = await eventually('Blocked', phase('cmd', 'Blocked'));
    expect(cond(op, 'Blocked')).toMatchObject({ reason: 'MissingServiceAccount' });
    expect(cond(op, 'Blocked')?.message).toContain('vworkspace-runner');
    await api.client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/serviceaccounts`,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vworkspace-runner' } },
    });
    await eventually('Running', phase('cmd', 'Running'));
  });
});
