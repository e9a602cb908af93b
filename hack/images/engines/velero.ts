// Velero's images, assembled like hack/images/node-images.ts from what hack/build-tools.sh velero put in
// bin/ (pinned in hack/versions.env):
//
//   <registry>/velero:<VELERO_VERSION>                          /velero (server, node-agent, CLI) and
//       /velero-restore-helper, which File System Backup restores run as the restored pod's init
//       container (Velero takes that image from its own Deployment)
//   <registry>/velero-plugin-for-aws:<VELERO_PLUGIN_FOR_AWS_VERSION>   /plugins/velero-plugin-for-aws and
//       upstream's /bin/cp-plugin, its entrypoint, which copies the plugin into the server's plugin
//       directory from an init container (as `velero install --plugins` does)
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { BuiltImage } from '../build.ts';
import { fileEntry, NONROOT, userlandEntries } from '../contents.ts';
import { engineLayerCache, image, pinned } from '../node-images.ts';

export interface VeleroImages {
  velero: BuiltImage;
  awsPlugin: BuiltImage;
}

/** Where the AWS plugin's init container copies the plugin: the server's plugin directory. */
export const PLUGIN_TARGET = '/target';
export const AWS_PLUGIN = 'velero-plugin-for-aws';

export function veleroImages(registry: string, epoch?: string): VeleroImages {
  const bin = (n: string) => join(ROOT, 'bin', n);
  const cache = engineLayerCache();
  return {
    velero: image(
      registry,
      'velero',
      pinned('VELERO_VERSION'),
      [
        fileEntry(bin('velero'), 'velero', 0o755),
        fileEntry(bin('velero-restore-helper'), 'velero-restore-helper', 0o755),
        ...userlandEntries(),
      ],
      { user: `${NONROOT}:${NONROOT}`, entrypoint: ['/velero'] },
      epoch,
      cache,
    ),
    awsPlugin: image(
      registry,
      AWS_PLUGIN,
      pinned('VELERO_PLUGIN_FOR_AWS_VERSION'),
      [
        fileEntry(bin(AWS_PLUGIN), `plugins/${AWS_PLUGIN}`, 0o755),
        fileEntry(bin('cp-plugin'), 'bin/cp-plugin', 0o755),
      ],
      {
        user: `${NONROOT}:${NONROOT}`,
        entrypoint: ['/bin/cp-plugin', `/plugins/${AWS_PLUGIN}`, `${PLUGIN_TARGET}/${AWS_PLUGIN}`],
      },
      epoch,
      cache,
    ),
  };
}
