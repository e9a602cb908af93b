import { describe, expect, it } from 'vitest';
import { objectStoreObjects } from './object-store.ts';

/** A value deep in a manifest: dig(o, 'spec.template.spec'), numbers index arrays. */
const dig = (o: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

describe('object store objects', () => {
  const objects = objectStoreObjects({
    namespace: 'object-store',
    image: 'reg/minio@sha256:1',
    accessKey: 'AK',
    secretKey: 'SECRET-never-inline',
    region: 'us-east-1',
  });
  const byKind = (k: string) => objects.find((o) => o.kind === k);

  it('MinIO reads its root credentials from the Secret, never from its pod spec', () => {
    expect(dig(byKind('Secret'), 'stringData')).toEqual({
      accessKey: 'AK',
      secretKey: 'SECRET-never-inline',
    });
    const deployment = JSON.stringify(byKind('Deployment'));
    expect(deployment).not.toContain('SECRET-never-inline');
    const env = dig(byKind('Deployment'), 'spec.template.spec.containers.0.env');
    expect(env).toContainEqual({
      name: 'MINIO_ROOT_PASSWORD',
      valueFrom: { secretKeyRef: { name: 'minio-root', key: 'secretKey' } },
    });
    expect(env).toContainEqual({ name: 'MINIO_REGION', value: 'us-east-1' });
  });

  it('serves S3 on 9000 behind a Service selecting its pod, data in the pod volume, as non-root', () => {
    const d = byKind('Deployment');
    const c = dig(d, 'spec.template.spec.containers.0');
    expect((dig(c, 'args') as string[]).slice(0, 4)).toEqual(['server', '/data', '--address', ':9000']);
    expect(dig(c, 'readinessProbe.httpGet')).toEqual({ path: '/minio/health/ready', port: 9000 });
    expect(dig(d, 'spec.template.spec.securityContext.runAsNonRoot')).toBe(true);
    expect(dig(byKind('Service'), 'spec.selector')).toEqual(dig(d, 'spec.template.metadata.labels'));
    expect(dig(byKind('Service'), 'spec.ports')).toEqual([{ name: 's3', port: 9000, targetPort: 9000 }]);
  });
});
