import { describe, expect, it } from 'vitest';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../api/index.ts';
import type { ReleaseRecord } from '../release/helm-release.ts';
import { releaseRef } from '../release/ref.ts';
import { computeInstanceStatus, eventTypeFor, readyReason, releaseNamespaceForbidden } from './status.ts';

const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T01:00:00Z';

function instance(overrides: Partial<ApplicationInstance> = {}): ApplicationInstance {
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name: 'shop', namespace: 'apps', generation: 3 },
    spec: { appRef: { catalogId: 'tiny' }, release: { name: 'web' } },
    ...overrides,
  };
}

function record(overrides: Partial<ReleaseRecord> = {}): ReleaseRecord {
  return {
    name: 'web',
    namespace: 'apps',
    revision: 2,
    status: 'deployed',
    chartName: 'tiny',
    chartVersion: '1.0.0',
    appVersion: '1.0',
    chartAnnotations: {},
    ...overrides,
  };
}

describe('computeInstanceStatus', () => {
  it.each([
    ['deployed', 'True', 'ReleaseDeployed'],
    ['failed', 'False', 'ReleaseFailed'],
    ['pending-install', 'False', 'ReleasePending'],
    ['pending-upgrade', 'False', 'ReleasePending'],
    ['pending-rollback', 'False', 'ReleasePending'],
    ['uninstalled', 'False', 'ReleaseNotFound'],
  ])('maps a latest revision %s to Ready=%s/%s', (helmStatus, status, reason) => {
    const s = computeInstanceStatus(instance(), record({ status: helmStatus }), T0);
    expect(s.conditions).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status,
        reason,
        observedGeneration: 3,
        lastTransitionTime: T0,
      }),
    ]);
    expect(s.release).toEqual({ revision: 2, status: helmStatus, chartVersion: '1.0.0', appVersion: '1.0' });
    expect(s.observedGeneration).toBe(3);
  });

  it('reports ReleaseNotFound and no release block when there is no record', () => {
    const s = computeInstanceStatus(instance(), undefined, T0);
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'ReleaseNotFound' });
    expect(s.conditions?.[0]?.message).toContain('web');
    expect(s.conditions?.[0]?.message).toContain('apps');
    expect(s).not.toHaveProperty('release');
  });

  it('drops a release block that no longer has a record behind it', () => {
    const before = computeInstanceStatus(instance(), record(), T0);
    const after = computeInstanceStatus(instance({ status: before }), undefined, T1);
    expect(after).not.toHaveProperty('release');
  });

  it('recomputing an unchanged situation later yields an identical status (no write)', () => {
    const first = computeInstanceStatus(instance(), record(), T0);
    const again = computeInstanceStatus(instance({ status: first }), record(), T1);
    expect(again).toEqual(first);
  });

  it('keeps lastTransitionTime while Ready keeps its status and moves it when the status flips', () => {
    const r2 = computeInstanceStatus(instance(), record({ revision: 2 }), T0);
    // A new deployed revision changes the message and release, not the transition time.
    const r3 = computeInstanceStatus(instance({ status: r2 }), record({ revision: 3 }), T1);
    expect(r3.conditions?.[0]?.lastTransitionTime).toBe(T0);
    expect(r3.conditions?.[0]?.message).toContain('revision 3');
    expect(r3.release?.revision).toBe(3);
    const failed = computeInstanceStatus(
      instance({ status: r3 }),
      record({ revision: 4, status: 'failed' }),
      T1,
    );
    expect(failed.conditions?.[0]).toMatchObject({ status: 'False', lastTransitionTime: T1 });
  });

  it('follows the generation in observedGeneration and in the condition', () => {
    const first = computeInstanceStatus(instance(), record(), T0);
    const inst = instance({ status: first });
    inst.metadata.generation = 4;
    const s = computeInstanceStatus(inst, record(), T1);
    expect(s.observedGeneration).toBe(4);
    expect(s.conditions?.[0]?.observedGeneration).toBe(4);
  });

  it('keeps status.capabilities and other conditions it does not own', () => {
    const capabilities = [{ verb: 'backup' as const, engine: 'velero' as const, source: 'catalog' as const }];
    const other = {
      type: 'CapabilitiesResolved',
      status: 'True' as const,
      reason: 'CatalogEntryFound',
      message: '',
      lastTransitionTime: T0,
    };
    const s = computeInstanceStatus(
      instance({ status: { capabilities, conditions: [other] } }),
      record(),
      T1,
    );
    expect(s.capabilities).toEqual(capabilities);
    expect(s.conditions?.map((c) => c.type)).toEqual(['CapabilitiesResolved', 'Ready']);
    expect(s.conditions?.[0]).toEqual(other);
  });

  it('leaves out empty chart fields (a chart without appVersion)', () => {
    const s = computeInstanceStatus(instance(), record({ appVersion: '' }), T0);
    expect(s.release).toEqual({ revision: 2, status: 'deployed', chartVersion: '1.0.0' });
  });
});

describe('releaseRef', () => {
  it("defaults the release namespace to the instance's", () => {
    expect(releaseRef(instance())).toEqual({ name: 'web', namespace: 'apps' });
    expect(
      releaseRef(
        instance({ spec: { appRef: { catalogId: 'x' }, release: { name: 'db', namespace: 'data' } } }),
      ),
    ).toEqual({
      name: 'db',
      namespace: 'data',
    });
  });
});

describe('readyReason and eventTypeFor', () => {
  it('reads the Ready reason and classifies it', () => {
    expect(readyReason(undefined)).toBeUndefined();
    expect(readyReason(computeInstanceStatus(instance(), undefined, T0))).toBe('ReleaseNotFound');
    expect(eventTypeFor('ReleaseDeployed')).toBe('Normal');
    expect(eventTypeFor('ReleasePending')).toBe('Normal');
    expect(eventTypeFor('ReleaseFailed')).toBe('Warning');
    expect(eventTypeFor('ReleaseNotFound')).toBe('Warning');
  });
});

describe('releaseNamespaceForbidden', () => {
  const elsewhere = instance({
    spec: { appRef: { catalogId: 'tiny' }, release: { name: 'web', namespace: 'payroll' } },
  });

  it('allows the own namespace, spelt out or left out', () => {
    expect(releaseNamespaceForbidden(instance())).toBeUndefined();
    const own = instance({
      spec: { appRef: { catalogId: 'tiny' }, release: { name: 'web', namespace: 'apps' } },
    });
    expect(releaseNamespaceForbidden(own)).toBeUndefined();
  });

  it('refuses another namespace: Ready=False, no release block even when a record is at hand', () => {
    expect(releaseNamespaceForbidden(elsewhere)).toContain('its own namespace apps');
    const s = computeInstanceStatus(elsewhere, record(), T0);
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'ReleaseNamespaceForbidden' });
    expect(s.release).toBeUndefined();
    expect(eventTypeFor('ReleaseNamespaceForbidden')).toBe('Warning');
  });
});

describe('status.release.chartSource (where the release was installed from)', () => {
  const chart = {
    sourceType: 'helm' as const,
    url: 'https://charts.example.com',
    name: 'tiny',
    version: '1.0.0',
  };
  const withChart = (c: typeof chart, status?: ApplicationInstance['status']) =>
    instance({
      spec: { appRef: { catalogId: 'tiny', chart: c }, release: { name: 'web' } },
      ...(status ? { status } : {}),
    });

  it("records the instance's chart once the record shows that chart deployed", () => {
    const s = computeInstanceStatus(withChart(chart), record(), T0);
    expect(s.release?.chartSource).toEqual({
      sourceType: 'helm',
      url: 'https://charts.example.com',
      name: 'tiny',
    });
  });

  it('records nothing while the record is not deployed or is another chart', () => {
    expect(
      computeInstanceStatus(withChart(chart), record({ status: 'failed' }), T0).release,
    ).not.toHaveProperty('chartSource');
    expect(
      computeInstanceStatus(withChart(chart), record({ chartName: 'other' }), T0).release,
    ).not.toHaveProperty('chartSource');
    expect(computeInstanceStatus(instance(), record(), T0).release).not.toHaveProperty('chartSource');
  });

  it('keeps the recorded source when spec.appRef.chart is edited afterwards', () => {
    const first = computeInstanceStatus(withChart(chart), record(), T0);
    const moved = { ...chart, url: 'https://charts.attacker.example' };
    const s = computeInstanceStatus(withChart(moved, first), record({ revision: 3 }), T1);
    expect(s.release?.chartSource?.url).toBe('https://charts.example.com');
  });
});

describe('Ready when the release cannot be described', () => {
  it('is ReleaseClaimed, with nothing of the release, when an older instance names it', () => {
    const message = 'Helm release web is already described by ApplicationInstance first';
    const s = computeInstanceStatus(instance(), record(), T0, { claimedBy: { name: 'first', message } });
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'ReleaseClaimed', message });
    expect(s).not.toHaveProperty('release');
    expect(eventTypeFor('ReleaseClaimed')).toBe('Warning');
  });

  it('is ReleaseRecordUnreadable, naming the problems, when no revision decodes', () => {
    const problems = ['Helm release Secret apps/sh.helm.release.v1.web.v2 inflates to more than 32 MiB'];
    const s = computeInstanceStatus(instance(), undefined, T0, { problems });
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'ReleaseRecordUnreadable' });
    expect(s.conditions?.[0]?.message).toContain(problems[0]);
    expect(s.conditions?.[0]?.message).toContain('helm history web -n apps');
    expect(s).not.toHaveProperty('release');
  });

  it('takes Ready from an older readable revision when only the newest is unreadable', () => {
    const s = computeInstanceStatus(instance(), record(), T0, { problems: ['newest unreadable'] });
    expect(s.conditions?.[0]).toMatchObject({ status: 'True', reason: 'ReleaseDeployed' });
  });
});
