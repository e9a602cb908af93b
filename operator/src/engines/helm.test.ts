import { describe, expect, it } from 'vitest';
import {
  anInput,
  builtinTemplate,
  type InstanceOptions,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import type { ChartSource } from '../api/applicationinstance.ts';
import { chartSourceAllowed, helmAdapter } from './helm.ts';
import { ANY_CONTAINER } from './runner-pod.ts';
import type { HelmReleaseState } from './types.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
/** The default instance's chart source: where its release was installed from (anInstance records it). */
const ORIGIN: ChartSource = {
  sourceType: 'oci',
  url: 'oci://registry.example.com/charts',
  name: 'nextcloud',
};
const input = (
  o: {
    instance?: InstanceOptions;
    helmImage?: string | null;
    parameters?: Record<string, unknown>;
    allowedChartSources?: string[];
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
    ...(o.allowedChartSources
      ? { template: { ...builtinTemplate('Upgrade', 'helm'), allowedChartSources: o.allowedChartSources } }
      : {}),
  });
const classic = { sourceType: 'helm' as const, url: 'https://charts.example.com', name: 'nextcloud' };

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
      '--version=6.7.0',
      '--atomic',
      '--wait',
      '--timeout=10m',
      '--reset-then-reuse-values',
      '--namespace=team-a',
      '--',
      'nextcloud-team-a',
      'oci://registry.example.com/charts/nextcloud',
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
                  '--wait',
                  '--timeout=10m',
                  '--namespace=team-a',
                  '--',
                  'nextcloud-team-a',
                  '7',
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
    expect(c.args.slice(c.args.indexOf('--reset-then-reuse-values'), c.args.indexOf('--'))).toEqual([
      '--reset-then-reuse-values',
      '--set-json=config={"a":"x,y","b":null}',
      '--set-json=replicas=2',
      '--namespace=team-a',
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
        instance: { chart: { ...classic, version: '6.6.0' } },
      }),
    );
    expect(c.args.slice(-4)).toEqual([
      '--repo=https://charts.example.com',
      '--',
      'nextcloud-team-a',
      'nextcloud',
    ]);
    expect(c.args).toContain('--timeout=20m');
  });

  it('keeps every argument before `--` a flag with its value attached, whatever the values hold', () => {
    const c = containerOf(
      input({ parameters: { version: '6.7.0', values: { post: '--post-renderer=/bin/sh' } } }),
    );
    const flags = c.args.slice(1, c.args.indexOf('--'));
    expect(flags.every((a) => a.startsWith('--'))).toBe(true);
    expect(flags).toContain('--set-json=post="--post-renderer=/bin/sh"');
    expect(c.args.slice(c.args.indexOf('--') + 1)).toHaveLength(2);
  });

  it('refuses a chart source other than the recorded one (ChartSourceNotAllowed), saying what to do', () => {
    for (const chart of [
      { ...ORIGIN, url: 'oci://registry.attacker.example/charts' },
      { ...classic, url: 'https://charts.attacker.example' },
      { ...ORIGIN, name: 'other' },
    ]) {
      const r = helmAdapter.materialize(
        input({ instance: { chart: { ...chart, version: '6.6.0' }, chartSource: ORIGIN } }),
      );
      expect(r).toMatchObject({ ok: false, reason: 'ChartSourceNotAllowed' });
      if (!r.ok) {
        expect(r.message).toContain(chart.url);
        expect(r.message).toContain('Set spec.appRef.chart back to oci://registry.example.com/charts');
        expect(r.message).toContain('allowedChartSources of template helm-upgrade');
      }
    }
  });

  it('refuses an instance without a recorded source, and one whose chart name is not a name', () => {
    const r = helmAdapter.materialize(input({ instance: { chartSource: null } }));
    expect(r).toMatchObject({ ok: false, reason: 'ChartSourceNotAllowed' });
    if (!r.ok)
      expect(r.message).toContain('has not recorded where release nextcloud-team-a was installed from');
    const flag = { ...ORIGIN, name: '--post-renderer=/bin/sh' };
    const bad = helmAdapter.materialize(
      input({ instance: { chart: { ...flag, version: '1' }, chartSource: flag } }),
    );
    expect(bad).toMatchObject({ ok: false, reason: 'ChartSourceNotAllowed' });
    if (!bad.ok) expect(bad.message).toContain('not a chart name');
  });

  it("installs from a source the template's allowedChartSources lists, and from under it", () => {
    const moved = {
      sourceType: 'oci' as const,
      url: 'oci://mirror.example.com/charts/stable',
      name: 'nextcloud',
    };
    const c = containerOf(
      input({
        instance: { chart: { ...moved, version: '6.6.0' }, chartSource: ORIGIN },
        allowedChartSources: ['oci://mirror.example.com/charts/'],
      }),
    );
    expect(c.args.at(-1)).toBe('oci://mirror.example.com/charts/stable/nextcloud');
    const t = { allowedChartSources: ['https://charts.example.com/stable'] };
    expect(chartSourceAllowed(t, 'https://charts.example.com/stable')).toBe(true);
    expect(chartSourceAllowed(t, 'https://charts.example.com/stable/sub')).toBe(true);
    expect(chartSourceAllowed(t, 'https://charts.example.com/stable-evil')).toBe(false);
    expect(chartSourceAllowed(t, 'https://charts.example.com.evil/stable')).toBe(false);
    expect(chartSourceAllowed({}, 'https://charts.example.com/stable')).toBe(false);
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
  it("reads the deciding container's outcome: a failed upgrade's condition carries helm's own error", () => {
    // Any container: the runner's only one is helm; a Safe Upgrade's post-check has its own (helm-safe.ts).
    expect(helmAdapter.podOutcomeContainer).toBe(ANY_CONTAINER);
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
