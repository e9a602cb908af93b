import { describe, expect, it } from 'vitest';
import {
  anInput,
  builtinWith,
  materialized,
  withStatus,
  workflowNode,
} from '../../../test/support/builders/engines.ts';
import type { EffectiveTemplate } from '../catalog/template.ts';
import { workflowAdapter, workflowTemplateServiceAccounts } from './workflow.ts';

const input = (
  parameters: Record<string, unknown> = { workflowTemplateRef: { name: 'db-maintenance' } },
  template?: EffectiveTemplate,
) =>
  anInput({
    name: 'vacuum',
    type: 'Runbook',
    engine: 'workflow',
    parameters,
    ...(template ? { template } : {}),
  });

function workflowWith(status: Record<string, unknown>) {
  const [wf] = materialized(workflowAdapter.materialize(input()));
  if (!wf) throw new Error('no child');
  return withStatus(wf, status);
}

describe('workflow materialize', () => {
  it('runs the WorkflowTemplate with the arguments as parameters, owned by the Operation', () => {
    const [wf] = materialized(
      workflowAdapter.materialize(
        input(
          {
            workflowTemplateRef: { name: 'db-maintenance' },
            arguments: { table: 'users', database: 'main' },
            serviceAccountName: 'wf',
          },
          builtinWith('Runbook', 'workflow', { allowedServiceAccounts: ['wf'] }),
        ),
      ),
    );
    expect(wf).toMatchObject({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Workflow',
      metadata: {
        namespace: 'team-a',
        ownerReferences: [{ kind: 'Operation', name: 'vacuum', controller: true }],
      },
      spec: {
        workflowTemplateRef: { name: 'db-maintenance' },
        arguments: {
          parameters: [
            { name: 'database', value: 'main' },
            { name: 'table', value: 'users' },
          ],
        },
        serviceAccountName: 'wf',
      },
    });
    expect(wf?.spec).not.toHaveProperty('workflowTemplateRef.clusterScope');
  });

  it('refers to a ClusterWorkflowTemplate when clusterScope is true and the template allows it', () => {
    const ref = { workflowTemplateRef: { name: 'x', clusterScope: true } };
    const allowing = builtinWith('Runbook', 'workflow', { allowClusterWorkflowTemplates: true });
    const [wf] = materialized(workflowAdapter.materialize(input(ref, allowing)));
    expect(wf?.spec).toMatchObject({ workflowTemplateRef: { name: 'x', clusterScope: true } });
    expect(wf?.spec).not.toHaveProperty('arguments');
    const refused = workflowAdapter.materialize(input(ref));
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!refused.ok)
      expect(refused.message).toMatch(/^spec\.parameters\.workflowTemplateRef\.clusterScope: /);
  });

  it("runs as the template's first allowed ServiceAccount when unset (never the WorkflowTemplate's), and refuses one outside the list", () => {
    const [wf] = materialized(workflowAdapter.materialize(input()));
    expect(wf?.spec).toMatchObject({ serviceAccountName: 'vworkspace-runner' });
    const refused = workflowAdapter.materialize(
      input({ workflowTemplateRef: { name: 'x' }, serviceAccountName: 'argo-admin' }),
    );
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
  });
});

describe("the WorkflowTemplate's own ServiceAccounts", () => {
  it('collects spec, executor and template-level accounts', () => {
    expect(
      workflowTemplateServiceAccounts({
        spec: {
          serviceAccountName: 'a',
          executor: { serviceAccountName: 'b' },
          templates: [
            { name: 'main', serviceAccountName: 'c' },
            { name: 'x', executor: { serviceAccountName: 'a' } },
          ],
        },
      }),
    ).toEqual(['a', 'b', 'c']);
  });

  it('refuses a WorkflowTemplate naming an account outside allowedServiceAccounts, and admits allowed ones', () => {
    const withAccounts = (accounts: string[]) => {
      const i = input();
      return workflowAdapter.materialize({
        ...i,
        env: { ...i.env, workflowTemplateServiceAccounts: accounts },
      });
    };
    const refused = withAccounts(['vworkspace-runner', 'argo-admin']);
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    expect(!refused.ok && refused.message).toContain(
      'WorkflowTemplate db-maintenance: ServiceAccount "argo-admin"',
    );
    expect(withAccounts(['vworkspace-runner']).ok).toBe(true);
  });
});

describe('workflow observe', () => {
  it.each([
    [{}, 'Running', 'WorkflowRunning'],
    [{ phase: 'Pending' }, 'Running', 'WorkflowRunning'],
    [{ phase: 'Running', progress: '1/3' }, 'Running', 'WorkflowRunning'],
    [{ phase: 'Succeeded' }, 'Succeeded', 'WorkflowSucceeded'],
    [{ phase: 'Failed', message: 'child failed' }, 'Failed', 'WorkflowFailed'],
    [{ phase: 'Error', message: 'invalid spec' }, 'Failed', 'WorkflowFailed'],
  ])('%j ⇒ %s/%s', (status, phase, reason) => {
    const o = workflowAdapter.observe([workflowWith(status)], input());
    expect(o).toMatchObject({ phase, reason });
    expect(o.outputs?.workflowName).toMatch(/^vacuum-/);
  });

  it('names the failed step, preferring the leaf that ran over its failed parents', () => {
    const o = workflowAdapter.observe(
      [
        workflowWith({
          phase: 'Failed',
          nodes: {
            root: workflowNode('root', {
              type: 'Steps',
              phase: 'Failed',
              message: 'child failed',
              startedAt: '2026-01-01T00:00:00Z',
            }),
            ok: workflowNode('ok', { displayName: 'dump', startedAt: '2026-01-01T00:00:01Z' }),
            bad: workflowNode('bad', {
              displayName: 'vacuum-table',
              phase: 'Failed',
              message: 'exit code 3',
              startedAt: '2026-01-01T00:00:02Z',
            }),
          },
        }),
      ],
      input(),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'WorkflowNodeFailed' });
    expect(o.message).toContain('node vacuum-table failed: exit code 3');
  });

  it('is Running while the Workflow is not visible yet', () => {
    expect(workflowAdapter.observe([], input()).phase).toBe('Running');
  });
});

describe('workflow cancel', () => {
  const created = (template?: EffectiveTemplate) => {
    const [wf] = materialized(workflowAdapter.materialize(input(undefined, template)));
    if (!wf) throw new Error('no child');
    return withStatus(wf, { phase: 'Running' });
  };

  it("stops the Workflow with spec.shutdown: Stop by default, so the WorkflowTemplate's exit handler runs", () => {
    const wf = created();
    expect(wf.metadata?.annotations?.['ops.vworkspace.io/shutdown']).toBe('Stop');
    expect(workflowAdapter.cancel([wf])).toMatchObject([
      {
        kind: 'patch',
        child: { metadata: { name: wf.metadata?.name } },
        patch: { spec: { shutdown: 'Stop' } },
      },
    ]);
  });

  it('terminates it (no exit handler) when the template says workflowShutdown: Terminate', () => {
    const wf = created(builtinWith('Runbook', 'workflow', { workflowShutdown: 'Terminate' }));
    expect(wf.metadata?.annotations?.['ops.vworkspace.io/shutdown']).toBe('Terminate');
    expect(workflowAdapter.cancel([wf])).toMatchObject([
      { kind: 'patch', patch: { spec: { shutdown: 'Terminate' } } },
    ]);
  });

  it('follows what the Workflow recorded at creation, not the template of today', () => {
    const stop = created(builtinWith('Runbook', 'workflow', { workflowShutdown: 'Stop' }));
    expect(workflowAdapter.cancel([stop])).toMatchObject([{ patch: { spec: { shutdown: 'Stop' } } }]);
    // Created before templates chose (no annotation), or the annotation is not a strategy: Terminate,
    // what cancel did then.
    const old = created();
    delete old.metadata?.annotations?.['ops.vworkspace.io/shutdown'];
    expect(workflowAdapter.cancel([old])).toMatchObject([{ patch: { spec: { shutdown: 'Terminate' } } }]);
    const odd = created();
    odd.metadata = { ...odd.metadata, annotations: { 'ops.vworkspace.io/shutdown': 'Kill' } };
    expect(workflowAdapter.cancel([odd])).toMatchObject([{ patch: { spec: { shutdown: 'Terminate' } } }]);
  });

  it('keeps the strategy of a Workflow already shutting down (the patch repeats until it has stopped)', () => {
    const wf = created();
    const terminating = { ...wf, spec: { ...(wf as { spec?: object }).spec, shutdown: 'Terminate' } };
    expect(workflowAdapter.cancel([terminating])).toMatchObject([
      { kind: 'patch', patch: { spec: { shutdown: 'Terminate' } } },
    ]);
    const stopping = { ...wf, spec: { ...(wf as { spec?: object }).spec, shutdown: 'Stop' } };
    expect(workflowAdapter.cancel([stopping])).toMatchObject([{ patch: { spec: { shutdown: 'Stop' } } }]);
  });
});
