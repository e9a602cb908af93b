import { describe, expect, it } from 'vitest';
import { LABEL_OPERATION } from '../api/annotations.ts';
import { helmHookJobAdapter } from './helm-hook-job.ts';
import { anInput, jobCondition, materialized, withStatus } from './testing.ts';

/** A Job as a chart renders it into ConfigMap <release>-vworkspace-migration. */
function chartJob(podSecurity: Record<string, unknown> = {}, containerSecurity?: Record<string, unknown>) {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'nextcloud-migrate',
      labels: { 'app.kubernetes.io/instance': 'nextcloud-team-a', 'job-name': 'stale' },
      annotations: { 'helm.sh/hook': 'pre-upgrade', note: 'keep' },
    },
    spec: {
      backoffLimit: 6,
      ttlSecondsAfterFinished: 100,
      activeDeadlineSeconds: 99999,
      template: {
        metadata: { labels: { app: 'migrate' } },
        spec: {
          serviceAccountName: 'nextcloud',
          securityContext: podSecurity,
          containers: [
            {
              name: 'migrate',
              image: 'nextcloud:30',
              command: ['occ', 'upgrade'],
              ...(containerSecurity ? { securityContext: containerSecurity } : {}),
            },
          ],
        },
      },
    },
  };
}

const input = (migrationJob?: Record<string, unknown>, env: Record<string, unknown> = {}) =>
  anInput({
    name: 'migrate-30',
    type: 'Migration',
    engine: 'helmHookJob',
    env: { ...(migrationJob ? { migrationJob } : {}), ...env },
  });

type Pod = {
  serviceAccountName: string;
  restartPolicy: string;
  automountServiceAccountToken?: boolean;
  securityContext: Record<string, unknown>;
  containers: { securityContext: Record<string, unknown>; command: string[] }[];
};

function childOf(i = input(chartJob())) {
  const [job] = materialized(helmHookJobAdapter.materialize(i));
  if (!job) throw new Error('no child');
  const spec = job.spec as Record<string, unknown> & {
    template: { metadata: { labels: Record<string, string> }; spec: Pod };
  };
  return { job, spec, pod: spec.template.spec };
}

describe('helmHookJob materialize', () => {
  it("adopts the chart's Job under a deterministic name, owned by the Operation, backoffLimit 0", () => {
    const { job, spec, pod } = childOf();
    expect(job.metadata.name).toMatch(/^migrate-30-[a-z2-7]{8}$/);
    expect(job.metadata.namespace).toBe('team-a');
    expect(job).toMatchObject({
      metadata: {
        ownerReferences: [{ kind: 'Operation', name: 'migrate-30' }],
        labels: { [LABEL_OPERATION]: 'migrate-30' },
      },
    });
    expect(job.metadata.labels).not.toHaveProperty('job-name');
    expect(job.metadata.annotations).toMatchObject({ note: 'keep' });
    expect(job.metadata.annotations).not.toHaveProperty('helm.sh/hook');
    expect(spec.backoffLimit).toBe(0);
    expect(spec.activeDeadlineSeconds).toBe(3600); // the smaller of the chart's and the policy's
    expect(spec).not.toHaveProperty('ttlSecondsAfterFinished');
    expect(spec.template.metadata.labels).toEqual({ app: 'migrate', [LABEL_OPERATION]: 'migrate-30' });
    expect(pod.serviceAccountName).toBe('nextcloud');
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers[0]?.command).toEqual(['occ', 'upgrade']);
  });

  it('fills the restricted security defaults only where the chart left them unset', () => {
    const { pod } = childOf(input(chartJob({ runAsUser: 33 }, { readOnlyRootFilesystem: false })));
    expect(pod.securityContext).toEqual({
      runAsUser: 33,
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.containers[0]?.securityContext).toEqual({
      readOnlyRootFilesystem: false,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  it("does not mount the operator's token when the chart's Job would run as the operator", () => {
    const env = { operatorServiceAccount: { namespace: 'team-a', name: 'nextcloud' } };
    expect(childOf(input(chartJob(), env)).pod.automountServiceAccountToken).toBe(false);
  });

  it('fails with CapabilityMissing when the chart ships no migration Job, or something else', () => {
    const missing = helmHookJobAdapter.materialize(input());
    expect(missing).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!missing.ok) expect(missing.message).toContain('nextcloud-team-a-vworkspace-migration');
    expect(helmHookJobAdapter.materialize(input({ apiVersion: 'v1', kind: 'Pod', spec: {} }))).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
    });
  });
});

describe('helmHookJob observe', () => {
  const { job } = childOf();
  it.each([
    [{ active: 1 }, 'Running', 'HelmHookJobRunning'],
    [{ conditions: [jobCondition('Complete')] }, 'Succeeded', 'HelmHookJobSucceeded'],
    [{ conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] }, 'Failed', 'HelmHookJobFailed'],
  ])('%j ⇒ %s/%s', (status, phase, reason) => {
    expect(helmHookJobAdapter.observe([withStatus(job, status)], input())).toMatchObject({ phase, reason });
  });
});
