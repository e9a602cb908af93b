// Mirroring a catalog for a disconnected cluster, pure: which images a file-based catalog references,
// where each goes in the mirror registry, and the cluster objects that redirect digest pulls there
// (ImageDigestMirrorSet for OpenShift 4.13+, ImageContentSourcePolicy for older clusters, and a
// CatalogSource for the mirrored catalog). hack/mirror.ts does the copying with crane or skopeo.
import type { FbcBlob } from '../packaging/fbc.ts';

export interface ImageRef {
  /** `quay.io`, `127.0.0.1:5000`, `docker.io` */
  registry: string;
  /** The path inside the registry: `vworkspace/vworkspace-operator`, `library/alpine`. */
  repository: string;
  tag?: string;
  digest?: string;
}

const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** A reference parsed the way container runtimes do (the first component is a registry when it has a `.`, a `:` or is localhost). */
export function parseRef(ref: string): ImageRef {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw new Error(`${ref}: ${digest} is not a sha256 digest`);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const parts = rest.split('/');
  const first = parts[0] ?? '';
  let registry = 'docker.io';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first;
    parts.shift();
  }
  if (registry === 'docker.io' && parts.length === 1) parts.unshift('library');
  const repository = parts.join('/');
  if (repository === '' || !/^[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/.test(repository))
    throw new Error(`${ref}: ${JSON.stringify(repository)} is not a repository name`);
  return { registry, repository, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

export function repoName(r: ImageRef): string {
  return `${r.registry}/${r.repository}`;
}

/** Every image a catalog references: each olm.bundle's `image` and `relatedImages`, sorted, once. */
export function catalogImages(blobs: readonly FbcBlob[]): string[] {
  const images = new Set<string>();
  for (const b of blobs) {
    if (b.schema !== 'olm.bundle') continue;
    if (b.image) images.add(b.image);
    for (const r of b.relatedImages ?? []) if (r.image) images.add(r.image);
  }
  return [...images].sort();
}

export interface MirrorEntry {
  /** `registry/repo@sha256:…` */
  source: string;
  /** `dest/repo@sha256:…`: the same digest in the mirror. */
  target: string;
}

export interface RepositoryMirror {
  /** `registry/repo`, as a pull names it. */
  source: string;
  mirror: string;
}

export interface MirrorPlan {
  entries: MirrorEntry[];
  repositories: RepositoryMirror[];
}

/** `dest/<repository>`: the source registry's host is dropped, its path kept (oc-mirror does the same). */
export function mirrorRepository(source: ImageRef, dest: string): string {
  return `${dest.replace(/\/+$/, '')}/${source.repository}`;
}

/**
 * Where each image goes. Only digest references can be mirrored for a disconnected cluster: digest
 * mirror sets redirect `@sha256:` pulls only, and a tag could point elsewhere tomorrow.
 */
export function mirrorPlan(images: readonly string[], dest: string): MirrorPlan {
  const byTag = images.filter((i) => !parseRef(i).digest);
  if (byTag.length > 0)
    throw new Error(`these images are not referenced by digest and cannot be mirrored: ${byTag.join(', ')}`);
  const entries: MirrorEntry[] = [];
  const repos = new Map<string, string>();
  const owners = new Map<string, string>();
  for (const image of [...new Set(images)].sort()) {
    const ref = parseRef(image);
    const source = repoName(ref);
    const mirror = mirrorRepository(ref, dest);
    const owner = owners.get(mirror);
    if (owner && owner !== source)
      throw new Error(`${source} and ${owner} would both be mirrored to ${mirror}`);
    owners.set(mirror, source);
    repos.set(source, mirror);
    entries.push({ source: `${source}@${ref.digest}`, target: `${mirror}@${ref.digest}` });
  }
  const repositories = [...repos.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([source, mirror]) => ({ source, mirror }));
  return { entries, repositories };
}

/** One rule per source repository; IDMS and ICSP share the shape. */
function digestMirrors(plan: MirrorPlan): { source: string; mirrors: string[] }[] {
  return plan.repositories.map((r) => ({ source: r.source, mirrors: [r.mirror] }));
}

/** config.openshift.io/v1 ImageDigestMirrorSet (OpenShift 4.13+). */
export function imageDigestMirrorSet(plan: MirrorPlan, name: string): Record<string, unknown> {
  return {
    apiVersion: 'config.openshift.io/v1',
    kind: 'ImageDigestMirrorSet',
    metadata: { name },
    spec: { imageDigestMirrors: digestMirrors(plan) },
  };
}

/** operator.openshift.io/v1alpha1 ImageContentSourcePolicy (before 4.13; deprecated since). */
export function imageContentSourcePolicy(plan: MirrorPlan, name: string): Record<string, unknown> {
  return {
    apiVersion: 'operator.openshift.io/v1alpha1',
    kind: 'ImageContentSourcePolicy',
    metadata: { name },
    spec: { repositoryDigestMirrors: digestMirrors(plan) },
  };
}

export function catalogSource(image: string, name: string, namespace: string): Record<string, unknown> {
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'CatalogSource',
    metadata: { name, namespace },
    spec: { sourceType: 'grpc', image, displayName: `${name} (mirrored)` },
  };
}

/** oc-mirror's mapping.txt format: `source=target`, one image a line. */
export function mappingText(plan: MirrorPlan): string {
  return plan.entries.map((e) => `${e.source}=${e.target}\n`).join('');
}

/** The mirror repository a digest pull of `image` is redirected to, or undefined when no rule covers it. */
export function redirect(image: string, repositories: readonly RepositoryMirror[]): string | undefined {
  const ref = parseRef(image);
  const rule = repositories.find((r) => r.source === repoName(ref));
  return rule && ref.digest ? `${rule.mirror}@${ref.digest}` : undefined;
}
