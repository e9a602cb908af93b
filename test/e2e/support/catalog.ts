// The file-based catalog the e2e tests serve with `opm serve`: our package exactly as committed in
// catalog/ (optionally cut back to the versions published up to a given one, to publish the next
// version later), plus the provider packages (providers.ts) rendered with `opm render` from bundle
// directories, i.e. with an empty image and their manifests embedded as olm.bundle.object, like ours.
// `opm validate` must pass on the result before it is served.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, readRepoFile, toYaml } from '../../../hack/bundle.ts';
import {
  CATALOG_DIR,
  CHANNELS_PATH,
  parseChannels,
  renderBundle,
  renderChannels,
} from '../../../hack/catalog.ts';
import { PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { bundleName, compareVersions, versionOf } from '../../../hack/packaging/fbc.ts';
import { opmValidateFindings, runTool } from '../../../hack/packaging/tools.ts';
import {
  PROVIDER_CHANNEL,
  PROVIDERS,
  type Provider,
  type ProviderContainer,
  providerCsvName,
  writeProviderBundle,
} from './providers.ts';

/** Every version of our package in the committed catalog, oldest first. */
export function catalogVersions(): string[] {
  const versions = new Set<string>();
  for (const c of parseChannels(readRepoFile(CHANNELS_PATH)))
    for (const e of c.entries) versions.add(versionOf(PACKAGE_NAME, e.name));
  return [...versions].sort(compareVersions);
}

const rendered = new Map<string, string>();

/** The provider's FBC (package, channel, `opm render` of its bundle directory); rendered once per run. */
function providerFbc(p: Provider, scratch: string, container?: ProviderContainer): string {
  const key = `${p.package} ${container?.image ?? ''}`;
  const cached = rendered.get(key);
  if (cached) return cached;
  const dir = join(scratch, `bundle-${p.package}`);
  writeProviderBundle(p, dir, container);
  const fbc = [
    toYaml({ schema: 'olm.package', name: p.package, defaultChannel: PROVIDER_CHANNEL }),
    toYaml({
      schema: 'olm.channel',
      package: p.package,
      name: PROVIDER_CHANNEL,
      entries: [{ name: providerCsvName(p) }],
    }),
    renderBundle(dir).replace(/^---\n/, ''),
  ].join('---\n');
  rmSync(dir, { recursive: true, force: true });
  rendered.set(key, fbc);
  return fbc;
}

/**
 * Writes the catalog into `dir` (emptied first). `upTo`: only our versions up to and including it
 * (bundles and channel entries), as the catalog looked when that version was the newest.
 */
export function buildCatalog(dir: string, opts: { upTo?: string } = {}): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ours = join(dir, PACKAGE_NAME);
  cpSync(join(ROOT, CATALOG_DIR), ours, { recursive: true });
  if (opts.upTo !== undefined) cutToVersion(ours, opts.upTo);
  addProviders(dir);
}

/**
 * Cuts our package in `ours` (a catalog directory: channels.yaml, bundles/) back to the versions up to
 * and including `upTo`, as the catalog looked when that version was the newest.
 */
export function cutToVersion(ours: string, upTo: string): void {
  const later = catalogVersions().filter((v) => compareVersions(v, upTo) > 0);
  for (const v of later) rmSync(join(ours, 'bundles', `${bundleName(PACKAGE_NAME, v)}.yaml`));
  const channels = parseChannels(readRepoFile(CHANNELS_PATH)).map((c) => ({
    ...c,
    entries: c.entries.filter((e) => compareVersions(versionOf(PACKAGE_NAME, e.name), upTo) <= 0),
  }));
  writeFileSync(join(ours, 'channels.yaml'), renderChannels(channels.filter((c) => c.entries.length > 0)));
}

/** Adds the provider packages to the catalog in `dir` and checks it with `opm validate`. */
export function addProviders(dir: string, container?: ProviderContainer): void {
  const scratch = join(dir, '..', `${dir.split('/').pop()}-scratch`);
  for (const p of PROVIDERS) {
    mkdirSync(join(dir, p.package), { recursive: true });
    writeFileSync(join(dir, p.package, 'catalog.yaml'), providerFbc(p, scratch, container));
  }
  rmSync(scratch, { recursive: true, force: true });
  const findings = opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));
  if (findings.length > 0)
    throw new Error(`opm validate ${dir}:\n${findings.map((f) => `${f.level}: ${f.message}`).join('\n')}`);
}

/** The bundle versions of our package a built catalog holds (for the test's own report). */
export function builtVersions(dir: string): string[] {
  const bundles = join(dir, PACKAGE_NAME, 'bundles');
  if (!existsSync(bundles)) return [];
  return readdirSync(bundles)
    .map((f) => f.replace(/\.yaml$/, ''))
    .map((n) => versionOf(PACKAGE_NAME, n))
    .sort(compareVersions);
}
