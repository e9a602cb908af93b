// Hole 3 of issue 28 (chart source redirect): an Upgrade runs `helm upgrade` in a runner Job with the
// chart source the instance names. Whoever may patch the ApplicationInstance (not necessarily who may
// upgrade it) could point spec.appRef.chart at their own repository, and the owner's next Upgrade would
// install from it. The chart of an Upgrade is the one the release was installed from, as the operator
// recorded it (status.release.chartSource, written only by the operator once the release record shows
// that chart deployed), unless the template allows the new source; otherwise the Upgrade ends
// Accepted=False/ChartSourceNotAllowed saying what to do, and no Job exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TINY_APP_REF } from '../../support/helm.ts';
import { startWorld, type World } from './harness.ts';
import { childrenOf, instanceWithReady, jobArgs, jobsIn, settled } from './support.ts';

const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const ATTACKER = 'https://charts.attacker.example/stable';

describe('an Upgrade installs only from where the release came from', () => {
  let w: World;
  let ns: string;
  const patchChart = (chart: Record<string, unknown>) =>
    w.as('mallory').request({
      method: 'PATCH',
      path: `${APPS}/namespaces/${ns}/applicationinstances/shop`,
      contentType: 'application/merge-patch+json',
      body: { spec: { appRef: { chart } } },
    });
  const upgrade = (name: string) =>
    w.operation(w.as('vera'), ns, name, {
      type: 'Upgrade',
      engine: 'helm',
      targetRef: { name: 'shop' },
      parameters: { version: '1.0.1' },
    });

  beforeAll(async () => {
    w = await startWorld({ env: { RELATED_IMAGE_HELM: 'registry.example.com/helm@sha256:0' } });
    ns = w.namespaces[0];
    await w.installRelease(ns, 'shop');
    await w.instance(ns, 'shop', { upgrade: 'helm' });
    await w.grantProfile('upgrade.helm', ns);
    // Mallory may edit instances (e.g. their labels), Vera owns the upgrades.
    await w.grant('mallory', ns, [
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['get', 'patch'] },
    ]);
    await w.grant('vera', ns, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['upgrade'] },
    ]);
    await instanceWithReady(w, ns, 'shop', 'ReleaseDeployed');
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses an Upgrade from a repository someone patched into the instance, and says where the release came from', async () => {
    await patchChart({ url: ATTACKER });
    await upgrade('from-attacker');
    const out = await settled(w, ns, 'from-attacker');
    expect(await childrenOf(w, jobsIn(ns), 'from-attacker')).toEqual([]);
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'ChartSourceNotAllowed' });
    expect(out.accepted?.message).toContain(ATTACKER);
    expect(out.accepted?.message).toContain(TINY_APP_REF.chart.url);
    expect(out.accepted?.message).toContain('allowedChartSources');
  });

  it('refuses another registry through the OCI source type too', async () => {
    await patchChart({ sourceType: 'oci', url: 'oci://registry.attacker.example/charts' });
    await upgrade('from-attacker-oci');
    const out = await settled(w, ns, 'from-attacker-oci');
    expect(await childrenOf(w, jobsIn(ns), 'from-attacker-oci')).toEqual([]);
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'ChartSourceNotAllowed' });
  });

  it('upgrades from the recorded source once the instance names it again', async () => {
    await patchChart({ sourceType: TINY_APP_REF.chart.sourceType, url: TINY_APP_REF.chart.url });
    await upgrade('from-origin');
    const out = await settled(w, ns, 'from-origin');
    expect(out.op.status?.phase).toBe('Running');
    // The runner (`helm upgrade`) and its suspended rollback Job, in either order.
    const argv = await jobArgs(w, ns, 'from-origin');
    const args = argv.find((a) => a[0] === 'upgrade') ?? [];
    expect(args).toContain(`--repo=${TINY_APP_REF.chart.url}`);
    expect(argv.flat().join(' ')).not.toContain('attacker');
  });
});
