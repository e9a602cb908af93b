// The harness itself: a real API server of the pinned version with the project's and the
// upstream engine CRDs served.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiextensionsV1Api, CustomObjectsApi, VersionApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../hack/lib/controlplane.ts';
import { adminKubeConfig, createNamespace } from './support/kube.ts';

const pinned = /^KUBERNETES_VERSION=(.+)$/m.exec(readFileSync(join(ROOT, 'hack/versions.env'), 'utf8'))?.[1];

describe('control plane harness', () => {
  it('serves the pinned Kubernetes version (version ldflags)', async () => {
    const v = await adminKubeConfig().makeApiClient(VersionApi).getCode();
    expect(pinned).toMatch(/^v1\.\d+\.\d+$/);
    expect(v.gitVersion).toBe(pinned);
  });

  it.each([
    'backups.velero.io',
    'restores.velero.io',
    'backupstoragelocations.velero.io',
    'workflows.argoproj.io',
    'workflowtemplates.argoproj.io',
    'replicationsources.volsync.backube',
    'replicationdestinations.volsync.backube',
    'volumesnapshots.snapshot.storage.k8s.io',
    'volumesnapshotclasses.snapshot.storage.k8s.io',
  ])('has the upstream CRD %s established', async (name) => {
    const crd = await adminKubeConfig()
      .makeApiClient(ApiextensionsV1Api)
      .readCustomResourceDefinition({ name });
    expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
  });

  it('validates upstream objects with the real schema (a Velero Backup with a bad field type is refused)', async () => {
    const kc = adminKubeConfig();
    const ns = await createNamespace(kc);
    const api = kc.makeApiClient(CustomObjectsApi);
    const body = (ttl: unknown) => ({
      apiVersion: 'velero.io/v1',
      kind: 'Backup',
      metadata: { name: `b-${typeof ttl}` },
      spec: { includedNamespaces: [ns], ttl },
    });
    const ok = await api.createNamespacedCustomObject({
      group: 'velero.io',
      version: 'v1',
      namespace: ns,
      plural: 'backups',
      body: body('720h0m0s'),
    });
    expect((ok as { metadata: { uid?: string } }).metadata.uid).toBeTruthy();
    await expect(
      api.createNamespacedCustomObject({
        group: 'velero.io',
        version: 'v1',
        namespace: ns,
        plural: 'backups',
        body: body(5),
      }),
    ).rejects.toMatchObject({ code: 422 });
  });
});
