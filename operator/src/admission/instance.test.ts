import { describe, expect, it } from 'vitest';
import { aRequest, causesOf, NS } from '../../../test/support/builders/admission.ts';
import { decideInstance } from './instance.ts';

const anInstance = (release: Record<string, unknown>) => ({
  apiVersion: 'apps.vworkspace.io/v1alpha1',
  kind: 'ApplicationInstance',
  metadata: { name: 'shop', namespace: NS },
  spec: { appRef: { catalogId: 'tiny' }, release },
});

describe('ApplicationInstance admission', () => {
  it('admits a release in the own namespace, spelt out or left out', () => {
    for (const release of [{ name: 'web' }, { name: 'web', namespace: NS }, { name: 'web', namespace: '' }]) {
      expect(decideInstance(aRequest(anInstance(release))).allowed).toBe(true);
    }
  });

  it("refuses another namespace's release at spec.release.namespace, on create and update", () => {
    for (const operation of ['CREATE', 'UPDATE'] as const) {
      const res = decideInstance(
        aRequest(anInstance({ name: 'payroll', namespace: 'team-b' }), {
          operation,
          oldObject: anInstance({ name: 'payroll' }),
        }),
      );
      expect(res.allowed).toBe(false);
      expect(res.status?.code).toBe(422);
      expect(causesOf(res).map((c) => c.field)).toEqual(['spec.release.namespace']);
      expect(causesOf(res)[0]?.message).toContain(`the instance's own namespace ${NS}`);
    }
  });

  it('refuses naming a release another instance of the namespace names, at spec.release.name', () => {
    const mine = { ...anInstance({ name: 'shop' }), metadata: { name: 'mine', namespace: NS } };
    const siblings = [anInstance({ name: 'shop' }), anInstance({ name: 'shop', namespace: 'elsewhere' })];
    const res = decideInstance(aRequest(mine), siblings);
    expect(res.allowed).toBe(false);
    expect(causesOf(res).map((c) => c.field)).toEqual(['spec.release.name']);
    expect(causesOf(res)[0]?.message).toContain('already described by ApplicationInstance shop');
    // On update only when the name changes: an instance is never locked out of other edits.
    const same = { ...mine };
    expect(decideInstance(aRequest(mine, { operation: 'UPDATE', oldObject: same }), siblings).allowed).toBe(
      true,
    );
    const before = { ...mine, spec: { ...mine.spec, release: { name: 'mine' } } };
    const moved = decideInstance(aRequest(mine, { operation: 'UPDATE', oldObject: before }), siblings);
    expect(causesOf(moved).map((c) => c.field)).toEqual(['spec.release.name']);
    // The instance itself, and releases of other names or namespaces, are no conflict.
    expect(decideInstance(aRequest(anInstance({ name: 'shop' })), siblings).allowed).toBe(true);
    expect(decideInstance(aRequest(mine), [anInstance({ name: 'other' })]).allowed).toBe(true);
  });

  it('refuses a chart name that is not a name, at spec.appRef.chart.name, when it is set or changed', () => {
    const withChart = (name: unknown) => ({
      ...anInstance({ name: 'web' }),
      spec: {
        appRef: {
          catalogId: 'tiny',
          chart: { sourceType: 'helm', url: 'https://c.example', name, version: '1' },
        },
        release: { name: 'web' },
      },
    });
    for (const name of ['--post-renderer=/bin/sh', '-x', 'a b', 'charts/x', '']) {
      const res = decideInstance(aRequest(withChart(name)));
      expect(causesOf(res).map((c) => c.field)).toEqual(['spec.appRef.chart.name']);
    }
    for (const name of ['nextcloud', 'kube-prometheus-stack', 'my_chart.v2']) {
      expect(decideInstance(aRequest(withChart(name))).allowed).toBe(true);
    }
    const stored = withChart('--x');
    expect(decideInstance(aRequest(stored, { operation: 'UPDATE', oldObject: stored })).allowed).toBe(true);
  });

  it('lets deletes and malformed objects through (the API server validates the schema)', () => {
    expect(decideInstance(aRequest(anInstance({ namespace: 'x' }), { operation: 'DELETE' })).allowed).toBe(
      true,
    );
    expect(decideInstance(aRequest({ spec: 'nonsense' })).allowed).toBe(true);
  });
});
