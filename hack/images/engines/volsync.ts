// VolSync's two images, assembled daemonless and reproducibly (hack/images/oci.ts) from what
// `hack/build-tools.sh volsync` put in bin/:
//
//   <registry>/volsync:<VOLSYNC_VERSION>                the controller (/manager, as upstream names it)
//   <registry>/volsync-restic:<VOLSYNC>-restic-<RESTIC> the restic mover: VolSync's mover-restic/entry.sh,
//       restic, bash, the GNU coreutils entry.sh relies on (with their glibc libraries) and busybox for
//       the rest (grep, awk)
//
// Upstream ships one image for the controller and every mover (UBI with rsync, ssh, rclone, syncthing…);
// here each gets only what it runs. The controller is told the mover image by RELATED_IMAGE_RESTIC_CONTAINER
// (hack/lib/engines/volsync.ts).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { TarEntry } from '../archive.ts';
import type { BuiltImage } from '../build.ts';
import { fileEntry, NONROOT, treeEntries, userlandEntries } from '../contents.ts';
import { busyboxEntries, image, pinned } from '../node-images.ts';

export interface VolSyncImages {
  controller: BuiltImage;
  restic: BuiltImage;
}

/** Where entry.sh and the tools it calls live in the mover image (upstream's paths). */
export const MOVER_PATH = '/usr/local/bin:/usr/bin:/bin';
export const ENTRY_SH = 'mover-restic/entry.sh';

export function resticTag(volsyncVersion: string, resticVersion: string): string {
  return `${volsyncVersion}-restic-${resticVersion}`;
}

/**
 * The mover's files: the root tree of bin/volsync-restic (entry.sh, bash, coreutils, libraries), restic
 * at /usr/local/bin/restic (upstream's path) and busybox's applets in /bin for every name the tree does
 * not already hold there. Pure.
 */
export function moverEntries(
  tree: readonly TarEntry[],
  restic: Uint8Array,
  busybox: Uint8Array,
  applets: readonly string[],
): TarEntry[] {
  const taken = new Set(tree.map((e) => e.path));
  if (!taken.has(ENTRY_SH))
    throw new Error(`the mover tree has no ${ENTRY_SH} (hack/build-tools.sh volsync)`);
  if (!taken.has('bin/bash')) throw new Error('the mover tree has no bin/bash (hack/build-tools.sh volsync)');
  return [
    ...tree,
    { path: 'usr/local/bin/restic', type: 'file', mode: 0o755, data: restic },
    ...busyboxEntries(busybox, applets).filter((e) => !taken.has(e.path)),
    ...userlandEntries(),
  ];
}

function applets(busybox: string): string[] {
  const r = spawnSync(busybox, ['--list'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${busybox} --list failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).sort();
}

export function volsyncImages(registry: string, epoch?: string): VolSyncImages {
  const bin = (n: string) => join(ROOT, 'bin', n);
  const volsync = pinned('VOLSYNC_VERSION');
  const restic = pinned('RESTIC_VERSION');
  const labels = {
    'org.opencontainers.image.version': volsync,
    'org.opencontainers.image.source': 'https://github.com/backube/volsync',
  };
  return {
    controller: image(
      registry,
      'volsync',
      volsync,
      [fileEntry(bin('volsync-manager'), 'manager', 0o755), ...userlandEntries()],
      // Upstream's pod demands runAsNonRoot: a numeric non-root user lets the kubelet verify it.
      { user: `${NONROOT}:${NONROOT}`, entrypoint: ['/manager'], labels },
      epoch,
    ),
    restic: image(
      registry,
      'volsync-restic',
      resticTag(volsync, restic),
      moverEntries(
        treeEntries(bin('volsync-restic'), '.')
          .slice(1)
          .map((e) => ({ ...e, path: e.path.replace(/^\.\//, '') })),
        readFileSync(bin('restic')),
        readFileSync(bin('busybox')),
        applets(bin('busybox')),
      ),
      // No USER, as upstream's image: VolSync's unprivileged mover runs as the image's user with every
      // capability dropped, so it can read and write what root owns on the volume and nothing else.
      { env: [`PATH=${MOVER_PATH}`], labels: { ...labels, 'io.restic.version': restic } },
      epoch,
    ),
  };
}
