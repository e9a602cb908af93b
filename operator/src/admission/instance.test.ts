import { describe, expect, it } from 'vitest';
import { decideInstance } from './instance.ts';
import { aRequest, causesOf, NS } from './testing.ts';

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

  it('lets deletes and malformed objects through (the API server validates the schema)', () => {
    expect(decideInstance(aRequest(anInstance({ namespace: 'x' }), { operation: 'DELETE' })).allowed).toBe(
      true,
    );
    expect(decideInstance(aRequest({ spec: 'nonsense' })).allowed).toBe(true);
  });
});
