// The engines' S3 object store image (hack/lib/engines/object-store.ts): MinIO's server, built by
// hack/build-tools.sh object-store, at /minio, as uid 65532 (its data lives in the pod's volume).
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { BuiltImage } from '../build.ts';
import { fileEntry, NONROOT, userlandEntries } from '../contents.ts';
import { engineLayerCache, image, pinned } from '../node-images.ts';

/** MinIO's pin is a pseudo-version (v0.0.0-<date>-<commit>): a valid tag as it is. */
export function minioImage(registry: string, epoch?: string): BuiltImage {
  return image(
    registry,
    'minio',
    pinned('MINIO_VERSION'),
    [fileEntry(join(ROOT, 'bin/minio'), 'minio', 0o755), ...userlandEntries()],
    { user: `${NONROOT}:${NONROOT}`, entrypoint: ['/minio'], env: ['HOME=/tmp'], exposedPorts: ['9000/tcp'] },
    epoch,
    engineLayerCache(),
  );
}
