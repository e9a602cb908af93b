// Item 2 of the threat model: spec.parameters.serviceAccountName (RunCommand's job engine, Runbook's
// workflow engine) must not let a requester run as any ServiceAccount of the namespace. A template lists
// the ServiceAccounts it allows (default: the runner only); another one is admitted only from a requester
// who could run pods as it themselves (create pods, or impersonate it), and the reconciler refuses it for
// an Operation the webhook never judged. A Runbook reaches ClusterWorkflowTemplates only through a template
// that allows it.

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { workflowRunbook } from '../../../operator/src/catalog/templates/workflow-runbook.ts';
import { startWorld, type World } from './harness.ts';
import { adminServiceAccount, childrenOf, jobsIn, settled, unselected } from './support.ts';

const ADMIN_SA = 'ops-admin';
const catalog = YAML.stringify({
  templates: [{ ...workflowRunbook, name: 'platform-runbook', allowClusterWorkflowTemplates: true }],
});

const runCommand = (serviceAccountName?: string) => ({
  type: 'RunCommand',
  engine: 'job',
  targetRef: { name: 'shop' },
  parameters: { command: ['id'], ...(serviceAccountName ? { serviceAccountName } : {}) },
});

const runbook = (parameters: Record<string, unknown>, template?: string) => ({
  type: 'Runbook',
  engine: 'workflow',
  targetRef: { name: 'shop' },
  ...(template ? { template } : {}),
  parameters,
});

const workflowsIn = (ns: string) => `/apis/argoproj.io/v1alpha1/namespaces/${ns}/workflows`;
const podSpecOf = (job: KubernetesObject | undefined) =>
  (job as KubernetesObject & { spec: { template: { spec: { serviceAccountName: string } } } }).spec.template
    .spec;

describe('a requester runs only as the ServiceAccounts the template allows, or as RBAC lets them', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ catalog });
    for (const ns of w.namespaces) {
      await w.instance(ns, 'shop', { runcommand: 'job', runbook: 'workflow' });
      await w.grantProfile('runCommand.job', ns);
      await w.grantProfile('runbook.workflow', ns);
      await adminServiceAccount(w, ns, ADMIN_SA);
      const operate = [
        { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
        {
          apiGroups: ['apps.vworkspace.io'],
          resources: ['applicationinstances'],
          verbs: ['runcommand', 'runbook'],
        },
      ];
      await w.grant('alice', ns, operate);
      // bob may create pods: he could run as any ServiceAccount of the namespace without the operator.
      await w.grant('bob', ns, [...operate, { apiGroups: [''], resources: ['pods'], verbs: ['create'] }]);
    }
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses alice a cluster-admin ServiceAccount at spec.parameters.serviceAccountName', async () => {
    const [a] = w.namespaces;
    const d = await w.denial(w.operation(w.as('alice'), a, 'as-admin', runCommand(ADMIN_SA)));
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters.serviceAccountName']);
    expect(d.message).toContain(`ServiceAccount "${ADMIN_SA}" is not allowed by template job-runcommand`);
    expect(d.message).toContain(
      `user "alice" may neither create pods nor impersonate serviceaccounts/${ADMIN_SA}`,
    );
  });

  it('refuses alice another ServiceAccount for a Runbook too', async () => {
    const [a] = w.namespaces;
    const d = await w.denial(
      w.operation(
        w.as('alice'),
        a,
        'wf-as-admin',
        runbook({ workflowTemplateRef: { name: 'x' }, serviceAccountName: ADMIN_SA }),
      ),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters.serviceAccountName']);
  });

  it('admits bob, who may create pods, and runs his Job as the ServiceAccount he named', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('bob'), a, 'bob-as-admin', runCommand(ADMIN_SA));
    const out = await settled(w, a, 'bob-as-admin');
    expect(out.op.status?.phase).toBe('Running');
    const [job] = await childrenOf(w, jobsIn(a), 'bob-as-admin');
    expect(podSpecOf(job).serviceAccountName).toBe(ADMIN_SA);
  });

  it('runs alice as the runner ServiceAccount by default', async () => {
    const [a] = w.namespaces;
    await w.operation(w.as('alice'), a, 'alice-default', runCommand());
    await settled(w, a, 'alice-default');
    const [job] = await childrenOf(w, jobsIn(a), 'alice-default');
    expect(podSpecOf(job).serviceAccountName).toBe('vworkspace-runner');
  });

  it('reaches a ClusterWorkflowTemplate only through a template that allows it', async () => {
    const [a] = w.namespaces;
    const cluster = { workflowTemplateRef: { name: 'cluster-wide', clusterScope: true } };
    const d = await w.denial(w.operation(w.as('alice'), a, 'cwft', runbook(cluster)));
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters.workflowTemplateRef.clusterScope']);
    expect(d.message).toContain('template workflow-runbook does not allow ClusterWorkflowTemplates');

    const op = await w.waitFor('the webhook to know the catalog template', async () => {
      try {
        return await w.operation(w.as('alice'), a, 'cwft-platform', runbook(cluster, 'platform-runbook'));
      } catch (err) {
        if (String(err).includes('does not exist')) return undefined;
        throw err;
      }
    });
    expect(op).toBeTruthy();
    await settled(w, a, 'cwft-platform');
    const [wf] = await childrenOf(w, workflowsIn(a), 'cwft-platform');
    expect((wf as KubernetesObject & { spec: unknown }).spec).toMatchObject({
      workflowTemplateRef: { name: 'cluster-wide', clusterScope: true },
    });
  });

  it('refuses an Operation the webhook never judged at the reconciler: NotAdmitted, no Job', async () => {
    const [, b] = w.namespaces;
    // Without the world label the webhooks do not judge namespace b: the Operation reaches the operator unjudged.
    await unselected(w, b, async () => {
      await w.operation(w.admin, b, 'unjudged', runCommand(ADMIN_SA));
    });
    const out = await settled(w, b, 'unjudged');
    expect(out.op.status?.phase).toBe('Failed');
    // Nothing unadmitted runs (ADR 0029); the NotAllowedByTemplate check behind it is unit-tested
    // (engines/job.test.ts) for a replica run without REQUIRE_ADMISSION_STAMP.
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
    expect(await childrenOf(w, jobsIn(b), 'unjudged')).toEqual([]);
  });
});
