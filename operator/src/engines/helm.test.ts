import { describe, expect, it } from 'vitest';
import { helmAdapter } from './helm.ts';
import { anInput, type InstanceOptions, jobCondition, materialized, withStatus } from './testing.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const input = (
  o: { instance?: InstanceOptions; helmImage?: string | null; parameters?: Record<string, unknown> } = {},
) =>
  anInput({
    name: 'upgrade-6-7',
    type: 'Upgrade',
    engine: 'helm',
    parameters: o.parameters ?? { version: '6.7.0' },
    env: o.helmImage === null ? {} : { helmImage: o.helmImage ?? HELM },
    ...(o.instance ? { instance: o.instance } : {}),
  });

type Container = { image: string; command: string[]; args: string[] };
function containerOf(i = input()): Container {
  const [job] = materialized(helmAdapter.materialize(i));
  const c = (job?.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0];
  if (!c) throw new Error('no container');
  return c;
}

describe('helm materialize', () => {
  it('runs helm upgrade --atomic --wait of the OCI chart to the requested version in the helm image', () => {
    const c = containerOf();
    expect(c.image).toBe(HELM);
    expect(c.command).toEqual(['helm']);
    expect(c.args).toEqual([
      'upgrade',
      'nextcloud-team-a',
      'oci://registry.example.com/charts/nextcloud',
      '--version',
      '6.7.0',
      '--atomic',
      '--wait',
      '--timeout',
      '10m',
      '--reuse-values',
      '--namespace',
      'team-a',
    ]);
  });

  it('uses --repo for a classic chart repository and passes the timeout', () => {
    const c = containerOf(
      input({
        parameters: { version: '6.7.0', timeout: '20m' },
        instance: {
          chart: {
            sourceType: 'helm',
            url: 'https://charts.example.com',
            name: 'nextcloud',
            version: '6.6.0',
          },
        },
      }),
    );
    expect(c.args.slice(0, 5)).toEqual([
      'upgrade',
      'nextcloud-team-a',
      'nextcloud',
      '--repo',
      'https://charts.example.com',
    ]);
    expect(c.args).toContain('20m');
  });

  it('fails clearly without the helm image or without a chart on the instance', () => {
    expect(helmAdapter.materialize(input({ helmImage: null }))).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
    });
    const noChart = helmAdapter.materialize(input({ instance: { chart: null } }));
    expect(noChart).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!noChart.ok) expect(noChart.message).toContain('spec.appRef.chart');
  });
});

describe('helm observe', () => {
  const [job] = materialized(helmAdapter.materialize(input()));
  if (!job) throw new Error('no child');
  it.each([
    [{ active: 1 }, 'Running', 'HelmUpgradeInProgress'],
    [{ conditions: [jobCondition('Complete')] }, 'Succeeded', 'HelmUpgradeSucceeded'],
    [{ conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] }, 'Failed', 'HelmUpgradeFailed'],
  ])('%j ⇒ %s/%s', (status, phase, reason) => {
    expect(helmAdapter.observe([withStatus(job, status)], input())).toMatchObject({ phase, reason });
  });
});
