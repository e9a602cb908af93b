// The engines' dynamic PVC provisioner image (hack/lib/engines/storage.ts): Rancher's
// local-path-provisioner, built by hack/build-tools.sh storage. Its helper pods, which make and remove
// the volume directories on the node, run the node's busybox image.
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { BuiltImage } from '../build.ts';
import { fileEntry, NONROOT, userlandEntries } from '../contents.ts';
import { engineLayerCache, image, pinned } from '../node-images.ts';

export function localPathProvisionerImage(registry: string, epoch?: string): BuiltImage {
  return image(
    registry,
    'local-path-provisioner',
    pinned('LOCAL_PATH_PROVISIONER_VERSION'),
    [
      fileEntry(join(ROOT, 'bin/local-path-provisioner'), 'bin/local-path-provisioner', 0o755),
      ...userlandEntries(),
    ],
    { user: `${NONROOT}:${NONROOT}`, env: ['PATH=/bin'], entrypoint: ['/bin/local-path-provisioner'] },
    epoch,
    engineLayerCache(),
  );
}
