// Helm release decoding on records written by the real helm CLI into the real API server.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, inject, it } from 'vitest';
import {
  latestRelease,
  readyFromRelease,
  type SecretLike,
} from '../../../operator/src/release/helm-release.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

async function releaseSecrets(ns: string): Promise<SecretLike[]> {
  const list = await adminKubeConfig().makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns });
  return list.items as SecretLike[];
}

describe('Helm release records written by helm', () => {
  it('reads deployed, upgraded and failed revisions', async () => {
    const kubeconfig = inject('kubeconfig');
    const ns = await createNamespace(adminKubeConfig(), 'helm');

    await helm(kubeconfig, ['install', 'web', TINY_CHART, '-n', ns]);
    let { record } = await latestRelease(await releaseSecrets(ns), 'web');
    expect(record).toMatchObject({
      revision: 1,
      status: 'deployed',
      chartName: 'tiny',
      chartVersion: '1.0.0',
      appVersion: '1.0',
    });
    expect(record?.chartAnnotations['ops.vworkspace.io/backup']).toBe('velero');
    expect(readyFromRelease('web', ns, record).reason).toBe('ReleaseDeployed');

    await helm(kubeconfig, ['upgrade', 'web', TINY_CHART, '-n', ns, '--set', 'message=again']);
    ({ record } = await latestRelease(await releaseSecrets(ns), 'web'));
    expect(record).toMatchObject({ revision: 2, status: 'deployed' });

    await expect(
      helm(kubeconfig, ['upgrade', 'web', TINY_CHART, '-n', ns, '--set', 'broken=true']),
    ).rejects.toThrow();
    ({ record } = await latestRelease(await releaseSecrets(ns), 'web'));
    expect(record).toMatchObject({ revision: 3, status: 'failed' });
    expect(readyFromRelease('web', ns, record)).toMatchObject({ status: 'False', reason: 'ReleaseFailed' });

    expect((await latestRelease(await releaseSecrets(ns), 'absent')).record).toBeUndefined();
  });
});
