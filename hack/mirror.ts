// Mirrors the operator's catalog and every image it references to another registry, by digest, and
// writes what a disconnected cluster needs (docs/disconnected.md):
//
//   node hack/mirror.ts SRC DEST [--out DIR] [--dry-run] [--insecure] [--tool crane|skopeo] [--name NAME] [--namespace NS]
//     SRC   the catalog image (tag or digest), e.g. quay.io/vworkspace/vworkspace-operator-catalog:v0.1.0
//     DEST  the mirror registry and namespace, e.g. mirror.example.com:5000/olm
//     --out DIR       where the generated files go (default bin/mirror)
//     --dry-run       read the catalog and write the files, copy nothing
//     --insecure      both registries may speak plain HTTP (loopback ones always do)
//     --tool          what copies the images: crane (default; `crane copy` to the digest) or skopeo
//                     (`skopeo copy --all --preserve-digests` to a tag mirror-<12 hex>, as
//                     docs/disconnected.md tells a user to run it); the catalog is read with crane
//
// Reads the catalog from the image itself (crane export, the directory its
// operators.operatorframework.io.index.configs.v1 label names, `opm render`), collects every bundle
// image and related image, copies each with `crane copy` or `skopeo copy` (manifest and blobs byte for
// byte, so digests are unchanged), checks each digest in the mirror, and writes to DIR:
//   imagedigestmirrorset.yaml       config.openshift.io/v1, source repository → mirror repository
//   imagecontentsourcepolicy.yaml   operator.openshift.io/v1alpha1, the same rules for older clusters
//   catalogsource.yaml              the mirrored catalog image by digest
//   mapping.txt                     source=target per image (oc-mirror's format)
//   images.json                     the catalog digest, the plan and the rendered catalog's images
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, toYaml } from './bundle.ts';
import { readTar } from './images/archive.ts';
import { CONFIGS_LABEL } from './images/build.ts';
import { type CraneOptions, configOf, copyImage, digestOf, exportImage } from './images/crane.ts';
import {
  catalogImages,
  catalogSource,
  imageContentSourcePolicy,
  imageDigestMirrorSet,
  type MirrorPlan,
  mappingText,
  mirrorPlan,
  parseRef,
  repoName,
} from './images/mirror.ts';
import { skopeoCopy } from './images/skopeo.ts';
import { PACKAGE_NAME } from './packaging/csv.ts';
import { type FbcBlob, parseFbc } from './packaging/fbc.ts';
import { runTool } from './packaging/tools.ts';

export interface MirrorResult {
  catalog: { source: string; target: string };
  /** The catalog's own images (bundles and related images), as the catalog names them. */
  images: string[];
  plan: MirrorPlan;
  files: Record<string, string>;
  /** The catalog blobs as `opm render` read them from the image. */
  blobs: FbcBlob[];
}

export type CopyTool = 'crane' | 'skopeo';

export interface MirrorOptions extends CraneOptions {
  out: string;
  /** What copies the images (default crane). */
  tool?: CopyTool;
  dryRun?: boolean;
  name?: string;
  namespace?: string;
  log?: (line: string) => void;
}

/** The catalog blobs of a catalog image: its configs directory, extracted and rendered by opm. */
export function readCatalogImage(ref: string, opts: CraneOptions = {}): FbcBlob[] {
  const configsDir = configOf(ref, opts).config?.Labels?.[CONFIGS_LABEL];
  if (!configsDir) throw new Error(`${ref} has no ${CONFIGS_LABEL} label: not a file-based catalog image`);
  const prefix = `${configsDir.replace(/^\/+|\/+$/g, '')}/`;
  const tmp = mkdtempSync(join(tmpdir(), 'vws-mirror-'));
  try {
    exportImage(ref, join(tmp, 'fs.tar'), opts);
    const configs = join(tmp, 'configs');
    let files = 0;
    for (const e of readTar(readFileSync(join(tmp, 'fs.tar')))) {
      if (e.type !== 'file' || !e.path.startsWith(prefix)) continue;
      const dest = join(configs, e.path.slice(prefix.length));
      mkdirSync(dirname(dest), { recursive: true });
      writeFileSync(dest, e.data);
      files++;
    }
    if (files === 0) throw new Error(`${ref} has no files under ${configsDir}`);
    const r = runTool(ROOT, 'opm', ['render', configs, '--output', 'yaml']);
    if (r.code !== 0) throw new Error(`opm render of ${ref}'s ${configsDir} failed:\n${r.stderr}`);
    return parseFbc(r.stdout);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function mirrorCatalog(src: string, dest: string, opts: MirrorOptions): MirrorResult {
  const log = opts.log ?? (() => {});
  const crane = { insecure: opts.insecure ?? false };
  const srcRef = parseRef(src);
  const digest = srcRef.digest ?? digestOf(src, crane);
  const catalog = `${repoName(srcRef)}@${digest}`;
  log(`catalog ${catalog}`);
  const blobs = readCatalogImage(catalog, crane);
  const images = catalogImages(blobs);
  log(`the catalog references ${images.length} images:\n${images.map((i) => `  ${i}`).join('\n')}`);
  const plan = mirrorPlan([catalog, ...images], dest);
  for (const e of plan.entries) {
    if (opts.dryRun) {
      log(`would copy ${e.source} -> ${e.target}`);
      continue;
    }
    log(`copy ${e.source} -> ${e.target} (${opts.tool ?? 'crane'})`);
    if (opts.tool === 'skopeo') {
      skopeoCopy(e.source, e.target, crane); // checks the digest in the mirror itself
      continue;
    }
    copyImage(e.source, e.target, crane);
    const got = digestOf(e.target, crane);
    if (`${e.target.split('@')[0]}@${got}` !== e.target)
      throw new Error(`${e.target} has digest ${got} in the mirror`);
  }
  const name = opts.name ?? PACKAGE_NAME;
  const target = plan.entries.find((e) => e.source === catalog)!.target;
  const files: Record<string, string> = {
    'imagedigestmirrorset.yaml': toYaml(imageDigestMirrorSet(plan, name)),
    'imagecontentsourcepolicy.yaml': toYaml(imageContentSourcePolicy(plan, name)),
    'catalogsource.yaml': toYaml(catalogSource(target, name, opts.namespace ?? 'openshift-marketplace')),
    'mapping.txt': mappingText(plan),
    'images.json': `${JSON.stringify({ catalog: { source: catalog, target }, images, plan }, null, 2)}\n`,
  };
  mkdirSync(opts.out, { recursive: true });
  for (const [file, content] of Object.entries(files)) writeFileSync(join(opts.out, file), content);
  log(`wrote ${Object.keys(files).join(', ')} to ${opts.out}`);
  return { catalog: { source: catalog, target }, images, plan, files, blobs };
}

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

function main(argv: readonly string[]): number {
  const [src, dest] = argv.filter(
    (a, i) => !a.startsWith('--') && !argv[i - 1]?.match(/^--(out|name|namespace|tool)$/),
  );
  const tool = flag(argv, '--tool') ?? 'crane';
  if (!src || !dest || (tool !== 'crane' && tool !== 'skopeo')) {
    console.error(
      'usage: node hack/mirror.ts SRC DEST [--out DIR] [--dry-run] [--insecure] [--tool crane|skopeo] [--name N] [--namespace NS]',
    );
    return 2;
  }
  const insecure = argv.includes('--insecure');
  const name = flag(argv, '--name');
  const namespace = flag(argv, '--namespace');
  mirrorCatalog(src, dest, {
    out: flag(argv, '--out') ?? join(ROOT, 'bin/mirror'),
    dryRun: argv.includes('--dry-run'),
    insecure,
    tool,
    ...(name ? { name } : {}),
    ...(namespace ? { namespace } : {}),
    log: (l) => console.error(`[mirror] ${l}`),
  });
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
