// The webhook's side of the template grants (catalog/grants.ts): a ServiceAccount outside the template's
// list only from a requester who could run pods as it themselves; ClusterWorkflowTemplates and
// cluster-scoped restores only through templates that allow them.
import { describe, expect, it } from 'vitest';
import {
  aCronOperation,
  anOperation,
  aRequest,
  aTarget,
  causesOf,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import type { AccessCheck } from './decision.ts';
import { decideOperation, operationNeeds } from './operation.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';
import { runAsChecks } from './spec-checks.ts';

const runCommand = (parameters: Record<string, unknown>) =>
  anOperation(
    { type: 'RunCommand', engine: 'job', parameters: { command: ['id'], ...parameters } },
    { [ANNOTATION_CREATED_BY]: 'alice' },
  );
const target = {
  ok: true as const,
  value: aTarget({ annotations: { 'ops.vworkspace.io/runcommand': 'job' } }),
};

/** Facts where the requester has the type verb and exactly the given run-as powers. */
function factsWith(runAs: { pods?: boolean; impersonate?: boolean; fail?: boolean } = {}) {
  const checks: AccessCheck[] = [{ verb: 'runcommand', name: 'shop' }, ...runAsChecks('admin')];
  return someFacts({
    target,
    checks,
    allow: (c) => {
      if (runAs.fail && c.resource) return { ok: false, message: 'connection refused' };
      const allowed =
        c.resource === undefined ||
        (c.resource === 'pods' && runAs.pods === true) ||
        (c.resource === 'serviceaccounts' && runAs.impersonate === true);
      return { ok: true, value: { allowed } };
    },
  });
}

describe('serviceAccountName at admission', () => {
  it('looks up whether the requester could run pods as the named ServiceAccount', () => {
    expect(operationNeeds(aRequest(runCommand({ serviceAccountName: 'admin' }))).access).toEqual([
      { verb: 'runcommand', name: 'shop' },
      { verb: 'create', resource: 'pods' },
      { verb: 'impersonate', resource: 'serviceaccounts', name: 'admin' },
    ]);
    expect(operationNeeds(aRequest(runCommand({}))).access).toEqual([{ verb: 'runcommand', name: 'shop' }]);
  });

  it('refuses a ServiceAccount outside the template list from a requester who could not run pods as it', () => {
    const res = decideOperation(aRequest(runCommand({ serviceAccountName: 'admin' })), factsWith());
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['spec.parameters.serviceAccountName']);
    expect(causesOf(res)[0]?.message).toMatch(
      /ServiceAccount "admin" is not allowed by template job-runcommand .*user "alice" may neither create pods nor impersonate serviceaccounts\/admin in namespace team-a/,
    );
  });

  it.each([
    ['may create pods', { pods: true }],
    ['may impersonate the ServiceAccount', { impersonate: true }],
  ])('admits it from a requester who %s', (_why, runAs) => {
    const res = decideOperation(aRequest(runCommand({ serviceAccountName: 'admin' })), factsWith(runAs));
    expect(res.allowed).toBe(true);
  });

  it('never admits on a failed review, and needs none for a listed ServiceAccount', () => {
    const failed = decideOperation(
      aRequest(runCommand({ serviceAccountName: 'admin' })),
      factsWith({ fail: true }),
    );
    expect(failed.status?.code).toBe(503);
    const listed = decideOperation(
      aRequest(runCommand({ serviceAccountName: 'vworkspace-runner' })),
      factsWith(),
    );
    expect(listed.allowed).toBe(true);
  });

  it('leaves parameters too deep to judge to the limits check (no schema walk, no crash)', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    const res = decideOperation(aRequest(runCommand({ serviceAccountName: 'admin', deep })), factsWith());
    expect(fieldsOf(res)).toEqual(['spec.parameters']);
  });

  it('judges a CronOperation for its creator, who is the authority behind every Operation it creates', () => {
    const cron = aCronOperation(
      {},
      { type: 'RunCommand', engine: 'job', parameters: { command: ['id'], serviceAccountName: 'admin' } },
    );
    const req = {
      ...aRequest(cron),
      kind: { group: 'ops.vworkspace.io', version: 'v1alpha1', kind: 'CronOperation' },
    };
    expect(schedulerNeeds('CronOperation', req).access).toContainEqual(runAsChecks('admin')[0]);
    const res = decideScheduler('CronOperation', req, factsWith());
    expect(fieldsOf(res)).toEqual(['spec.operationTemplate.spec.parameters.serviceAccountName']);
    expect(decideScheduler('CronOperation', req, factsWith({ pods: true })).allowed).toBe(true);
  });
});

describe('cluster-wide objects at admission', () => {
  it('refuses a ClusterWorkflowTemplate unless the template allows it', () => {
    const op = anOperation(
      {
        type: 'Runbook',
        engine: 'workflow',
        parameters: { workflowTemplateRef: { name: 'x', clusterScope: true } },
      },
      { [ANNOTATION_CREATED_BY]: 'alice' },
    );
    const facts = someFacts({
      target: { ok: true, value: aTarget({ annotations: { 'ops.vworkspace.io/runbook': 'workflow' } }) },
    });
    const res = decideOperation(aRequest(op), facts);
    expect(res.status?.code).toBe(403);
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.parameters.workflowTemplateRef.clusterScope',
        message: expect.stringContaining('does not allow ClusterWorkflowTemplates'),
      },
    ]);
  });
});
