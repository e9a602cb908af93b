// Issue 14 on the real API server, the Operation controller with admin identity and fake adapters:
// results flow between Operations (spec.parametersFrom, a template's parametersFrom default, template
// dependencies) and waiting ends in conditions that say what to do (EngineNotInstalled that recovers when
// the CRD appears, preconditionDeadlineSeconds, separate TTLs, ops.vworkspace.io/paused,
// TargetGenerationMatches).
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound, resourcePath } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OperationSpec } from '../../../operator/src/api/operation.ts';
import type { Template } from '../../../operator/src/catalog/template.ts';
import { standardPreconditions } from '../../../operator/src/catalog/template.ts';
import type { EngineAdapter } from '../../../operator/src/engines/types.ts';
import { fakeAdapter } from '../../support/builders/operation.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { Api, cond, eventually, type RunningController, startController } from './support.ts';

const WIDGET = { group: 'flow.vworkspace.test', version: 'v1', plural: 'widgets', kind: 'Widget' };
const note = { type: 'object', properties: { note: { type: 'string' } } };
const template = (name: string, t: Partial<Template>): Template => ({
  name,
  type: 'Backup',
  engine: 'workflow',
  inputSchema: note,
  rbacProfile: 'runbook.workflow',
  preconditions: standardPreconditions(),
  ...t,
});
const TEMPLATES: Template[] = [
  template('flow-backup', { outputSchema: { type: 'object', properties: { result: { type: 'string' } } } }),
  template('flow-restore', {
    type: 'Restore',
    inputSchema: { ...note, required: ['note'] },
    parametersFrom: [
      { latest: { type: 'Backup', engine: 'workflow' }, outputs: [{ output: 'result', parameter: 'note' }] },
    ],
  }),
  template('flow-upgrade', {
    type: 'Upgrade',
    dependencies: [{ type: 'Backup', engine: 'workflow', maxAge: '1h' }],
  }),
  template('flow-guarded', { preconditions: standardPreconditions([{ name: 'TargetGenerationMatches' }]) }),
  template('flow-widget', { engine: 'snapshot', rbacProfile: 'backup.snapshot' }),
];

/** An adapter whose child is a Widget, a kind no API server serves until the test installs its CRD. */
function widgetAdapter(): EngineAdapter {
  return {
    engine: 'snapshot',
    types: ['Backup'],
    childKinds: [
      { apiVersion: `${WIDGET.group}/${WIDGET.version}`, kind: WIDGET.kind, plural: WIDGET.plural },
    ],
    materialize: ({ op }) => ({
      ok: true,
      children: [
        {
          apiVersion: `${WIDGET.group}/${WIDGET.version}`,
          kind: WIDGET.kind,
          metadata: { name: `${op.metadata.name}-w`, namespace: op.metadata.namespace ?? '' },
        },
      ],
    }),
    observe: () => ({ phase: 'Running', reason: 'VolumeSnapshotInProgress', message: 'a widget' }),
    cancel: () => [],
  };
}

describe('Operation results flow and waiting that says what to do', () => {
  const kc = adminKubeConfig();
  const api = new Api(kc);
  const fake = fakeAdapter('workflow');
  const widgets = widgetAdapter();
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${WIDGET.plural}.${WIDGET.group}`;
  let ctl: RunningController;

  beforeAll(() => {
    ctl = startController(kc, (e) => (e === 'workflow' ? fake : e === 'snapshot' ? widgets : undefined), {
      templates: { templates: () => TEMPLATES },
      engineRecheckMs: 300,
    });
  });
  afterAll(async () => {
    await ctl.stop();
    await api.client.request({ method: 'DELETE', path: crdPath }).catch(() => undefined);
  });

  const op = (ns: string, name: string, t: string, spec: Partial<OperationSpec> = {}) => {
    const { type, engine } = TEMPLATES.find((x) => x.name === t)!;
    return api.createOperation(ns, name, { template: t, type, engine, ...spec });
  };
  const phase = (ns: string, name: string, want: string, reason?: string) => async () => {
    const o = await api.getOperation(ns, name);
    if (o.status?.phase !== want) return undefined;
    return reason === undefined || cond(o, 'Succeeded')?.reason === reason ? o : undefined;
  };
  const childrenOf = async (ns: string, name: string) =>
    (await api.configMaps(ns)).filter((c) => c.metadata?.ownerReferences?.[0]?.name === name);
  /** Runs a flow-backup to Succeeded with `output` as outputs.result. */
  const backup = async (ns: string, name: string, output: string, target = 'app') => {
    await op(ns, name, 'flow-backup', { targetRef: { name: target } });
    const running = await eventually(`${name} Running`, phase(ns, name, 'Running'));
    await api.setChild(ns, running.status!.childRef!.name, { phase: 'Succeeded', output });
    return eventually(`${name} Succeeded`, phase(ns, name, 'Succeeded'));
  };
  const parametersOf = (child: KubernetesObject | undefined) =>
    JSON.parse((child as { data?: { parameters?: string } } | undefined)?.data?.parameters ?? '{}');

  it('operationRef: waits Blocked/DependencyNotMet while the source runs, then reads its outputs once into status.inputs', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow', restore: 'workflow' }, true);
    await op(ns, 'b1', 'flow-backup');
    const b1 = await eventually('b1 Running', phase(ns, 'b1', 'Running'));
    await op(ns, 'r1', 'flow-restore', {
      parametersFrom: [{ operationRef: { name: 'b1' }, outputs: [{ output: 'result', parameter: 'note' }] }],
    });
    const waiting = await eventually('r1 Blocked', phase(ns, 'r1', 'Blocked'));
    expect(cond(waiting, 'Blocked')).toMatchObject({ status: 'True', reason: 'DependencyNotMet' });
    expect(cond(waiting, 'Blocked')?.message).toContain('spec.parametersFrom[0]: Operation b1 is Running');
    expect(await childrenOf(ns, 'r1')).toEqual([]);

    await api.setChild(ns, b1.status!.childRef!.name, { phase: 'Succeeded', output: 'snap-1' });
    const r1 = await eventually('r1 Running', phase(ns, 'r1', 'Running'));
    expect(r1.status?.inputs).toEqual([
      expect.objectContaining({
        from: 'spec.parametersFrom[0]',
        operation: 'b1',
        uid: b1.metadata.uid,
        type: 'Backup',
        engine: 'workflow',
        parameters: { note: 'snap-1' },
      }),
    ]);
    expect(parametersOf((await childrenOf(ns, 'r1'))[0])).toMatchObject({ note: 'snap-1' });
  });

  it('operationRef may name an Operation on another instance of the namespace, and waits for it too', async () => {
    // What decide reads is looked up by target and by the names parametersFrom gives, not by scanning the
    // namespace: a source on another target must still be found.
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { restore: 'workflow' }, true);
    await api.createInstance(ns, 'other', { backup: 'workflow' }, true);
    await op(ns, 'elsewhere', 'flow-backup', { targetRef: { name: 'other' } });
    const source = await eventually('elsewhere Running', phase(ns, 'elsewhere', 'Running'));
    await op(ns, 'r2', 'flow-restore', {
      parametersFrom: [
        { operationRef: { name: 'elsewhere' }, outputs: [{ output: 'result', parameter: 'note' }] },
      ],
    });
    const waiting = await eventually('r2 Blocked', phase(ns, 'r2', 'Blocked'));
    expect(cond(waiting, 'Blocked')?.message).toContain(
      'spec.parametersFrom[0]: Operation elsewhere is Running',
    );
    await api.setChild(ns, source.status!.childRef!.name, { phase: 'Succeeded', output: 'from-other' });
    const r2 = await eventually('r2 Running', phase(ns, 'r2', 'Running'));
    expect(r2.status?.inputs).toEqual([
      expect.objectContaining({
        operation: 'elsewhere',
        uid: source.metadata.uid,
        parameters: { note: 'from-other' },
      }),
    ]);
    expect(parametersOf((await childrenOf(ns, 'r2'))[0])).toMatchObject({ note: 'from-other' });
  });

  it("the template's default: a Restore without the parameter restores the target's latest Succeeded Backup", async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow', restore: 'workflow' }, true);
    await api.createInstance(ns, 'other', { backup: 'workflow' }, true);
    await backup(ns, 'backup-1', 'data-1');
    const second = await backup(ns, 'backup-2', 'data-2');
    await backup(ns, 'elsewhere', 'not-this', 'other');
    await op(ns, 'restore', 'flow-restore', { policy: { requireReady: false } });
    const r = await eventually('restore Running', phase(ns, 'restore', 'Running'));
    expect(r.status?.inputs).toEqual([
      expect.objectContaining({
        from: 'template flow-restore parametersFrom[0]',
        operation: 'backup-2',
        uid: second.metadata.uid,
        parameters: { note: 'data-2' },
      }),
    ]);
    expect(parametersOf((await childrenOf(ns, 'restore'))[0])).toMatchObject({ note: 'data-2' });
  });

  it('with no Backup to read, the Restore fails Accepted=False/InputsUnavailable saying what to do', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { restore: 'workflow' }, true);
    await op(ns, 'restore', 'flow-restore');
    const r = await eventually('Failed', phase(ns, 'restore', 'Failed', 'InputsUnavailable'));
    expect(cond(r, 'Accepted')).toMatchObject({ status: 'False', reason: 'InputsUnavailable' });
    expect(cond(r, 'Accepted')?.message).toContain('run one first, or set spec.parameters.note');
    expect(await childrenOf(ns, 'restore')).toEqual([]);
  });

  it('a template dependency: the Upgrade waits Blocked/DependencyNotMet, saying what to run, until a fresh Backup succeeds', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow', upgrade: 'workflow' }, true);
    await op(ns, 'up', 'flow-upgrade');
    const blocked = await eventually('Blocked', phase(ns, 'up', 'Blocked'));
    expect(cond(blocked, 'Blocked')).toMatchObject({ status: 'True', reason: 'DependencyNotMet' });
    expect(cond(blocked, 'Blocked')?.message).toContain(
      'run one (an Operation with type: Backup, engine: workflow, targetRef.name: app)',
    );
    expect(await childrenOf(ns, 'up')).toEqual([]);
    await backup(ns, 'pre-upgrade', 'x');
    await eventually('up Running', phase(ns, 'up', 'Running'));
  });

  it('EngineNotInstalled: Pending with what to install, then it starts by itself once the CRD is served', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'snapshot' }, true);
    await op(ns, 'w', 'flow-widget');
    const pending = await eventually('EngineNotInstalled', async () => {
      const o = await api.getOperation(ns, 'w');
      return cond(o, 'Accepted')?.reason === 'EngineNotInstalled' ? o : undefined;
    });
    expect(pending.status?.phase).toBe('Pending');
    expect(cond(pending, 'Accepted')?.message).toMatch(
      /^engine snapshot is not installed: the API server does not serve Widget \(flow\.vworkspace\.test\/v1\); install /,
    );
    expect(cond(pending, 'Succeeded')).toMatchObject({ status: 'Unknown', reason: 'EngineNotInstalled' });

    await api.client.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${WIDGET.plural}.${WIDGET.group}` },
        spec: {
          group: WIDGET.group,
          scope: 'Namespaced',
          names: { plural: WIDGET.plural, singular: 'widget', kind: WIDGET.kind, listKind: 'WidgetList' },
          versions: [
            {
              name: WIDGET.version,
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      },
    });
    const running = await eventually('w Running', phase(ns, 'w', 'Running'));
    expect(cond(running, 'Accepted')).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
    const child = await api.client.request<KubernetesObject>({
      method: 'GET',
      path: resourcePath({ ...WIDGET, namespace: ns }, running.status!.childRef!.name),
    });
    expect(child.metadata?.labels?.['ops.vworkspace.io/operation']).toBe('w');
  });

  it('policy.preconditionDeadlineSeconds: waiting ends Failed/PreconditionDeadlineExceeded, naming what it waited for', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await op(ns, 'late', 'flow-backup', {
      policy: { requiresApproval: true, preconditionDeadlineSeconds: 2 },
    });
    const failed = await eventually('Failed', phase(ns, 'late', 'Failed', 'PreconditionDeadlineExceeded'));
    expect(cond(failed, 'Succeeded')?.message).toMatch(
      /^policy\.preconditionDeadlineSeconds \(2s since creation\) passed while waiting: AwaitingApproval: /,
    );
    expect(await childrenOf(ns, 'late')).toEqual([]);
  });

  it('separate TTLs: a failure and a success are each deleted after their own TTL, not the other one', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createInstance(ns, 'no-capability', {}, true);
    await op(ns, 'fails', 'flow-backup', {
      targetRef: { name: 'no-capability' },
      policy: { ttlSecondsAfterUnsuccessfulCompletion: 1, ttlSecondsAfterSucceed: 86400 },
    });
    await op(ns, 'succeeds', 'flow-backup', {
      policy: { dryRun: true, ttlSecondsAfterSucceed: 1, ttlSecondsAfterUnsuccessfulCompletion: 86400 },
    });
    for (const name of ['fails', 'succeeds']) {
      await eventually(`${name} deleted by its TTL`, async () => {
        try {
          await api.getOperation(ns, name);
          return undefined;
        } catch (err) {
          return isNotFound(err) || undefined;
        }
      });
    }
  });

  it('ops.vworkspace.io/paused: nothing starts on a paused instance; a running child is not followed until resumed', async () => {
    const ns = await createNamespace(kc, 'flow');
    // Paused from its creation: pausing it just before creating the Operation raced the operator's cache
    // (on a loaded machine the Operation could start before the pause was seen, and never be Blocked).
    await api.createInstance(ns, 'app', { backup: 'workflow', paused: 'true' }, true);
    await op(ns, 'p', 'flow-backup');
    const blocked = await eventually('Blocked/TargetPaused', async () => {
      const o = await api.getOperation(ns, 'p');
      return o.status?.phase === 'Blocked' && cond(o, 'Blocked')?.reason === 'TargetPaused' ? o : undefined;
    });
    expect(cond(blocked, 'Blocked')).toMatchObject({ status: 'True', reason: 'TargetPaused' });
    expect(await childrenOf(ns, 'p')).toEqual([]);

    await api.annotateInstance(ns, 'app', { 'ops.vworkspace.io/paused': null });
    const running = await eventually('Running', phase(ns, 'p', 'Running'));

    await api.annotateInstance(ns, 'app', { 'ops.vworkspace.io/paused': 'true' });
    await eventually('Succeeded=Unknown/TargetPaused', async () => {
      const o = await api.getOperation(ns, 'p');
      return cond(o, 'Succeeded')?.reason === 'TargetPaused' || undefined;
    });
    await api.setChild(ns, running.status!.childRef!.name, {
      phase: 'Succeeded',
      output: 'ignored-while-paused',
    });
    // A reconcile after the child's change, acknowledged: the child was not followed.
    await api.patchOperation(ns, 'p', {
      metadata: { annotations: { 'ops.vworkspace.io/reconcile': 'after' } },
    });
    const still = await eventually('reconcile handled', async () => {
      const o = await api.getOperation(ns, 'p');
      return o.metadata.annotations?.['ops.vworkspace.io/reconcile-handled'] === 'after' ? o : undefined;
    });
    expect(still.status?.phase).toBe('Running');
    expect(still.status?.outputs).toBeUndefined();

    await api.annotateInstance(ns, 'app', { 'ops.vworkspace.io/paused': null });
    const done = await eventually('Succeeded', phase(ns, 'p', 'Succeeded'));
    expect(done.status?.outputs).toEqual({ result: 'ignored-while-paused' });
  });

  it('TargetGenerationMatches: waits Blocked/TargetGenerationMismatch until the instance status observed its spec', async () => {
    const ns = await createNamespace(kc, 'flow');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.observeGeneration(ns, 'app', 1);
    await op(ns, 'g', 'flow-guarded');
    const blocked = await eventually('Blocked', phase(ns, 'g', 'Blocked'));
    expect(cond(blocked, 'Blocked')).toMatchObject({ status: 'True', reason: 'TargetGenerationMismatch' });
    expect(cond(blocked, 'Blocked')?.message).toMatch(
      /status\.observedGeneration 0 lags metadata\.generation 1/,
    );
    await api.observeGeneration(ns, 'app');
    await eventually('g Running', phase(ns, 'g', 'Running'));
  });
});
