// Maintains catalog/template.yaml, the catalog as an opm basic catalog template over bundle images by
// digest (hack/packaging/template.ts), and renders it (docs/release.md, docs/adr/0012-community-catalog.md).
//
//   node hack/catalog.ts template [--check]   regenerate olm.package and the bundle image digests (each
//       version's bundle built from the committed sources with its pinned operator image, for
//       quay.io/vworkspace); --check only says which is stale. No tools needed: `npm run bundle` runs it.
//   node hack/catalog.ts add VERSION [--channels a,b]   make VERSION the new head of each channel
//       (default: every channel of bundle/metadata/annotations.yaml): it replaces the head and skips
//       every earlier version of its major; then `template`. Needs VERSION's date and operator pin.
//   node hack/catalog.ts render [--out DIR]   `opm alpha render-template basic --migrate-level
//       bundle-object-to-csv-metadata` of the committed template: the pinned bundle images are built,
//       pushed to a loopback registry it starts, rendered from there, and the references renamed back
//       (default DIR: bin/rendered-catalog). `opm validate` must pass.
//   node hack/catalog.ts publish VERSION...   after the release push: write `opm render` of each version's
//       published image (packaging/published.yaml) to catalog/published/VERSION.yaml, frozen from then on;
//       the template keeps naming the image (opm's basic template takes nothing else).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { ROOT, readRepoFile, TEMPLATE_PATH, toYaml } from './bundle.ts';
import {
  type BuiltImage,
  committedTemplate,
  imageOnly,
  isRendered,
  openVersions,
  pinnedBundleImages,
  publishedBundles,
  publishedRenderPath,
  pushBuilt,
  RELEASE_REGISTRY,
  withImages,
} from './images/build.ts';
import { renderImage, renderTemplateFile } from './images/opm.ts';
import { startRegistry } from './lib/registry.ts';
import { PACKAGE_NAME } from './packaging/csv.ts';
import { addVersion, bundleName, emptyChannel, type PackageBlob, parseVersion } from './packaging/fbc.ts';
import { DEFAULT_CHANNEL } from './packaging/manifests.ts';
import {
  type CatalogTemplate,
  parseTemplate,
  renderTemplate,
  templateVersions,
} from './packaging/template.ts';

const HEADER_PUBLISHED =
  '# A published bundle, frozen: `opm render` of its pushed image (node hack/catalog.ts publish). DO NOT EDIT.\n';

import { opmValidateFindings, runTool } from './packaging/tools.ts';

/** The olm.package blob: the first paragraph of packaging/description.md and the icon. */
export function packageBlob(read: (p: string) => string | undefined = readRepoFile): PackageBlob {
  const description = read('packaging/description.md') ?? '';
  const first =
    description
      .split(/\n\s*\n/)[0]
      ?.replace(/\s*\n\s*/g, ' ')
      .trim() ?? '';
  const icon = (read('packaging/icon.svg') ?? '').trim();
  return {
    schema: 'olm.package',
    name: PACKAGE_NAME,
    defaultChannel: DEFAULT_CHANNEL,
    description: first,
    icon: { base64data: Buffer.from(icon).toString('base64'), mediatype: 'image/svg+xml' },
  };
}

/**
 * The template as the committed sources make it: package from packaging/, channels as committed, and
 * for every version not yet published the digest of the bundle image built from the sources with the
 * version's pinned operator image; a published version's entry stays as it is.
 */
export function expectedTemplate(current: CatalogTemplate): CatalogTemplate {
  const published = publishedBundles();
  const versions = templateVersions(current);
  for (const v of versions.filter((x) => published[x])) {
    const entry = current.bundles.find((b) => b.name === bundleName(PACKAGE_NAME, v));
    if (!entry || !isRendered(entry) || entry.image !== published[v])
      throw new Error(
        `${v} is published as ${published[v]} but ${TEMPLATE_PATH} does not hold its rendered entry: node hack/catalog.ts publish ${v}`,
      );
  }
  const open = versions.filter((v) => !published[v]);
  const pinned = pinnedBundleImages(open);
  return withImages(
    { ...current, package: packageBlob() },
    Object.fromEntries(open.map((v) => [v, pinned[v]!.ref])),
  );
}

/**
 * The template file for `t`: every bundle by image, labelled with its version. Publishing a version does
 * not change the file (its frozen render is beside it), so the submission's basic.yaml laid out before the
 * release froze it is still the committed template.
 */
export function templateText(t: CatalogTemplate): string {
  const open = openVersions(t);
  const labels = t.bundles.map((b) =>
    isRendered(b) ? String(b.name) : `${bundleName(PACKAGE_NAME, open.shift() ?? '?')}`,
  );
  return renderTemplate(imageOnly(t), labels);
}

function write(path: string, content: string): void {
  const abs = join(ROOT, path);
  mkdirSync(join(abs, '..'), { recursive: true });
  if (readRepoFile(path) === content) return;
  writeFileSync(abs, content);
  console.log(`wrote ${path}`);
}

function defaultChannels(): string[] {
  const ann = YAML.parse(readRepoFile('bundle/metadata/annotations.yaml') ?? '') as {
    annotations?: Record<string, string>;
  };
  const list = ann.annotations?.['operators.operatorframework.io.bundle.channels.v1'];
  if (!list) throw new Error('bundle/metadata/annotations.yaml names no channels: run npm run bundle');
  return list.split(',');
}

/** VERSION as the new head of each of `channels` (created when missing). */
export function withVersion(
  t: CatalogTemplate,
  version: string,
  channels: readonly string[],
): CatalogTemplate {
  parseVersion(version);
  let all = t.channels;
  for (const name of channels) {
    const current = all.find((c) => c.name === name) ?? emptyChannel(PACKAGE_NAME, name);
    all = [...all.filter((c) => c.name !== name), addVersion(current, version)];
  }
  return { ...t, channels: all };
}

/** Registry references renamed: `from/<repo>` → `to/<repo>` wherever an image is named. */
export function renameRegistry(text: string, from: string, to: string): string {
  return text.split(`${from}/`).join(`${to}/`);
}

/**
 * `opm alpha render-template basic` of `template` against a registry the images were pushed to: the
 * references name `registry` (e.g. quay.io/vworkspace) while the bytes live at `via` (a loopback
 * registry, same digests), so the template is renamed for opm and the output renamed back.
 */
export function renderTemplateThrough(
  template: CatalogTemplate,
  opts: { registry: string; via: string; workDir: string },
): string {
  // Published versions are not pulled: their frozen renders join opm's output, then opm orders the whole.
  const open = { ...template, bundles: template.bundles.filter((b) => !isRendered(b)) };
  const path = join(opts.workDir, 'template.yaml');
  writeFileSync(path, renameRegistry(renderTemplate(open), opts.registry, opts.via));
  const out = renameRegistry(renderTemplateFile(path, { useHttp: true }), opts.via, opts.registry);
  const frozen = template.bundles.filter(isRendered);
  if (frozen.length === 0) return out;
  const dir = join(opts.workDir, 'with-published', PACKAGE_NAME);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'catalog.yaml'),
    [out.replace(/^---\n/, ''), ...frozen.map((b) => toYaml(b))].join('---\n'),
  );
  const r = runTool(ROOT, 'opm', ['render', join(opts.workDir, 'with-published'), '--output', 'yaml']);
  if (r.code !== 0) throw new Error(`opm render of the catalog with the published bundles:\n${r.stderr}`);
  return r.stdout;
}

/** Writes `<dir>/<package>/catalog.yaml` and runs `opm validate` on it. */
export function writeCatalog(dir: string, fbc: string): void {
  mkdirSync(join(dir, PACKAGE_NAME), { recursive: true });
  writeFileSync(join(dir, PACKAGE_NAME, 'catalog.yaml'), fbc);
  const findings = opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));
  if (findings.length > 0)
    throw new Error(`opm validate ${dir}:\n${findings.map((f) => `${f.level}: ${f.message}`).join('\n')}`);
}

/**
 * The committed template rendered as a release would render it: the pinned bundle images (built here,
 * reproducibly) pushed to `via`, opm pulling them from there.
 */
export function renderCommitted(opts: { via: string; workDir: string; bundleDirs?: string }): {
  fbc: string;
  bundles: Record<string, BuiltImage>;
} {
  const template = committedTemplate();
  const published = publishedBundles();
  const bundles = pinnedBundleImages(
    templateVersions(template).filter((v) => !published[v]),
    opts.bundleDirs ? { dir: opts.bundleDirs } : {},
  );
  for (const b of Object.values(bundles))
    pushBuilt(b, opts.workDir, { as: renameRegistry(b.repo, RELEASE_REGISTRY, opts.via) });
  return {
    fbc: renderTemplateThrough(template, {
      registry: RELEASE_REGISTRY,
      via: opts.via,
      workDir: opts.workDir,
    }),
    bundles,
  };
}

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

async function main(argv: readonly string[]): Promise<number> {
  const [cmd, arg] = argv;
  if (cmd === 'template') {
    const want = templateText(expectedTemplate(committedTemplate()));
    if (argv.includes('--check')) {
      if (readRepoFile(TEMPLATE_PATH) === want) return 0;
      console.error(`stale: ${TEMPLATE_PATH} (run: npm run bundle)`);
      return 1;
    }
    write(TEMPLATE_PATH, want);
    return 0;
  }
  if (cmd === 'add' && arg) {
    const t = withVersion(
      committedTemplate(),
      arg,
      flag(argv, '--channels')?.split(',') ?? defaultChannels(),
    );
    // The new version's bundle needs its edges first (its CSV carries them), then its digest.
    write(TEMPLATE_PATH, templateText(t));
    write(TEMPLATE_PATH, templateText(expectedTemplate(t)));
    return 0;
  }
  if (cmd === 'render') {
    const out = flag(argv, '--out') ?? join(ROOT, 'bin/rendered-catalog');
    const work = mkdtempSync(join(tmpdir(), 'vws-catalog-render-'));
    const registry = await startRegistry({ name: 'catalog-render-registry' });
    try {
      const { fbc } = renderCommitted({ via: `${registry.host}/vworkspace`, workDir: work });
      rmSync(out, { recursive: true, force: true });
      writeCatalog(out, fbc);
      console.log(`rendered ${TEMPLATE_PATH} to ${out}/${PACKAGE_NAME}/catalog.yaml (opm validate: ok)`);
      return 0;
    } finally {
      await registry.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }
  if (cmd === 'publish' && arg) {
    // Every version named: each render is written before the template, which needs all of them.
    for (const v of argv.slice(1)) {
      const ref = publishedBundles()[v];
      if (!ref)
        throw new Error(`packaging/published.yaml has no ${v}: push the release first (docs/release.md)`);
      const [blob] = renderImage(ref, { migrate: true }).filter((b) => b.schema === 'olm.bundle');
      if (!blob) throw new Error(`opm render ${ref} gave no olm.bundle`);
      if (!parseTemplate(readRepoFile(TEMPLATE_PATH) ?? '').bundles.some((b) => b.image === ref))
        throw new Error(
          `${TEMPLATE_PATH} does not name ${ref}: the pushed bundle is not the one the sources make`,
        );
      write(publishedRenderPath(v), `${HEADER_PUBLISHED}${toYaml(blob)}`);
    }
    write(TEMPLATE_PATH, templateText(committedTemplate()));
    return 0;
  }
  console.error(
    'usage: node hack/catalog.ts template [--check] | add VERSION [--channels a,b] | render [--out DIR] | publish VERSION...',
  );
  return 2;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
