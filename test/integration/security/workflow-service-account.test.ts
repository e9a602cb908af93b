// Hole 7 of issue 28: a Runbook as a powerful ServiceAccount. A WorkflowTemplate reference without
// spec.parameters.serviceAccountName created a Workflow without one, so Argo ran it as the
// WorkflowTemplate's account — an admin's, say — outside the template's allowedServiceAccounts. Now the
// Workflow always names an allowed account, and a WorkflowTemplate whose own accounts (spec, executor, any
// template) are outside the list is refused with NotAllowedByTemplate, with no Workflow.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUNNER_SERVICE_ACCOUNT, startWorld, type World } from './harness.ts';
import { adminServiceAccount, childrenOf, settled } from './support.ts';

const ADMIN_SA = 'ops-admin';
const workflowsIn = (ns: string) => `/apis/argoproj.io/v1alpha1/namespaces/${ns}/workflows`;
const runbook = (workflowTemplate: string) => ({
  type: 'Runbook',
  engine: 'workflow',
  targetRef: { name: 'shop' },
  parameters: { workflowTemplateRef: { name: workflowTemplate } },
});

describe("a Runbook never runs as a ServiceAccount outside its template's list", () => {
  let w: World;
  let a: string;
  const workflowTemplate = (name: string, spec: Record<string, unknown>) =>
    w.admin.request({
      method: 'POST',
      path: `/apis/argoproj.io/v1alpha1/namespaces/${a}/workflowtemplates`,
      body: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { name },
        spec: { entrypoint: 'main', templates: [{ name: 'main', container: { image: 'busybox' } }], ...spec },
      },
    });
  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runbook: 'workflow' });
    await w.grantProfile('runbook.workflow', a);
    await adminServiceAccount(w, a, ADMIN_SA);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runbook'] },
    ]);
    // The platform's runbook, written by an admin to run as the admin's account.
    await workflowTemplate('admin-runbook', { serviceAccountName: ADMIN_SA });
    await workflowTemplate('step-as-admin', {
      templates: [{ name: 'main', serviceAccountName: ADMIN_SA, container: { image: 'busybox' } }],
    });
    await workflowTemplate('plain', {});
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a WorkflowTemplate whose own ServiceAccount the template does not allow; no Workflow', async () => {
    await w.operation(w.as('alice'), a, 'as-admin', runbook('admin-runbook'));
    const out = await settled(w, a, 'as-admin');
    // The first list of Workflows may meet the API server's watch cache still starting (429): retried.
    const wfs = await w.waitFor('a list of Workflows', () =>
      childrenOf(w, workflowsIn(a), 'as-admin').catch(() => undefined),
    );
    expect(wfs).toEqual([]);
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAllowedByTemplate' });
    expect(out.accepted?.message).toContain(`WorkflowTemplate admin-runbook: ServiceAccount "${ADMIN_SA}"`);
  });

  it('refuses a template-level ServiceAccount inside the WorkflowTemplate too', async () => {
    await w.operation(w.as('alice'), a, 'step-admin', runbook('step-as-admin'));
    const out = await settled(w, a, 'step-admin');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAllowedByTemplate' });
    expect(await childrenOf(w, workflowsIn(a), 'step-admin')).toEqual([]);
  });

  it('creates the Workflow with an explicit allowed ServiceAccount when none is asked for', async () => {
    await w.operation(w.as('alice'), a, 'plain', runbook('plain'));
    await settled(w, a, 'plain');
    const [wf] = await childrenOf(w, workflowsIn(a), 'plain');
    expect((wf as KubernetesObject & { spec: { serviceAccountName?: string } }).spec.serviceAccountName).toBe(
      RUNNER_SERVICE_ACCOUNT,
    );
  });
});
