import { describe, expect, it } from 'vitest';
import {
  anInput,
  aTemplateWithoutAllowlist,
  builtinWith,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { ANNOTATION_CREATED_BY } from '../api/annotations.ts';
import type { EffectiveTemplate } from '../catalog/template.ts';
import { RUNCOMMAND_IMAGES } from '../catalog/templates/job-runcommand.ts';
import { jobAdapter } from './job.ts';

const input = (
  o: {
    parameters?: Record<string, unknown>;
    env?: Record<string, unknown>;
    policy?: Record<string, number>;
    template?: EffectiveTemplate;
    annotations?: Record<string, string>;
  } = {},
) =>
  anInput({
    name: 'print-config',
    type: 'RunCommand',
    engine: 'job',
    parameters: o.parameters ?? { command: ['sh', '-c', 'cat /etc/config'] },
    ...(o.env ? { env: o.env } : {}),
    ...(o.policy ? { policy: o.policy } : {}),
    ...(o.template ? { template: o.template } : {}),
    ...(o.annotations ? { annotations: o.annotations } : {}),
  });
const allowingOps = builtinWith('RunCommand', 'job', {
  allowedServiceAccounts: ['vworkspace-runner', 'ops'],
});

type PodSpec = {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  restartPolicy: string;
  securityContext: Record<string, unknown>;
  containers: { image: string; command: string[]; securityContext: Record<string, unknown> }[];
};

function jobOf(i = input()) {
  const [job] = materialized(jobAdapter.materialize(i));
  if (!job) throw new Error('no child');
  const spec = job.spec as {
    backoffLimit: number;
    activeDeadlineSeconds?: number;
    ttlSecondsAfterFinished?: number;
    template: { spec: PodSpec };
  };
  return { job, spec, pod: spec.template.spec };
}

describe('job materialize', () => {
  it('runs the command from the default allowlisted image under restricted pod security', () => {
    const { job, spec, pod } = jobOf();
    expect(job).toMatchObject({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { namespace: 'team-a', ownerReferences: [{ kind: 'Operation' }] },
    });
    expect(job.metadata.name.length).toBeLessThanOrEqual(63);
    expect(spec.backoffLimit).toBe(0);
    expect(spec.activeDeadlineSeconds).toBe(1800); // the template's default deadline
    expect(spec).not.toHaveProperty('ttlSecondsAfterFinished');
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.serviceAccountName).toBe('vworkspace-runner');
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.containers[0]).toMatchObject({
      image: RUNCOMMAND_IMAGES[0],
      command: ['sh', '-c', 'cat /etc/config'],
      securityContext: {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      },
    });
  });

  it('takes the deadline from the Operation policy over the template default', () => {
    expect(jobOf(input({ policy: { activeDeadlineSeconds: 60 } })).spec.activeDeadlineSeconds).toBe(60);
  });

  it("never mounts the operator's own token", () => {
    const parameters = { command: ['id'], serviceAccountName: 'ops' };
    const env = { operatorServiceAccount: { namespace: 'team-a', name: 'ops' } };
    expect(jobOf(input({ env, parameters, template: allowingOps })).pod.automountServiceAccountToken).toBe(
      false,
    );
    const elsewhere = { operatorServiceAccount: { namespace: 'vworkspace-system', name: 'ops' } };
    expect(
      jobOf(input({ env: elsewhere, parameters, template: allowingOps })).pod.automountServiceAccountToken,
    ).toBe(true);
  });

  it("runs only as a ServiceAccount the template allows, unless the webhook judged the requester's choice", () => {
    const parameters = { command: ['id'], serviceAccountName: 'cluster-admin-sa' };
    const refused = jobAdapter.materialize(input({ parameters }));
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!refused.ok) {
      expect(refused.message).toMatch(/^spec\.parameters\.serviceAccountName: /);
      expect(refused.message).toContain('allowedServiceAccounts: vworkspace-runner');
    }
    // created-by is written only by the webhook, which admitted the name because the requester could run pods as it.
    const judged = input({ parameters, annotations: { [ANNOTATION_CREATED_BY]: 'bob' } });
    expect(jobOf(judged).pod.serviceAccountName).toBe('cluster-admin-sa');
    // A name that arrived through parametersFrom (not in spec.parameters) was never judged by the webhook.
    const viaInputs = input({ annotations: { [ANNOTATION_CREATED_BY]: 'bob' } });
    expect(
      jobAdapter.materialize({
        ...viaInputs,
        parameters: { ...viaInputs.parameters, serviceAccountName: 'cluster-admin-sa' },
      }),
    ).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    const listed = input({
      parameters: { command: ['id'], serviceAccountName: 'ops' },
      template: allowingOps,
    });
    expect(jobOf(listed).pod.serviceAccountName).toBe('ops');
    expect(jobOf().pod.serviceAccountName).toBe('vworkspace-runner');
  });

  it('refuses an image outside the allowlist, and any image when the template has no allowlist', () => {
    const i = input();
    expect(
      jobAdapter.materialize({ ...i, parameters: { ...i.parameters, image: 'evil/miner:latest' } }),
    ).toMatchObject({
      ok: false,
      reason: 'InvalidParameters',
    });
    expect(jobAdapter.materialize({ ...i, template: aTemplateWithoutAllowlist() })).toMatchObject({
      ok: false,
      reason: 'InvalidParameters',
    });
  });
});

describe('job observe', () => {
  const observe = (status: Record<string, unknown>) =>
    jobAdapter.observe([withStatus(jobOf().job, status)], input());

  it.each([
    [{}, 'Running', 'JobRunning'],
    [{ active: 1 }, 'Running', 'JobRunning'],
    [{ conditions: [jobCondition('SuccessCriteriaMet')] }, 'Succeeded', 'JobSucceeded'],
    [{ conditions: [jobCondition('Complete')] }, 'Succeeded', 'JobSucceeded'],
    [{ conditions: [jobCondition('FailureTarget', 'BackoffLimitExceeded')] }, 'Failed', 'JobFailed'],
    [
      {
        conditions: [
          jobCondition('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
        ],
      },
      'Failed',
      'JobFailed',
    ],
  ])('%j ⇒ %s/%s', (status, phase, reason) => {
    expect(observe(status)).toMatchObject({ phase, reason });
  });

  it("carries the Job's failure reason and message; a deadline is not retryable", () => {
    const o = observe({
      conditions: [
        jobCondition('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
      ],
    });
    expect(o.message).toContain('BackoffLimitExceeded: Job has reached the specified backoff limit');
    expect(o.retryable).toBe(true);
    expect(observe({ conditions: [jobCondition('Failed', 'DeadlineExceeded')] }).retryable).toBe(false);
  });

  it('reads a Job listed without kind (List items of built-in kinds carry none)', () => {
    const { kind: _k, ...listed } = withStatus(jobOf().job, { conditions: [jobCondition('Complete')] });
    expect(jobAdapter.observe([listed], input()).reason).toBe('JobSucceeded');
  });

  it('ignores conditions that are not True', () => {
    expect(observe({ active: 1, conditions: [{ type: 'Failed', status: 'False' }] }).phase).toBe('Running');
  });

  it('cancels by deleting in the foreground', () => {
    expect(jobAdapter.cancel([jobOf().job])).toMatchObject([
      { kind: 'delete', propagationPolicy: 'Foreground' },
    ]);
  });
});
