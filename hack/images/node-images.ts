// The images a real node needs besides the project's own (hack/images/build.ts), assembled the same
// daemonless, reproducible way (hack/images/oci.ts) from binaries hack/build-tools.sh node put in bin/:
//
//   <registry>/pause:<tag>      the sandbox (infra) container: our hack/images/pause program
//   <registry>/busybox:<tag>    Debian's busybox-static with its applets as links: the test image
//   <registry>/coredns:<tag>    CoreDNS for the cluster's DNS
//   <registry>/olm-util:<tag>   OLM's cpb and a cp: the util image of OLM's bundle unpack Jobs
//
// The tags carry the pinned versions (hack/versions.env); the digests follow from the content alone.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../bundle.ts';
import type { TarEntry } from './archive.ts';
import { type BuiltImage, sourceDate } from './build.ts';
import { fileEntry, NONROOT, userlandEntries } from './contents.ts';
import { assembleImage, buildLayer, type Image, type ImageSpec, LayerCache } from './oci.ts';

/** uid/gid of upstream's pause image: nobody's business but the sandbox's. */
export const PAUSE_UID = 65535;

export interface NodeImages {
  pause: BuiltImage;
  busybox: BuiltImage;
  coredns: BuiltImage;
  olmUtil: BuiltImage;
}

export function pinned(name: string): string {
  const v = new RegExp(`^${name}=(\\S+)$`, 'm').exec(
    readFileSync(join(ROOT, 'hack/versions.env'), 'utf8'),
  )?.[1];
  if (!v) throw new Error(`hack/versions.env has no ${name}`);
  return v;
}

/** A Debian version as a tag: `1:1.35.0-4+deb12u1+b1` → `1.35.0-4-deb12u1-b1`. Pure. */
export function debianTag(version: string): string {
  return version.replace(/^\d+:/, '').replace(/[^A-Za-z0-9_.-]/g, '-');
}

/** busybox at bin/busybox and one link per applet (`busybox --list`) beside it. Pure. */
export function busyboxEntries(busybox: Uint8Array, applets: readonly string[]): TarEntry[] {
  return [
    { path: 'bin/busybox', type: 'file', mode: 0o755, data: busybox },
    ...applets
      .filter((a) => a !== 'busybox' && /^[a-z0-9_.[-]+$/.test(a))
      .map((a): TarEntry => ({ path: `bin/${a}`, type: 'symlink', mode: 0o777, linkname: 'busybox' })),
  ];
}

/** busybox's applet names (`busybox --list`), sorted. */
export function applets(busybox: string): string[] {
  const r = spawnSync(busybox, ['--list'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${busybox} --list failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).sort();
}

/**
 * One single-layer image from `entries`, dated by the package's source date (engine images use it too);
 * `cache` keeps the gzip of big layers between runs (engineLayerCache()).
 */
export function image(
  registry: string,
  repo: string,
  tag: string,
  entries: TarEntry[],
  spec: Omit<ImageSpec, 'created'>,
  epoch?: string,
  cache?: LayerCache,
): BuiltImage {
  const { created, mtime } = sourceDate(pinnedPackageVersion(), epoch);
  const layer = buildLayer(`${repo} ${tag}`, entries, cache ? { mtime, cache } : { mtime });
  const img: Image = assembleImage([layer], { created, ...spec });
  return {
    name: repo,
    repo: `${registry}/${repo}`,
    tag,
    image: img,
    digest: img.digest,
    ref: `${registry}/${repo}@${img.digest}`,
  };
}

/**
 * gzip blobs of the engines' image layers (their Go binaries are 40-110 MB: gzipping them is most of an
 * engine journey's image build). Keyed by the tar's digest, so a cached blob is what gzip would give;
 * VWS_LAYER_CACHE=off skips it.
 */
export function engineLayerCache(): LayerCache | undefined {
  return process.env.VWS_LAYER_CACHE === 'off'
    ? undefined
    : new LayerCache(join(ROOT, 'bin/.layer-cache/engines'), 4 * 1024 * 1024, 32);
}

function pinnedPackageVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

export function nodeImages(registry: string, epoch?: string): NodeImages {
  const bin = (n: string) => join(ROOT, 'bin', n);
  const busybox = readFileSync(bin('busybox'));
  const links = applets(bin('busybox'));
  const olmVersion = pinned('OLM_VERSION');
  return {
    pause: image(
      registry,
      'pause',
      'vws-1',
      [fileEntry(bin('pause'), 'pause', 0o755)],
      {
        user: `${PAUSE_UID}:${PAUSE_UID}`,
        entrypoint: ['/pause'],
      },
      epoch,
    ),
    busybox: image(
      registry,
      'busybox',
      debianTag(pinned('BUSYBOX_STATIC_DEB_VERSION')),
      [...busyboxEntries(busybox, links), ...userlandEntries()],
      { env: ['PATH=/bin'], cmd: ['sh'] },
      epoch,
    ),
    coredns: image(
      registry,
      'coredns',
      pinned('COREDNS_VERSION'),
      [fileEntry(bin('coredns'), 'coredns', 0o755), ...userlandEntries()],
      { user: `${NONROOT}:${NONROOT}`, entrypoint: ['/coredns'], exposedPorts: ['1053/udp', '1053/tcp'] },
      epoch,
    ),
    olmUtil: image(
      registry,
      'olm-util',
      olmVersion,
      [fileEntry(bin('cpb'), 'bin/cpb', 0o755), ...busyboxEntries(busybox, ['cp']), ...userlandEntries()],
      { env: ['PATH=/bin'] },
      epoch,
    ),
  };
}
