import { describe, expect, it } from 'vitest';
import { awsCredentialsFile, kubeletRootOf, veleroObjects } from './velero.ts';

/** A value deep in a manifest: dig(o, 'spec.template.spec'), numbers index arrays. */
const dig = (o: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

describe('velero objects', () => {
  const objects = veleroObjects({
    namespace: 'velero',
    veleroImage: 'reg/velero@sha256:1',
    pluginImage: 'reg/velero-plugin-for-aws@sha256:2',
    kubeletRoot: '/tmp/vws-node-x/kubelet',
    s3Url: 'http://minio.object-store.svc.cluster.local:9000',
    region: 'us-east-1',
    bucket: 'velero',
    accessKey: 'AK',
    secretKey: 'SECRET-never-inline',
  });
  const find = (kind: string, name?: string) =>
    objects.find((o) => o.kind === kind && (!name || (o.metadata as { name: string }).name === name));

  it('the server Deployment is named velero (Velero reads its image from it for the restore helper) and gets the plugin from an init container', () => {
    const spec = dig(find('Deployment', 'velero'), 'spec.template.spec');
    expect(dig(spec, 'initContainers')).toEqual([
      expect.objectContaining({
        image: 'reg/velero-plugin-for-aws@sha256:2',
        volumeMounts: [{ name: 'plugins', mountPath: '/target' }],
      }),
    ]);
    const c = dig(spec, 'containers.0');
    expect(dig(c, 'image')).toBe('reg/velero@sha256:1');
    expect(dig(c, 'args')).toContain('--uploader-type=kopia');
    expect(dig(c, 'volumeMounts')).toContainEqual({ name: 'plugins', mountPath: '/plugins' });
  });

  it("the node-agent reads pod volumes under the node's kubelet root, with the host's later mounts propagated", () => {
    const spec = dig(find('DaemonSet', 'node-agent'), 'spec.template.spec');
    expect(dig(spec, 'volumes')).toContainEqual({
      name: 'host-pods',
      hostPath: { path: '/tmp/vws-node-x/kubelet/pods' },
    });
    expect(dig(spec, 'containers.0.volumeMounts')).toContainEqual({
      name: 'host-pods',
      mountPath: '/host_pods',
      mountPropagation: 'HostToContainer',
    });
    expect(dig(spec, 'containers.0.args')).toEqual(['node-agent', 'server', '--log-level=info']);
    expect(kubeletRootOf('/tmp/vws-node-x')).toBe('/tmp/vws-node-x/kubelet');
  });

  it('the BackupStorageLocation points the AWS plugin at the bucket, path-style; credentials only in the Secret', () => {
    expect(dig(find('BackupStorageLocation'), 'spec')).toEqual({
      default: true,
      provider: 'aws',
      objectStorage: { bucket: 'velero' },
      config: {
        region: 'us-east-1',
        s3ForcePathStyle: 'true',
        s3Url: 'http://minio.object-store.svc.cluster.local:9000',
      },
    });
    expect(dig(find('Secret'), 'stringData.cloud')).toBe(awsCredentialsFile('AK', 'SECRET-never-inline'));
    const secretless = objects.filter((o) => o.kind !== 'Secret');
    expect(JSON.stringify(secretless)).not.toContain('SECRET-never-inline');
  });

  it('writes an AWS shared credentials file', () => {
    expect(awsCredentialsFile('a', 'b')).toBe('[default]\naws_access_key_id=a\naws_secret_access_key=b\n');
  });
});
