// The project's images, assembled without a Docker daemon (see docs/adr/0005-images-and-mirroring.md):
//
//   <registry>/vworkspace-operator:v<V>         per version built: the Dockerfile's image (operator-image.ts):
//                                                Node 24 + production node_modules + operator/, user
//                                                65532, in a linux/amd64 image index
//   <registry>/helm:<HELM_VERSION>              (helm: 'ours') the helm CLI runner, bin/helm, indexed too
//   <registry>/vworkspace-operator-bundle:v<V>  a registry+v1 bundle per catalog version not yet published
//   <registry>/vworkspace-operator-catalog:v<version>  opm serve + the catalog rendered for <registry>
//
// Each image's digest follows from its content alone (hack/images/oci.ts), so it is known before the
// push and equal on every build from the same inputs. The chain is operator → bundles (each version's CSV
// names that version's operator image by digest) → catalog (each olm.bundle names its bundle image by
// digest), which is what a mirror needs: every image reachable from the catalog, by digest.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import {
  createdAtFor,
  pinnedImages,
  ROOT,
  readRepoFile,
  releaseRegistry,
  TEMPLATE_PATH,
  toYaml,
  writeBundleDir,
} from '../bundle.ts';
import { type Images, PACKAGE_NAME, PLATFORMS } from '../packaging/csv.ts';
import { bundleName } from '../packaging/fbc.ts';
import { type CatalogTemplate, parseTemplate, templateVersions } from '../packaging/template.ts';
import { opmValidateFindings, runTool } from '../packaging/tools.ts';
import { caBundleEntry, fileEntry, NONROOT, treeEntries, userlandEntries } from './contents.ts';
import { type CraneOptions, pushLayout } from './crane.ts';
import {
  assembleImage,
  assemblePlan,
  buildLayer,
  type Image,
  LayerCache,
  type PlatformIndex,
  platformIndex,
  writeOciLayout,
} from './oci.ts';
import { operatorPlan } from './operator-image.ts';
import { renderBundleDir } from './opm.ts';

/**
 * Where releases are pushed: the template's bundle images and the pinned operator images live here
 * (packaging/images.yaml `registry`; `make release REGISTRY=…` writes it).
 */
export const RELEASE_REGISTRY = releaseRegistry();
export const REPOS = {
  operator: PACKAGE_NAME,
  bundle: `${PACKAGE_NAME}-bundle`,
  catalog: `${PACKAGE_NAME}-catalog`,
  helm: 'helm',
} as const;
export const CONFIGS_LABEL = 'operators.operatorframework.io.index.configs.v1';

export interface BuiltImage {
  /** operator-v0.1.0, helm, bundle-v0.1.0, catalog */
  name: string;
  repo: string;
  tag: string;
  image: Image;
  /** The image index stating the platform (operator and helm images: what the CSV names). */
  platform?: PlatformIndex;
  /** What the registry stores under `ref`: the index digest when there is one, else the manifest's. */
  digest: string;
  /** `repo@sha256:…` */
  ref: string;
}

export interface ImageSet {
  registry: string;
  /** package.json's version: the catalog image's tag and `operator`. */
  version: string;
  /** The operator image of package.json's version (the IMG for `make bundle`). */
  operator: BuiltImage;
  /** The operator image of every version built now (each bundle names its own). */
  operators: Record<string, BuiltImage>;
  /** Built only with helm: 'ours'. */
  helm?: BuiltImage;
  /** RELATED_IMAGE_HELM in every bundle: ours, or packaging/images.yaml's. */
  helmRef: string;
  /** The bundle images built now (versions not yet in packaging/published.yaml). */
  bundles: BuiltImage[];
  /** Every version's bundle image in the catalog, built or published: version → `repo@sha256:…`. */
  bundleRefs: Record<string, string>;
  /** The bundle directory each built bundle image holds: version → directory under workDir. */
  bundleDirs: Record<string, string>;
  catalog: BuiltImage;
  /** The catalog rendered for `registry` (what the catalog image holds at /configs). */
  configsDir: string;
  /** catalog/template.yaml with every bundle image this build made (what configsDir renders). */
  template: CatalogTemplate;
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

/**
 * A published version's frozen olm.bundle: `opm render` of its pushed image, kept beside the template
 * (catalog/published/<version>.yaml, written by `hack/catalog.ts publish`). The template itself names the
 * image only, as opm's basic template requires (it refuses bundles with other fields).
 */
export const PUBLISHED_DIR = 'catalog/published';
export const publishedRenderPath = (version: string) => `${PUBLISHED_DIR}/${version}.yaml`;

/**
 * catalog/template.yaml as the tools use it: each published version's image-only entry replaced by its
 * frozen render, so nothing needs to pull a published image to render the catalog.
 */
export function committedTemplate(read: (p: string) => string | undefined = readRepoFile): CatalogTemplate {
  const text = read(TEMPLATE_PATH);
  if (!text) throw new Error(`${TEMPLATE_PATH} is missing`);
  const t = parseTemplate(text);
  const published = publishedBundles(read);
  const bundles = t.bundles.map((b) => {
    const v = Object.keys(published).find((x) => published[x] === b.image);
    if (!v) return b;
    const frozen = read(publishedRenderPath(v));
    if (!frozen)
      throw new Error(
        `${v} is published but ${publishedRenderPath(v)} is missing: node hack/catalog.ts publish ${v}`,
      );
    return YAML.parse(frozen) as CatalogTemplate['bundles'][number];
  });
  return { ...t, bundles };
}

/** The template as the file holds it and opm reads it: every bundle only its image. */
export function imageOnly(t: CatalogTemplate): CatalogTemplate {
  return { ...t, bundles: t.bundles.map((b) => ({ schema: 'olm.bundle' as const, image: b.image })) };
}

/** The versions in the committed catalog template, oldest first. */
export function catalogVersions(): string[] {
  return templateVersions(committedTemplate());
}

/** The source date of a version: layer mtimes and the config's `created`. */
export function sourceDate(version: string, sourceDateEpoch?: string): { created: string; mtime: number } {
  const created = createdAtFor(version, readRepoFile('packaging/releases.yaml') ?? '', sourceDateEpoch);
  return { created, mtime: Math.floor(Date.parse(created) / 1000) };
}

function built(name: string, repo: string, tag: string, image: Image, platform?: PlatformIndex): BuiltImage {
  const digest = platform?.digest ?? image.digest;
  return { name, repo, tag, image, ...(platform ? { platform } : {}), digest, ref: `${repo}@${digest}` };
}

/** The one platform the images are built for (csv.ts PLATFORMS), as an image index. */
function indexed(image: Image): PlatformIndex {
  const [p] = PLATFORMS;
  return platformIndex(image, { os: p.os, architecture: p.architecture });
}

const layerCache = () => LayerCache.fromEnv(join(ROOT, 'bin/.layer-cache'));

export function operatorImage(registry: string, version: string, epoch?: string): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const cache = layerCache();
  const image = assemblePlan(operatorPlan(ROOT, version, created), { mtime, ...(cache ? { cache } : {}) });
  return built(`operator-v${version}`, `${registry}/${REPOS.operator}`, `v${version}`, image, indexed(image));
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
    caBundleEntry(),
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
  return built('helm', `${registry}/${REPOS.helm}`, helmVersion, image, indexed(image));
}

/** FROM scratch: manifests/ and metadata/ of a bundle directory, its annotations.yaml as the labels. */
export function bundleImage(
  registry: string,
  version: string,
  bundleDir: string,
  epoch?: string,
): BuiltImage {
  const { created, mtime } = sourceDate(version, epoch);
  const annotations = (
    YAML.parse(readFileSync(join(bundleDir, 'metadata/annotations.yaml'), 'utf8')) as {
      annotations: Record<string, string>;
    }
  ).annotations;
  const entries = [
    ...treeEntries(join(bundleDir, 'manifests'), 'manifests'),
    ...treeEntries(join(bundleDir, 'metadata'), 'metadata'),
  ];
  const image = assembleImage(
    [buildLayer(`bundle ${bundleName(PACKAGE_NAME, version)}`, entries, { mtime })],
    { created, labels: annotations },
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
 * published bundle image is immutable: that version is not rebuilt, and its catalog/template.yaml entry
 * is the image's rendered olm.bundle (`node hack/catalog.ts publish VERSION`), so a catalog can be
 * rendered without pulling it. Absent until the first release.
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

/** A version's bundle: the directory (manifests/, metadata/) for `images`, and its image. */
export function versionBundle(
  registry: string,
  version: string,
  images: Images,
  dir: string,
  epoch?: string,
): BuiltImage {
  writeBundleDir(dir, { version, images, createdAt: sourceDate(version, epoch).created });
  return bundleImage(registry, version, dir, epoch);
}

/**
 * The bundle image each version of the committed template names: built from the committed sources
 * with that version's pinned operator image (packaging/images.yaml), for the release registry.
 * Published versions are left out (frozen). The bundle directories go to `dir/<version>` when given.
 */
export function pinnedBundleImages(
  versions: readonly string[],
  opts: { registry?: string; dir?: string } = {},
): Record<string, BuiltImage> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'vws-pinned-bundles-'));
  try {
    return Object.fromEntries(
      versions.map((v) => [
        v,
        versionBundle(opts.registry ?? RELEASE_REGISTRY, v, pinnedImages(v), join(dir, v)),
      ]),
    );
  } finally {
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** A template entry that is already rendered (a published version), not an image for opm to pull. */
export function isRendered(b: CatalogTemplate['bundles'][number]): boolean {
  return Array.isArray(b.properties);
}

/**
 * The file-based catalog for a template, rendered without pulling: each version's olm.bundle is `opm
 * render` of the bundle directory its image was built from, with the image reference filled in and the
 * same migration as `opm alpha render-template --migrate-level bundle-object-to-csv-metadata` (the
 * community test renders the pushed images that way and compares); published versions are the
 * template's rendered entries. Written to `<dir>/<package>/catalog.yaml` and checked by `opm validate`.
 */
export function renderCatalogFor(
  dir: string,
  template: CatalogTemplate,
  bundleDirs: Record<string, string>,
): void {
  const blobs: string[] = [toYaml(template.package), ...template.channels.map((c) => toYaml(c))];
  for (const v of templateVersions(template)) {
    const entry = template.bundles.find((b) => b.name === bundleName(template.package.name, v));
    const rendered = entry && isRendered(entry) ? toYaml(entry) : undefined;
    const bundleDir = bundleDirs[v];
    const ref = refForVersion(template, v);
    if (rendered) blobs.push(rendered);
    else if (bundleDir && ref)
      blobs.push(renderBundleDir(bundleDir, { image: ref, migrate: true }).replace(/^---\n/, ''));
    else throw new Error(`no bundle directory and no rendered entry for ${v}`);
  }
  const file = join(dir, template.package.name, 'catalog.yaml');
  mkdirSync(join(dir, template.package.name), { recursive: true });
  writeFileSync(file, blobs.join('---\n'));
  // In opm's own layout (what `opm alpha render-template` writes), then validated.
  const normalized = runTool(ROOT, 'opm', ['render', dir, '--output', 'yaml']);
  if (normalized.code !== 0) throw new Error(`opm render ${dir}:\n${normalized.stderr}`);
  writeFileSync(file, normalized.stdout);
  const findings = opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));
  if (findings.length > 0)
    throw new Error(`opm validate ${dir}:\n${findings.map((f) => `${f.level}: ${f.message}`).join('\n')}`);
}

/** The versions whose template entry is only an image (not published), oldest first. */
export function openVersions(template: CatalogTemplate): string[] {
  const rendered = new Set(template.bundles.filter(isRendered).map((b) => String(b.name)));
  return templateVersions(template).filter((v) => !rendered.has(bundleName(template.package.name, v)));
}

/**
 * Which template image is which version: unrendered entries carry only an image, so the template keeps
 * them in version order (catalog.ts writes them so) and they pair with the unrendered versions.
 */
export function refForVersion(template: CatalogTemplate, version: string): string | undefined {
  const pkg = template.package.name;
  const open = openVersions(template);
  const images = template.bundles.filter((b) => !isRendered(b)).map((b) => b.image);
  if (images.length !== open.length)
    throw new Error(
      `${TEMPLATE_PATH}: ${images.length} bundle images for ${open.length} versions (${open.join(', ')})`,
    );
  const i = open.indexOf(version);
  return i >= 0 ? images[i] : template.bundles.find((b) => b.name === bundleName(pkg, version))?.image;
}

/** The template with each unrendered version's image replaced by `refs[version]` when given. */
export function withImages(template: CatalogTemplate, refs: Record<string, string>): CatalogTemplate {
  const open = openVersions(template);
  return {
    ...template,
    bundles: [
      ...template.bundles.filter(isRendered),
      ...open.map((v) => ({
        schema: 'olm.bundle' as const,
        image: refs[v] ?? refForVersion(template, v) ?? '',
      })),
    ],
  };
}

export function buildImages(opts: BuildOptions): ImageSet {
  const log = opts.log ?? (() => {});
  const version = packageVersion();
  const epoch = opts.sourceDateEpoch;
  const template = committedTemplate();
  const published = publishedBundles();
  const unpublished = templateVersions(template).filter((v) => !published[v]);
  const operators: Record<string, BuiltImage> = {};
  for (const v of new Set([...unpublished, version])) {
    log(`operator image ${v} (Node 24, production node_modules, operator/src; its version label and date)`);
    operators[v] = operatorImage(opts.registry, v, epoch);
  }
  const operator = operators[version]!;
  let helm: BuiltImage | undefined;
  let helmRef = String((YAML.parse(readRepoFile('packaging/images.yaml') ?? '') as { helm?: string }).helm);
  if (opts.helm === 'ours') {
    log('helm runner image (bin/helm)');
    helm = helmImage(opts.registry, version, epoch);
    helmRef = helm.ref;
  }
  const bundles: BuiltImage[] = [];
  const bundleDirs: Record<string, string> = {};
  const bundleRefs: Record<string, string> = {};
  for (const v of templateVersions(template)) {
    const ref = published[v];
    if (ref) {
      log(`bundle ${v}: published as ${ref}, not rebuilt`);
      bundleRefs[v] = ref;
      continue;
    }
    const op = operators[v]!;
    const pin = pinnedImages(v).operator;
    if (pin !== op.ref.replace(opts.registry, RELEASE_REGISTRY))
      log(`bundle ${v}: names the operator image built now (${op.digest}), not packaging/images.yaml's pin`);
    bundleDirs[v] = join(opts.workDir, `bundle-${v}`);
    const b = versionBundle(opts.registry, v, { operator: op.ref, helm: helmRef }, bundleDirs[v], epoch);
    log(`bundle image ${v}: ${b.digest}`);
    bundles.push(b);
    bundleRefs[v] = b.ref;
  }
  const forBuild = withImages(template, bundleRefs);
  const configsDir = join(opts.workDir, 'configs');
  mkdirSync(configsDir, { recursive: true });
  log(`catalog rendered for ${opts.registry} (opm render, opm validate)`);
  renderCatalogFor(configsDir, forBuild, bundleDirs);
  const catalog = catalogImage(opts.registry, version, configsDir, epoch);
  return {
    registry: opts.registry,
    version,
    operator,
    operators,
    ...(helm ? { helm } : {}),
    helmRef,
    bundles,
    bundleRefs,
    bundleDirs,
    catalog,
    configsDir,
    template: forBuild,
  };
}

export function allImages(set: ImageSet): BuiltImage[] {
  return [...Object.values(set.operators), ...(set.helm ? [set.helm] : []), ...set.bundles, set.catalog];
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
  for (const b of allImages(set)) pushBuilt(b, workDir, opts);
}

export function pushBuilt(
  b: BuiltImage,
  workDir: string,
  opts: CraneOptions & { log?: (l: string) => void; as?: string } = {},
): void {
  const layout = join(workDir, 'layouts', b.name);
  writeOciLayout(layout, b.image, b.platform);
  const target = opts.as ?? b.repo;
  opts.log?.(`push ${target}:${b.tag}`);
  const pushed = pushLayout(layout, `${target}:${b.tag}`, opts);
  if (pushed !== `${target}@${b.digest}`) throw new Error(`pushed ${pushed}, expected ${target}@${b.digest}`);
  rmSync(layout, { recursive: true, force: true });
}
