import { describe, expect, it } from 'vitest';
import { helmAdapter } from './helm.ts';
import { anInput, type InstanceOptions, jobCondition, materialized, withStatus } from './testing.ts';
import type { HelmReleaseState } from './types.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const input = (
  o: {
    instance?: InstanceOptions;
    helmImage?: string | null;
    parameters?: Record<string, unknown>;
    release?: HelmReleaseState;
  } = {},
) =>
  anInput({
    name: 'upgrade-6-7',
    type: 'Upgrade',
    engine: 'helm',
    parameters: o.parameters ?? { version: '6.7.0' },
    env: {
      ...(o.helmImage === null ? {} : { helmImage: o.helmImage ?? HELM }),
      ...(o.release ? { helmRelease: o.release } : {}),
    },
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
      '--reset-then-reuse-values',
      '--namespace',
      'team-a',
    ]);
  });

  it('gives helm its --timeout and a minute after SIGTERM: stopped, it rolls the release back before it exits', () => {
    const pod = (i = input()) => {
      const [job] = materialized(helmAdapter.materialize(i));
      return (job?.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    };
    expect(pod().terminationGracePeriodSeconds).toBe(660);
    expect(
      pod(input({ parameters: { version: '6.7.0', timeout: '1h30m' } })).terminationGracePeriodSeconds,
    ).toBe(5460);
  });

  it('carries a suspended rollback Job to the newest deployed revision, as the same runner', () => {
    const [upgrade, rollback, ...more] = materialized(
      helmAdapter.materialize(input({ release: { revision: 7, status: 'deployed', lastDeployed: 7 } })),
    );
    expect(more).toEqual([]);
    expect(rollback).toMatchObject({
      kind: 'Job',
      metadata: { annotations: { 'ops.vworkspace.io/helm-rollback-revision': '7' } },
      spec: {
        suspend: true,
        template: {
          spec: {
            serviceAccountName: 'vworkspace-runner',
            containers: [
              {
                name: 'helm',
                image: HELM,
                command: ['helm'],
                args: [
                  'rollback',
                  'nextcloud-team-a',
                  '7',
                  '--wait',
                  '--timeout',
                  '10m',
                  '--namespace',
                  'team-a',
                ],
              },
            ],
          },
        },
      },
    });
    expect(rollback?.metadata.name).not.toBe(upgrade?.metadata.name);
    expect(upgrade?.spec).not.toHaveProperty('suspend');
  });

  it('has no rollback Job for a release that was never deployed (nothing to go back to)', () => {
    const children = materialized(
      helmAdapter.materialize(input({ release: { revision: 1, status: 'failed' } })),
    );
    expect(children).toHaveLength(1);
  });

  it('passes parameters.values as one --set-json per top-level key, sorted, before --namespace', () => {
    const c = containerOf(
      input({ parameters: { version: '6.7.0', values: { replicas: 2, config: { a: 'x,y', b: null } } } }),
    );
    expect(c.args.slice(c.args.indexOf('--reset-then-reuse-values'))).toEqual([
      '--reset-then-reuse-values',
      '--set-json',
      'config={"a":"x,y","b":null}',
      '--set-json',
      'replicas=2',
      '--namespace',
      'team-a',
    ]);
  });

  it('refuses values keys helm would read as paths (InvalidParameters), also past the schema', () => {
    const i = input();
    i.parameters = { ...i.parameters, values: { 'a.b': 1, ok: 2 } };
    const r = helmAdapter.materialize(i);
    expect(r).toMatchObject({ ok: false, reason: 'InvalidParameters' });
    if (!r.ok) expect(r.message).toContain('"a.b"');
    expect(() => input({ parameters: { version: '6.7.0', values: { 'a.b': 1 } } })).toThrow(
      /spec.parameters.values/,
    );
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
  it("reads the helm container's outcome: a failed upgrade's condition carries helm's own error", () => {
    expect(helmAdapter.podOutcomeContainer).toBe('helm');
    const [child] = materialized(helmAdapter.materialize(input()));
    const obs = helmAdapter.observe(
      [withStatus(child!, { conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] })],
      {
        ...input(),
        pods: [
          {
            pod: 'u-1',
            container: 'helm',
            exitCode: 1,
            reason: 'Error',
            logTail:
              'Error: UPGRADE FAILED: release x failed, and has been rolled back due to atomic being set',
          },
        ],
      },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(obs.message).toContain(
      'container helm of pod u-1 exited with code 1 (Error); last log lines: Error: UPGRADE FAILED: release x failed, and has been rolled back due to atomic being set',
    );
  });

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
