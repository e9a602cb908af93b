// Hole 14 of issue 28 (argument injection): the helm engine passes the instance's chart name to `helm
// upgrade` as a positional argument. A chart name such as `--post-renderer=/bin/sh` reached helm's
// argument list as a flag: helm would run a program of the tenant's choosing over the rendered manifests.
// Chart names are names (the CRD's pattern, the webhook at the field for objects stored before it), and the
// runner passes every value as `--flag=value` and the positional arguments after `--`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { createInstance, instanceWithReady, jobArgs, settled } from './support.ts';

describe('chart names never become helm flags', () => {
  let w: World;
  let ns: string;
  const mallory = () => w.as('mallory');
  const instance = (name: string, chartName: string) =>
    createInstance(
      mallory(),
      ns,
      name,
      { name },
      {
        chart: { name: chartName },
        annotations: { 'ops.vworkspace.io/upgrade': 'helm' },
      },
    );

  beforeAll(async () => {
    w = await startWorld({ env: { RELATED_IMAGE_HELM: 'registry.example.com/helm@sha256:0' } });
    ns = w.namespaces[0];
    await w.installRelease(ns, 'shop');
    await w.grantProfile('upgrade.helm', ns);
    await w.grant('mallory', ns, [
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['upgrade'] },
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a chart name that is not a name, at spec.appRef.chart.name', async () => {
    for (const name of ['--post-renderer=/bin/sh', '-x', 'tiny --post-renderer /bin/sh']) {
      const d = await w.denial(instance('evil', name));
      expect(d.causes.map((c) => c.field)).toEqual(['spec.appRef.chart.name']);
    }
  });

  it('passes the release and chart after `--`, and values as --flag=value', async () => {
    await instance('shop', 'tiny');
    await instanceWithReady(w, ns, 'shop', 'ReleaseDeployed');
    await w.operation(mallory(), ns, 'upgrade', {
      type: 'Upgrade',
      engine: 'helm',
      targetRef: { name: 'shop' },
      parameters: { version: '1.0.1' },
    });
    await settled(w, ns, 'upgrade');
    // The runner (`helm upgrade`) and its suspended rollback Job (`helm rollback`, ADR 0036).
    const argv = await jobArgs(w, ns, 'upgrade');
    const argsOf = (verb: string) => argv.find((a) => a[0] === verb) ?? [];
    const args = argsOf('upgrade');
    expect(args.slice(-3)).toEqual(['--', 'shop', 'tiny']);
    expect(args).toContain('--version=1.0.1');
    // Every argument before `--` is a flag (with its value attached): nothing positional can be mistaken.
    expect(args.slice(1, -3).filter((a) => !a.startsWith('--'))).toEqual([]);
    const rollback = argsOf('rollback');
    expect(rollback.slice(-3, -1)).toEqual(['--', 'shop']);
    expect(rollback.slice(1, -3).filter((a) => !a.startsWith('--'))).toEqual([]);
  });
});
