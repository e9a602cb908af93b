// The CSI snapshot engine's images (docs/engines.md "snapshot — Backup"), assembled daemonless and
// reproducibly like hack/images/node-images.ts from the binaries `hack/build-tools.sh csi` put in bin/:
//
//   <registry>/snapshot-controller:<EXTERNAL_SNAPSHOTTER_VERSION>  the cluster's snapshot controller
//   <registry>/csi-snapshotter:<EXTERNAL_SNAPSHOTTER_VERSION>      the sidecar that calls CreateSnapshot
//   <registry>/csi-provisioner:<EXTERNAL_PROVISIONER_VERSION>      the sidecar that calls CreateVolume
//   <registry>/csi-hostpath:vws-1                                  our stand-in driver (hack/csi-hostpath)
//
// Static Go binaries; the upstream three run as the nonroot user (65532), as upstream's distroless
// images would let them; the driver needs root (it bind-mounts volumes) and its pod says so.
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { BuiltImage } from '../build.ts';
import { fileEntry, NONROOT, userlandEntries } from '../contents.ts';
import { image, pinned } from '../node-images.ts';

export interface CsiImages {
  snapshotController: BuiltImage;
  csiSnapshotter: BuiltImage;
  csiProvisioner: BuiltImage;
  hostpath: BuiltImage;
}

/** The images' binaries, by image: what `hack/build-tools.sh csi` must have built. */
export const CSI_BINARIES = {
  snapshotController: 'snapshot-controller',
  csiSnapshotter: 'csi-snapshotter',
  csiProvisioner: 'csi-provisioner',
  hostpath: 'csi-hostpath',
} as const satisfies Record<keyof CsiImages, string>;

export function csiImages(registry: string, epoch?: string): CsiImages {
  const one = (key: keyof CsiImages, tag: string, user?: number): BuiltImage => {
    const name = CSI_BINARIES[key];
    return image(
      registry,
      name,
      tag,
      [fileEntry(join(ROOT, 'bin', name), name, 0o755), ...userlandEntries()],
      { ...(user !== undefined ? { user: `${user}:${user}` } : {}), entrypoint: [`/${name}`] },
      epoch,
    );
  };
  const snapshotter = pinned('EXTERNAL_SNAPSHOTTER_VERSION');
  return {
    snapshotController: one('snapshotController', snapshotter, NONROOT),
    csiSnapshotter: one('csiSnapshotter', snapshotter, NONROOT),
    csiProvisioner: one('csiProvisioner', pinned('EXTERNAL_PROVISIONER_VERSION'), NONROOT),
    hostpath: one('hostpath', 'vws-1'),
  };
}
