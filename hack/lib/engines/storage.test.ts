import { describe, expect, it } from 'vitest';
import { PROVISIONER, STORAGE_CLASS, storageObjects } from './storage.ts';

/** A value deep in a manifest: dig(o, 'spec.template.spec'), numbers index arrays. */
const dig = (o: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

describe('storage objects', () => {
  const objects = storageObjects({
    image: 'reg/lpp@sha256:1',
    helperImage: 'reg/busybox@sha256:2',
    volumesDir: '/tmp/vws-node-x/local-path',
  });
  const byKind = (k: string) => objects.find((o) => o.kind === k);

  it('the default StorageClass makes local PersistentVolumes (what File System Backup can read), bound at first use', () => {
    const sc = byKind('StorageClass');
    expect(dig(sc, 'metadata')).toMatchObject({
      name: STORAGE_CLASS,
      annotations: { 'storageclass.kubernetes.io/is-default-class': 'true', defaultVolumeType: 'local' },
    });
    expect(sc).toMatchObject({
      provisioner: PROVISIONER,
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    });
  });

  it('volumes live under the given directory; helper pods run the given image', () => {
    const data = dig(byKind('ConfigMap'), 'data') as Record<string, string>;
    expect(JSON.parse(data['config.json'] ?? '')).toEqual({
      nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: ['/tmp/vws-node-x/local-path'] }],
    });
    expect(dig(JSON.parse(data['helperPod.yaml'] ?? ''), 'spec.containers.0.image')).toBe(
      'reg/busybox@sha256:2',
    );
    expect(dig(byKind('Deployment'), 'spec.template.spec.containers.0.args')).toContain(PROVISIONER);
  });
});
