// The project's images, assembled without a Docker daemon (see docs/adr/0005-images-and-mirroring.md):
//
//   <registry>/vworkspace-operator:v<version>   Node 24 + production node_modules + operator/src, user 65532
//   <registry>/helm:<HELM_VERSION>              (helm: 'ours') the helm CLI runner, bin/helm
//   <registry>/vworkspace-operator-bundle:v<V>  a registry+v1 bundle per version in catalog/ not yet published
//   <registry>/vworkspace-operator-catalog:v<version>  opm serve + the catalog rendered for <registry>
//
// Each image's digest follows from its content alone (hack/images/oci.ts), so it is known before the
// push and equal on every build from the same inputs. The chain is operator → bundles (the CSV names
// the operator by digest) → catalog (each olm.bundle names its bundle image by digest), which is what a
// mirror needs: every image reachable from the catalog, by digest.
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { createdAtFor, ROOT, readRepoFile, writeBundleDir } from '../bundle.ts';
import { bundlePath, CATALOG_DIR, renderBundle } from '../catalog.ts';
import { PACKAGE_NAME } from '../packaging/csv.ts';
import { bundleName } from '../packaging/fbc.ts';
import { bundleAnnotations } from '../packaging/manifests.ts';
import { opmValidateFindings, runTool } from '../packaging/tools.ts';
import {
  fileEntry,
  NONROOT,
  nodeRuntime,
  operatorSources,
  productionNodeModules,
  treeEntries,
  userlandEntries,
} from './contents.ts';
import { type CraneOptions, pushLayout } from './crane.ts';
import { assembleImage, buildLayer, byDigest, type Image, writeOciLayout } from './oci.ts';

export const REPOS = {
  operator: PACKAGE_NAME,
  bundle: `${PACKAGE_NAME}-bundle`,
  catalog: `${PACKAGE_NAME}-catalog`,
  helm: 'helm',
} as const;
export const APP_DIR = 'app';
export const CONFIGS_LABEL = 'operators.operatorframework.io.index.configs.v1';
const SOURCE = 'https://github.com/vworkspace/vworkspace-operator';

export interface BuiltImage {
  /** operator, helm, bundle-v0.1.0, catalog */
  name: string;
  repo: string;
  tag: string;
  image: Image;
  /** `repo@sha256:…` */
  ref: string;
}

export interface ImageSet {
  registry: string;
  version: string;
  operator: BuiltImage;
  /** Built only with helm: 'ours'. */
  helm?: BuiltImage;
  /** RELATED_IMAGE_HELM in every bundle: ours, or packaging/images.yaml's. */
  helmRef: string;
  /** The bundle images built now (versions not yet in packaging/published.yaml). */
  bundles: BuiltImage[];
  /** Every version's bundle image in the catalog, built or published: version → `repo@sha256:…`. */
  bundleRefs: Record<string, string>;
  catalog: BuiltImage;
  /** The catalog rendered for `registry` (what the catalog image holds at /configs). */
  configsDir: string;
}

export interface BuildOptions {
  /** Registry and namespace of every reference: `quay.io/vworkspace`, `127.0.0.1:5000/vws`. */
  registry: string;
  /** 'pinned': packaging/images.yaml's helm image; 'ours': build one from bin/helm. */
  helm: 'pinned' | 'ours';
  /** Scratch space: bundle directories and the rendered catalog. */
  workDir: string;
  /** SOURCE_DATE_EPOCH: overrides every version's date from packaging/releases.yaml. */
  sourceDateEpoch?: string;
  log?: (line: string) => void;
}

function packageVersion(): string {
  return (JSON.parse(readRepoFile('package.json') ?? '{}') as { version: string }).version;
}

/** The versions in the committed catalog (one olm.bundle file each), oldest first. */
export function catalogVersions(): string[] {
  const prefix = `${PACKAGE_NAME}.v`;
  return readdirSync(join(ROOT, CATALOG_DIR, 'bundles'))
    .filter((f) => f.startsWith(prefix) && f.endsWith('.yaml'))
    .map((f) => f.slice(prefix.length, -'.yaml'.length))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** The source date of a version: layer mtimes and the config's `created`. */
export function sourceDate(version: string, sourceDateEpoch?: string): { created: string; mtime: number } {
  const created = createdAtFor(version, readRepoFile('packaging/releases.yaml') ?? '', sourceDateEpoch);
  return { created, mtime: Math.floor(Date.parse(created) / 1000) };
}

function built(name: string, repo: string, tag: string, image: Image): BuiltImage {
  return { name, repo, tag, image, ref: byDigest(repo, image) };
}

export function operatorImage(registry: string, version: string, epoch?: string): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const runtime = nodeRuntime(join(ROOT, 'node_modules/node/bin/node'));
  const layers = [
    buildLayer('Node 24 (npm package node) and its shared libraries', runtime.entries, { mtime }),
    buildLayer('production node_modules', productionNodeModules(ROOT, APP_DIR), { mtime }),
    buildLayer('operator sources', operatorSources(ROOT, APP_DIR), { mtime }),
  ];
  const image = assembleImage(layers, {
    created,
    user: `${NONROOT}:${NONROOT}`,
    workingDir: `/${APP_DIR}`,
    entrypoint: ['/usr/local/bin/node', 'operator/src/main.ts'],
    env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production'],
    exposedPorts: ['8080/tcp', '8081/tcp', '9443/tcp'],
    labels: {
      'org.opencontainers.image.title': PACKAGE_NAME,
      'org.opencontainers.image.description': 'Day-2 operations for Helm-deployed applications',
      'org.opencontainers.image.source': SOURCE,
      'org.opencontainers.image.licenses': 'Apache-2.0',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.created': created,
      'io.vworkspace.image.runtime-libraries': runtime.packages,
    },
  });
  return built('operator', `${registry}/${REPOS.operator}`, `v${version}`, image);
}

/** The helm engine's runner image: bin/helm (static), the CA bundle for https chart repositories. */
export function helmImage(registry: string, version: string, epoch?: string): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const helmVersion = /^HELM_VERSION=(\S+)$/m.exec(
    readFileSync(join(ROOT, 'hack/versions.env'), 'utf8'),
  )?.[1];
  if (!helmVersion) throw new Error('hack/versions.env has no HELM_VERSION');
  const entries = [
    fileEntry(join(ROOT, 'bin/helm'), 'usr/local/bin/helm', 0o755),
    fileEntry('/etc/ssl/certs/ca-certificates.crt', 'etc/ssl/certs/ca-certificates.crt', 0o644),
    ...userlandEntries(),
  ];
  const image = assembleImage([buildLayer(`helm ${helmVersion} (bin/helm)`, entries, { mtime })], {
    created,
    user: `${NONROOT}:${NONROOT}`,
    entrypoint: ['/usr/local/bin/helm'],
    cmd: ['--help'],
    env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'HOME=/tmp'],
    labels: {
      'org.opencontainers.image.title': 'helm',
      'org.opencontainers.image.version': helmVersion,
      'org.opencontainers.image.source': 'https://github.com/helm/helm',
      'org.opencontainers.image.licenses': 'Apache-2.0',
    },
  });
  return built('helm', `${registry}/${REPOS.helm}`, helmVersion, image);
}

/** FROM scratch: manifests/ and metadata/ of a bundle directory, the annotations as labels. */
export function bundleImage(
  registry: string,
  version: string,
  bundleDir: string,
  epoch?: string,
): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const entries = [
    ...treeEntries(join(bundleDir, 'manifests'), 'manifests'),
    ...treeEntries(join(bundleDir, 'metadata'), 'metadata'),
  ];
  const image = assembleImage(
    [buildLayer(`bundle ${bundleName(PACKAGE_NAME, version)}`, entries, { mtime })],
    {
      created,
      labels: bundleAnnotations(),
    },
  );
  return built(`bundle-v${version}`, `${registry}/${REPOS.bundle}`, `v${version}`, image);
}

/**
 * opm (static) serving /configs, grpc_health_probe for OLM's exec probes, a writable /tmp. opm builds its
 * serve cache at start: the cache files are not byte-reproducible (two `opm serve --cache-only` runs on
 * the same catalog differ), so a pre-built cache would break the reproducible digest; and with
 * --cache-dir set opm enforces a pre-built cache unless told not to.
 */
export function catalogImage(
  registry: string,
  version: string,
  configsDir: string,
  epoch?: string,
): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const entries = [
    fileEntry(join(ROOT, 'bin/opm'), 'bin/opm', 0o755),
    fileEntry(join(ROOT, 'bin/grpc-health-probe'), 'bin/grpc_health_probe', 0o755),
    ...treeEntries(configsDir, 'configs'),
    ...userlandEntries(),
  ];
  const image = assembleImage([buildLayer('opm, grpc_health_probe and the catalog', entries, { mtime })], {
    created,
    user: `${NONROOT}:${NONROOT}`,
    entrypoint: ['/bin/opm'],
    cmd: ['serve', '/configs', '--cache-dir=/tmp/cache', '--cache-enforce-integrity=false'],
    env: ['PATH=/bin'],
    exposedPorts: ['50051/tcp'],
    labels: { [CONFIGS_LABEL]: '/configs' },
  });
  return built('catalog', `${registry}/${REPOS.catalog}`, `v${version}`, image);
}

/**
 * packaging/published.yaml: `<version>: <bundle image>@sha256:…` for each version already released. A
 * published bundle image is immutable: those versions are not rebuilt, their catalog entry is the
 * committed one pointing at the published image. Absent until the first release.
 */
export function publishedBundles(
  read: (p: string) => string | undefined = readRepoFile,
): Record<string, string> {
  const text = read('packaging/published.yaml');
  const parsed: unknown = text ? YAML.parse(text) : {};
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error('packaging/published.yaml must map versions to bundle images');
  for (const [v, ref] of Object.entries(parsed))
    if (typeof ref !== 'string' || !/@sha256:[a-f0-9]{64}$/.test(ref))
      throw new Error(
        `packaging/published.yaml: ${v} must be a bundle image by digest, not ${JSON.stringify(ref)}`,
      );
  return parsed as Record<string, string>;
}

/**
 * A committed olm.bundle (rendered with an empty image) pointing at its published bundle image: `image`
 * set, and the image added to relatedImages as `opm render` of the image itself lists it.
 */
export function publishedEntry(committedYaml: string, ref: string): string {
  const doc = YAML.parseDocument(committedYaml.replace(/^---\n/, ''));
  doc.set('image', ref);
  const related = (doc.get('relatedImages', true) as YAML.YAMLSeq | undefined)?.toJSON() as
    | { name?: string; image: string }[]
    | undefined;
  const list = related ?? [];
  if (!list.some((r) => r.image === ref)) list.push({ name: '', image: ref });
  list.sort((a, b) => (a.image < b.image ? -1 : a.image > b.image ? 1 : 0));
  doc.set('relatedImages', list);
  return `---\n${doc.toString({ lineWidth: 0 })}`;
}

/**
 * catalog/ rendered for a registry, in `dir`: package.yaml and channels.yaml as committed (the same
 * upgrade graph), and each version's olm.bundle as given (opm render of a bundle directory built for the
 * registry, or the committed entry of a published version), each naming its bundle image by digest.
 */
export function renderCatalogFor(
  dir: string,
  entries: readonly { version: string; yaml: string; ref: string }[],
) {
  cpSync(join(ROOT, 'catalog'), dir, { recursive: true });
  for (const e of entries) {
    if (!e.yaml.includes(`image: ${e.ref}`))
      throw new Error(`the ${e.version} entry does not name image ${e.ref}`);
    writeFileSync(join(dir, bundlePath(e.version).slice('catalog/'.length)), e.yaml);
  }
  const findings = opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));
  if (findings.length > 0)
    throw new Error(`opm validate ${dir}:\n${findings.map((f) => `${f.level}: ${f.message}`).join('\n')}`);
}

export function buildImages(opts: BuildOptions): ImageSet {
  const log = opts.log ?? (() => {});
  const version = packageVersion();
  const epoch = opts.sourceDateEpoch;
  log(`operator image (Node 24, production node_modules, operator/src) for ${version}`);
  const operator = operatorImage(opts.registry, version, epoch);
  let helm: BuiltImage | undefined;
  let helmRef = String((YAML.parse(readRepoFile('packaging/images.yaml') ?? '') as { helm?: string }).helm);
  if (opts.helm === 'ours') {
    log('helm runner image (bin/helm)');
    helm = helmImage(opts.registry, version, epoch);
    helmRef = helm.ref;
  }
  const bundles: BuiltImage[] = [];
  const entries: { version: string; yaml: string; ref: string }[] = [];
  const published = publishedBundles();
  for (const v of catalogVersions()) {
    const ref = published[v];
    if (ref) {
      log(`bundle ${v}: published as ${ref}, not rebuilt`);
      entries.push({ version: v, ref, yaml: publishedEntry(readRepoFile(bundlePath(v)) ?? '', ref) });
      continue;
    }
    log(`bundle image ${v} (operator ${operator.ref})`);
    const bundleDir = join(opts.workDir, `bundle-${v}`);
    writeBundleDir(bundleDir, {
      version: v,
      images: { operator: operator.ref, helm: helmRef },
      createdAt: sourceDate(v, epoch).created,
    });
    const b = bundleImage(opts.registry, v, bundleDir, epoch);
    bundles.push(b);
    entries.push({ version: v, ref: b.ref, yaml: renderBundle(bundleDir, b.ref) });
  }
  const configsDir = join(opts.workDir, 'configs');
  mkdirSync(configsDir, { recursive: true });
  log(`catalog rendered for ${opts.registry} (opm render, opm validate)`);
  renderCatalogFor(configsDir, entries);
  const catalog = catalogImage(opts.registry, version, configsDir, epoch);
  return {
    registry: opts.registry,
    version,
    operator,
    ...(helm ? { helm } : {}),
    helmRef,
    bundles,
    bundleRefs: Object.fromEntries(entries.map((e) => [e.version, e.ref])),
    catalog,
    configsDir,
  };
}

export function allImages(set: ImageSet): BuiltImage[] {
  return [set.operator, ...(set.helm ? [set.helm] : []), ...set.bundles, set.catalog];
}

/**
 * Pushes every image as `repo:tag` from an OCI layout under `workDir`, and checks the registry stored
 * it under the digest computed here (a different digest would mean the push changed the image).
 */
export function pushImages(
  set: ImageSet,
  workDir: string,
  opts: CraneOptions & { log?: (l: string) => void },
) {
  pushBuilt(allImages(set), workDir, opts);
}

/** pushImages for any list of built images (the node's own: hack/images/node-images.ts). */
export function pushBuilt(
  images: readonly BuiltImage[],
  workDir: string,
  opts: CraneOptions & { log?: (l: string) => void } = {},
) {
  for (const b of images) {
    const layout = join(workDir, 'layouts', b.name);
    writeOciLayout(layout, b.image);
    opts.log?.(`push ${b.repo}:${b.tag}`);
    const pushed = pushLayout(layout, `${b.repo}:${b.tag}`, opts);
    if (pushed !== b.ref) throw new Error(`pushed ${pushed}, expected ${b.ref}`);
  }
}
