import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { releaseState } from './release-state.ts';

const record = (version: number | string, status: string): KubernetesObject => ({
  metadata: {
    name: `sh.helm.release.v1.shop.v${version}`,
    labels: { owner: 'helm', name: 'shop', version: String(version), status },
  },
});

describe('releaseState', () => {
  it('is the newest revision and the newest one deployed or superseded', () => {
    expect(
      releaseState([record(1, 'superseded'), record(3, 'pending-upgrade'), record(2, 'deployed')]),
    ).toEqual({ revision: 3, status: 'pending-upgrade', lastDeployed: 2 });
    // After an atomic rollback: the failed revision is not where a rollback goes.
    expect(releaseState([record(2, 'superseded'), record(3, 'failed'), record(4, 'deployed')])).toEqual({
      revision: 4,
      status: 'deployed',
      lastDeployed: 4,
    });
  });

  it('has no lastDeployed when nothing was ever deployed, and is undefined without records', () => {
    expect(releaseState([record(1, 'failed')])).toEqual({ revision: 1, status: 'failed' });
    expect(releaseState([])).toBeUndefined();
    expect(releaseState([record('x', 'deployed')])).toBeUndefined();
  });
});
