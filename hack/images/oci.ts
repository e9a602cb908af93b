// OCI images assembled in memory, without a daemon or a base image: gzip layers from tar bytes
// (archive.ts), the image config, the manifest, and the OCI image layout directory that `crane push`
// uploads. Pure apart from writeOciLayout; the same layers and spec always give the same manifest
// digest, so the digest of an image is known before it is pushed (print-only mode, and the tests
// compare both).
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { constants, gzipSync } from 'node:zlib';
import { canonicalEntries, type TarEntry, type TarOptions, tarBytes } from './archive.ts';

export const MEDIA_TYPES = {
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  index: 'application/vnd.oci.image.index.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export function sha256(data: Uint8Array | readonly Uint8Array[]): string {
  const h = createHash('sha256');
  if (data instanceof Uint8Array) h.update(data);
  else for (const c of data) h.update(c);
  return `sha256:${h.digest('hex')}`;
}

export interface Layer {
  /** What the layer holds, recorded in the image history. */
  name: string;
  /** sha256 of the uncompressed tar (the config's rootfs.diff_ids). */
  diffId: string;
  /** sha256 of the gzip blob (the manifest's layer digest). */
  digest: string;
  gz: Buffer;
  /** Paths in the layer, in layer order (for the reports and the tests). */
  paths: string[];
}

/**
 * A gzip layer. zlib at a fixed level writes no timestamp or file name into the gzip header, so equal
 * tar bytes give equal blobs for a given zlib (the one in the pinned Node release).
 */
export function buildLayer(
  name: string,
  entries: readonly TarEntry[],
  opts: TarOptions & { cache?: LayerCache },
): Layer {
  const canonical = canonicalEntries(entries);
  const tar = tarBytes(canonical, opts);
  const diffId = sha256(tar);
  const gz = opts.cache?.get(diffId) ?? gzipSync(tar, { level: 6, strategy: constants.Z_DEFAULT_STRATEGY });
  opts.cache?.put(diffId, gz);
  return { name, diffId, digest: sha256(gz), gz, paths: canonical.map((e) => e.path) };
}

/**
 * gzip blobs of large layers by the sha256 of their tar (the diff_id): the operator image's Node layer
 * is ~130 MB and gzipping it is most of a build, while the tar, and so the blob, only changes with the
 * Node binary or the source date. The blob is a pure function of the tar (fixed zlib level, no header
 * timestamp), so a cached blob is the one a fresh gzip would give; VWS_LAYER_CACHE=off skips the cache
 * (the reproducibility test's second build does). Keeps the newest `keep` blobs.
 */
export class LayerCache {
  readonly dir: string;
  readonly minBytes: number;
  readonly keep: number;

  constructor(dir: string, minBytes = 16 * 1024 * 1024, keep = 8) {
    this.dir = dir;
    this.minBytes = minBytes;
    this.keep = keep;
  }

  static fromEnv(dir: string, env: Record<string, string | undefined> = process.env): LayerCache | undefined {
    return env.VWS_LAYER_CACHE === 'off' ? undefined : new LayerCache(dir);
  }

  #path(diffId: string): string {
    return join(this.dir, `${diffId.replace('sha256:', '')}.gz`);
  }

  get(diffId: string): Buffer | undefined {
    const p = this.#path(diffId);
    return existsSync(p) ? readFileSync(p) : undefined;
  }

  put(diffId: string, gz: Buffer): void {
    if (gz.length < this.minBytes || existsSync(this.#path(diffId))) return;
    mkdirSync(this.dir, { recursive: true });
    const tmp = `${this.#path(diffId)}.${process.pid}.tmp`;
    writeFileSync(tmp, gz);
    // rename is atomic: a concurrent reader sees the whole blob or none.
    renameSync(tmp, this.#path(diffId));
    const blobs = readdirSync(this.dir)
      .filter((f) => f.endsWith('.gz'))
      .map((f) => ({ f, t: statSync(join(this.dir, f)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const { f } of blobs.slice(this.keep)) rmSync(join(this.dir, f), { force: true });
  }
}

export interface ImageSpec {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  /** Numeric `uid:gid`, so Kubernetes can verify runAsNonRoot. */
  user?: string;
  workingDir?: string;
  labels?: Record<string, string>;
  /** e.g. ['8080/tcp'] */
  exposedPorts?: string[];
  /** RFC 3339: the config's `created` and every history entry's (the source date, never the clock). */
  created: string;
  architecture?: string;
  os?: string;
}

/** What goes in one layer, before it is written. */
export interface LayerPlan {
  /** What the layer holds, recorded in the image history. */
  name: string;
  entries: TarEntry[];
  /** Keep its gzip between builds (a large layer that seldom changes: LayerCache). */
  cached?: boolean;
}

/** An image before its layers are written: what goes in each layer, and the config. */
export interface ImagePlan {
  layers: LayerPlan[];
  spec: ImageSpec;
}

export interface Image {
  layers: Layer[];
  config: Buffer;
  configDigest: string;
  manifest: Buffer;
  /** The manifest digest: what `<repo>@sha256:…` names. */
  digest: string;
}

function sortedObject(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function imageConfig(layers: readonly Layer[], spec: ImageSpec): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  if (spec.user) config.User = spec.user;
  if (spec.exposedPorts?.length)
    config.ExposedPorts = Object.fromEntries([...spec.exposedPorts].sort().map((p) => [p, {}]));
  if (spec.env?.length) config.Env = [...spec.env];
  if (spec.entrypoint) config.Entrypoint = [...spec.entrypoint];
  if (spec.cmd) config.Cmd = [...spec.cmd];
  if (spec.workingDir) config.WorkingDir = spec.workingDir;
  if (spec.labels) config.Labels = sortedObject(spec.labels);
  return {
    created: spec.created,
    architecture: spec.architecture ?? 'amd64',
    os: spec.os ?? 'linux',
    config,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({ created: spec.created, created_by: `hack/images.ts: ${l.name}` })),
  };
}

export function assembleImage(layers: readonly Layer[], spec: ImageSpec): Image {
  const config = Buffer.from(JSON.stringify(imageConfig(layers, spec)));
  const configDigest = sha256(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.manifest,
      config: { mediaType: MEDIA_TYPES.config, digest: configDigest, size: config.length },
      layers: layers.map((l) => ({ mediaType: MEDIA_TYPES.layer, digest: l.digest, size: l.gz.length })),
    }),
  );
  return { layers: [...layers], config, configDigest, manifest, digest: sha256(manifest) };
}

/** The image of a plan, every layer dated `mtime`; `cache` serves the layers marked cached. */
export function assemblePlan(plan: ImagePlan, opts: { mtime: number; cache?: LayerCache }): Image {
  const layers = plan.layers.map((l) =>
    buildLayer(l.name, l.entries, {
      mtime: opts.mtime,
      ...(l.cached && opts.cache ? { cache: opts.cache } : {}),
    }),
  );
  return assembleImage(layers, plan.spec);
}

export interface Platform {
  os: string;
  architecture: string;
}

/** An OCI image index naming one image and its platform. */
export interface PlatformIndex {
  index: Buffer;
  /** What `<repo>@sha256:…` names when the index is pushed. */
  digest: string;
}

/**
 * The image wrapped in an image index that states its platform. Tools that ask which platforms an
 * image supports (operator-sdk's multiarch validator runs `docker manifest inspect`, OperatorHub's
 * arch filter) read the index; a bare manifest answers "none".
 */
export function platformIndex(image: Image, platform: Platform): PlatformIndex {
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.index,
      manifests: [
        {
          mediaType: MEDIA_TYPES.manifest,
          digest: image.digest,
          size: image.manifest.length,
          platform: { architecture: platform.architecture, os: platform.os },
        },
      ],
    }),
  );
  return { index, digest: sha256(index) };
}

/**
 * An OCI image layout (oci-layout, index.json, blobs/sha256/*) holding one image, or its platform index
 * when given: `crane push DIR REF` pushes the one entry of index.json.
 */
export function writeOciLayout(dir: string, image: Image, platform?: PlatformIndex): void {
  const blobs = join(dir, 'blobs/sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (digest: string, data: Buffer) =>
    writeFileSync(join(blobs, digest.slice('sha256:'.length)), data);
  for (const l of image.layers) put(l.digest, l.gz);
  put(image.configDigest, image.config);
  put(image.digest, image.manifest);
  if (platform) put(platform.digest, platform.index);
  writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const top = platform
    ? { mediaType: MEDIA_TYPES.index, digest: platform.digest, size: platform.index.length }
    : { mediaType: MEDIA_TYPES.manifest, digest: image.digest, size: image.manifest.length };
  writeFileSync(
    join(dir, 'index.json'),
    JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPES.index, manifests: [top] }),
  );
}

/** `repo@sha256:…` */
export function byDigest(repo: string, image: Pick<Image, 'digest'>): string {
  return `${repo}@${image.digest}`;
}
