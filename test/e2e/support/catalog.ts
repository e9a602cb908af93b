// The file-based catalog the e2e tests serve with `opm serve`: our package as catalog/template.yaml
// defines it (package, channels; optionally cut back to the versions published up to a given one, to
// publish the next version later), plus the provider packages (providers.ts). Unlike the shipped
// catalog (bundle images, olm.csv.metadata), every bundle here is this test's own render: `opm render`
// of the version's bundle directory (its pinned images, packaging/images.yaml), with an empty image and
// the manifests embedded as olm.bundle.object, so OLM installs without a bundle unpack Job (no
// container runtime on kwok). `opm validate` must pass on the result before it is served.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pinnedImages, ROOT, toYaml, writeBundleDir } from '../../../hack/bundle.ts';
import { catalogVersions, committedTemplate, sourceDate } from '../../../hack/images/build.ts';
import { renderBundleDir } from '../../../hack/images/opm.ts';
import { PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { compareVersions, versionOf } from '../../../hack/packaging/fbc.ts';
import { opmValidateFindings, runTool } from '../../../hack/packaging/tools.ts';
import {
  PROVIDER_CHANNEL,
  PROVIDERS,
  type Provider,
  providerCsvName,
  writeProviderBundle,
} from './providers.ts';

export { catalogVersions };

const rendered = new Map<string, string>();

/** `opm render` of a bundle directory, once per run (a provider's, or a version of ours). */
function renderOnce(key: string, scratch: string, write: (dir: string) => void): string {
  const cached = rendered.get(key);
  if (cached) return cached;
  const dir = join(scratch, `bundle-${key}`);
  write(dir);
  const blob = renderBundleDir(dir).replace(/^---\n/, '');
  rmSync(dir, { recursive: true, force: true });
  rendered.set(key, blob);
  return blob;
}

/** The provider's FBC (package, channel, `opm render` of its bundle directory). */
function providerFbc(p: Provider, scratch: string): string {
  return [
    toYaml({ schema: 'olm.package', name: p.package, defaultChannel: PROVIDER_CHANNEL }),
    toYaml({
      schema: 'olm.channel',
      package: p.package,
      name: PROVIDER_CHANNEL,
      entries: [{ name: providerCsvName(p) }],
    }),
    renderOnce(p.package, scratch, (dir) => writeProviderBundle(p, dir)),
  ].join('---\n');
}

/** Our package's FBC: the template's package and channels, each version's bundle rendered embedded. */
function ourFbc(scratch: string, upTo?: string): string {
  const t = committedTemplate();
  const keep = (v: string) => upTo === undefined || compareVersions(v, upTo) <= 0;
  const channels = t.channels
    .map((c) => ({ ...c, entries: c.entries.filter((e) => keep(versionOf(PACKAGE_NAME, e.name))) }))
    .filter((c) => c.entries.length > 0);
  const bundles = catalogVersions()
    .filter(keep)
    .map((v) =>
      renderOnce(`${PACKAGE_NAME}-${v}`, scratch, (dir) =>
        writeBundleDir(dir, { version: v, images: pinnedImages(v), createdAt: sourceDate(v).created }),
      ),
    );
  return [toYaml(t.package), ...channels.map((c) => toYaml(c)), ...bundles].join('---\n');
}

/**
 * Writes the catalog into `dir` (emptied first). `upTo`: only our versions up to and including it
 * (bundles and channel entries), as the catalog looked when that version was the newest.
 */
export function buildCatalog(dir: string, opts: { upTo?: string } = {}): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const scratch = join(dir, '..', `${dir.split('/').pop()}-scratch`);
  mkdirSync(join(dir, PACKAGE_NAME), { recursive: true });
  writeFileSync(join(dir, PACKAGE_NAME, 'catalog.yaml'), ourFbc(scratch, opts.upTo));
  for (const p of PROVIDERS) {
    mkdirSync(join(dir, p.package), { recursive: true });
    writeFileSync(join(dir, p.package, 'catalog.yaml'), providerFbc(p, scratch));
  }
  rmSync(scratch, { recursive: true, force: true });
  const findings = opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));
  if (findings.length > 0)
    throw new Error(`opm validate ${dir}:\n${findings.map((f) => `${f.level}: ${f.message}`).join('\n')}`);
}

/** The bundle versions of our package a built catalog holds (for the test's own report). */
export function builtVersions(dir: string): string[] {
  return [...readFileSync(join(dir, PACKAGE_NAME, 'catalog.yaml'), 'utf8').matchAll(/^name: (\S+)$/gm)]
    .map((m) => m[1]!)
    .filter((n) => n.startsWith(`${PACKAGE_NAME}.v`))
    .map((n) => versionOf(PACKAGE_NAME, n))
    .sort(compareVersions);
}
