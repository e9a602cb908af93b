import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  anInput,
  builtinWith,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { LABEL_OPERATION } from '../api/annotations.ts';
import type { EffectiveTemplate } from '../catalog/template.ts';
import { helmHookJobAdapter } from './helm-hook-job.ts';

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

/** The chart's Job runs as ServiceAccount `nextcloud`: a catalog template must allow it. */
const allowingChartAccount = builtinWith('Migration', 'helmHookJob', {
  allowedServiceAccounts: ['vworkspace-runner', 'nextcloud'],
});

/** The ConfigMap source: parameters.configMapName names it, env.migrationJobYaml is what it holds. */
const input = (
  migrationJob?: Record<string, unknown>,
  env: Record<string, unknown> = {},
  /** null: the built-in template. */
  template: EffectiveTemplate | null = allowingChartAccount,
  parameters: Record<string, unknown> = { configMapName: 'nextcloud-team-a-vworkspace-migration' },
) =>
  anInput({
    name: 'migrate-30',
    type: 'Migration',
    engine: 'helmHookJob',
    env: { ...(migrationJob ? { migrationJobYaml: YAML.stringify(migrationJob) } : {}), ...env },
    ...(template ? { template } : {}),
    parameters,
  });

/** The chart's Job with `edit` applied to its pod template (a hostile ConfigMap writer's changes). */
function hostile(edit: (pod: Record<string, unknown>) => void) {
  const job = chartJob();
  edit(job.spec.template as unknown as Record<string, unknown>);
  return job;
}

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

  it('forces the restricted security context; only a writable root filesystem stays the chart choice', () => {
    const { pod } = childOf(input(chartJob({ runAsUser: 33 }, { readOnlyRootFilesystem: false })));
    expect(pod.securityContext).toEqual({
      runAsUser: 33,
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.containers[0]?.securityContext).toEqual({
      readOnlyRootFilesystem: false,
      privileged: false,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod).toMatchObject({ hostNetwork: false, hostPID: false, hostIPC: false });
  });

  it.each([
    [
      'spec.template.spec.hostPID',
      (p: Record<string, unknown>) => Object.assign(p.spec as object, { hostPID: true }),
    ],
    [
      'spec.template.spec.volumes[0].hostPath',
      (p: Record<string, unknown>) =>
        Object.assign(p.spec as object, { volumes: [{ name: 'root', hostPath: { path: '/' } }] }),
    ],
    [
      'spec.template.spec.containers[0].securityContext.privileged',
      (p: Record<string, unknown>) =>
        Object.assign((p.spec as { containers: object[] }).containers[0]!, {
          securityContext: { privileged: true },
        }),
    ],
  ])(
    'refuses a chart Job that asks for more than restricted (%s): UnsafePodSpec naming the field',
    (field, edit) => {
      const r = helmHookJobAdapter.materialize(input(hostile(edit)));
      expect(r).toMatchObject({ ok: false, reason: 'UnsafePodSpec' });
      if (!r.ok) {
        expect(r.message).toContain(`${field}: `);
        expect(r.message).toContain('ConfigMap nextcloud-team-a-vworkspace-migration');
      }
    },
  );

  it('runs as a ServiceAccount the template allows: the runner when the chart names none, never another', () => {
    const unnamed = hostile((p) => {
      delete (p.spec as Record<string, unknown>).serviceAccountName;
    });
    expect(childOf(input(unnamed, {}, null)).pod.serviceAccountName).toBe('vworkspace-runner');
    const admin = hostile((p) => Object.assign(p.spec as object, { serviceAccountName: 'cluster-admin' }));
    const r = helmHookJobAdapter.materialize(input(admin));
    expect(r).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!r.ok)
      expect(r.message).toContain('spec.template.spec.serviceAccountName: ServiceAccount "cluster-admin"');
    // The built-in template allows only the runner, so the chart's own account needs a catalog template.
    expect(helmHookJobAdapter.materialize(input(chartJob(), {}, null))).toMatchObject({
      ok: false,
      reason: 'NotAllowedByTemplate',
    });
  });

  it("does not mount the operator's token when the chart's Job would run as the operator", () => {
    const env = { operatorServiceAccount: { namespace: 'team-a', name: 'nextcloud' } };
    expect(childOf(input(chartJob(), env)).pod.automountServiceAccountToken).toBe(false);
  });

  it('fails with CapabilityMissing when the ConfigMap holds no migration Job, or something else', () => {
    const missing = helmHookJobAdapter.materialize(input());
    expect(missing).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!missing.ok) expect(missing.message).toContain('nextcloud-team-a-vworkspace-migration');
    expect(
      helmHookJobAdapter.materialize(input(undefined, {}, null, { configMapName: 'mine' })),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining('ConfigMap mine (key job.yaml)'),
    });
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

describe('the ConfigMap text is untrusted', () => {
  const fromText = (text: string) =>
    anInput({
      name: 'migrate-30',
      type: 'Migration',
      engine: 'helmHookJob',
      env: { migrationJobYaml: text },
      parameters: { configMapName: 'custom' },
    });

  it.each([
    ['invalid YAML', 'kind: Job\nspec: [unclosed\n', /is not valid YAML \(.*line 3/],
    [
      '100,000 levels deep',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      /is nested more than 64 levels deep/,
    ],
    ['not an object', '- a\n- b\n', /is not a Kubernetes object/],
  ])('refuses %s with CapabilityMissing, naming the ConfigMap and what to do', (_what, text, problem) => {
    const r = helmHookJobAdapter.materialize(fromText(text));
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!r.ok) {
      expect(r.message).toMatch(problem);
      expect(r.message).toContain('ConfigMap custom (key job.yaml)');
      expect(r.message).toContain('fix the ConfigMap, then create a new Operation');
    }
  });

  it('refuses more than one pod at a time (parallelism, completions) with UnsafePodSpec', () => {
    const job = chartJob();
    const r = helmHookJobAdapter.materialize(
      input({ ...job, spec: { ...job.spec, parallelism: 50, completions: 50 } }),
    );
    expect(r).toMatchObject({ ok: false, reason: 'UnsafePodSpec' });
    if (!r.ok) {
      expect(r.message).toContain('spec.parallelism: parallelism 50 is not allowed');
      expect(r.message).toContain('spec.completions: completions 50 is not allowed');
    }
    const one = helmHookJobAdapter.materialize(input({ ...job, spec: { ...job.spec, parallelism: 1 } }));
    expect(one.ok).toBe(true);
  });

  it('shows the ConfigMap Job itself in a dry run (a ConfigMap is not a Secret)', () => {
    const r = helmHookJobAdapter.materialize(input(chartJob()));
    expect(r.ok).toBe(true);
    expect(r).not.toHaveProperty('plan');
  });
});
