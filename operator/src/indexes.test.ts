import { describe, expect, it } from 'vitest';
import type { ApplicationInstance } from './api/applicationinstance.ts';
import { INSTANCES_REFUSED_A_RELEASE } from './indexes.ts';

const instance = (name: string, reason?: string): ApplicationInstance =>
  ({
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: { name, namespace: 'team' },
    spec: { release: { name: 'shop' } },
    ...(reason
      ? {
          status: {
            conditions: [{ type: 'Ready', status: 'False', reason, message: '', lastTransitionTime: '' }],
          },
        }
      : {}),
  }) as unknown as ApplicationInstance;

describe('INSTANCES_REFUSED_A_RELEASE', () => {
  it('indexes only the instances refused their release, under their namespace', () => {
    expect(INSTANCES_REFUSED_A_RELEASE.fn(instance('mine', 'ReleaseClaimed'))).toBe('team/ReleaseClaimed');
    for (const reason of [undefined, 'ReleaseDeployed', 'ReleaseNotFound', 'ReleaseNamespaceForbidden'])
      expect(INSTANCES_REFUSED_A_RELEASE.fn(instance('other', reason))).toBeUndefined();
  });
});
