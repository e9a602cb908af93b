// `make community`: the operator as a community catalog submission, checked the way its reviewers'
// pipeline checks it (docs/release.md "Submitting to the community catalog"; docs/adr/0012-community-catalog.md).
//
//   node hack/community.ts [--out DIR]     (default DIR: bin/community; kept for a look or a real PR)
//
// 1. A loopback registry; the pinned bundle images of catalog/template.yaml (built from the committed
//    sources) pushed there; the template rendered with `opm alpha render-template basic --migrate-level
//    bundle-object-to-csv-metadata` pulling from it.
// 2. DIR/fbc: the submission as the operator submits it (ci.yaml with fbc, every version's bundle,
//    release-config.yaml, catalog-templates/basic.yaml, catalogs/v4.x/); DIR/bundle-only: the same
//    bundles without FBC, where the pipeline builds the upgrade graph from the CSVs.
// 3. The pipeline's static tests (community and common suites, ported: hack/community/checks.ts) on
//    both, its operator-sdk runs included.
// 4. The images built now (`make images`: an operator image per version, the helm runner, bundles),
//    pushed to the registry; the same template over them rendered by opm from the registry equals the
//    catalog the catalog image holds (rendered offline); and `operator-sdk bundle validate` with every
//    optional validator, multiarch included, on the current version's bundle naming those images.
//
// Exit 1 on any failure and any warning but those every submission gets (expectedWarning).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, readRepoFile, TEMPLATE_PATH } from './bundle.ts';
import { renameRegistry, renderCommitted, renderTemplateThrough } from './catalog.ts';
import { type CheckResult, deprecationTestKubeVersion, runSuites } from './community/checks.ts';
import { ciConfig, writeLayout } from './community/layout.ts';
import { loadRepo } from './community/repo.ts';
import { pipelineSdk, validateAllOptional } from './community/sdk.ts';
import { allImages, buildImages, committedTemplate, pushBuilt, RELEASE_REGISTRY } from './images/build.ts';
import { startRegistry } from './lib/registry.ts';
import { PACKAGE_NAME } from './packaging/csv.ts';
import { parseFbc } from './packaging/fbc.ts';
import type { Finding } from './packaging/tools.ts';

export interface CommunityReport {
  out: string;
  /** The static tests on the FBC submission. */
  fbc: CheckResult[];
  /** The static tests on the bundle-only layout. */
  bundleOnly: CheckResult[];
  /** `opm alpha render-template` of the built images' template, and the catalog image's catalog. */
  renderedFromRegistry: string;
  renderedOffline: string;
  /** operator-sdk with every optional validator on the current version's bundle over real images (kept in DIR/validated-bundle). */
  allOptional: { validators: string[]; findings: Finding[]; bundleDir: string };
  /** Problems that fail the run (failures, unexpected warnings, render mismatch). */
  problems: string[];
  /** Things to do before a real submission (the reviewers placeholder). */
  reminders: string[];
}

/** The warning the bundle-only layout must give: this operator is meant to be submitted with FBC. */
export const EXPECTED_BUNDLE_ONLY_WARNINGS = ['check_using_fbc'];
/**
 * operator-sdk's notice that the `operatorhub` validator is deprecated. The pipeline's
 * check_osdk_bundle_validate_operatorhub selects that validator, so every bundle gets this warning
 * there; running every optional validator gets it too. It says nothing about the bundle.
 */
export const DEPRECATED_VALIDATOR_NOTICE =
  'Warning: Value : The "operatorhub" validator is deprecated; for equivalent validation use "operatorhub/v2", "standardcapabilities" and "standardcategories" validators';

/** Whether a finding is one of the above, which every submission gets. */
export function expectedWarning(
  r: { level: string; message: string; check?: string },
  bundleOnly = false,
): boolean {
  if (r.level !== 'warning') return false;
  if (r.message === DEPRECATED_VALIDATOR_NOTICE) return true;
  return bundleOnly && r.check !== undefined && EXPECTED_BUNDLE_ONLY_WARNINGS.includes(r.check);
}

export async function runCommunity(opts: {
  out: string;
  log?: (l: string) => void;
}): Promise<CommunityReport> {
  const log = opts.log ?? (() => {});
  const work = mkdtempSync(join(tmpdir(), 'vws-community-'));
  const registry = await startRegistry({ name: 'community-registry' });
  const via = `${registry.host}/vworkspace`;
  try {
    rmSync(opts.out, { recursive: true, force: true });
    mkdirSync(opts.out, { recursive: true });
    log(`registry ${registry.url}; the committed template's bundle images pushed there and rendered by opm`);
    const bundleDirs = join(work, 'pinned');
    const committed = renderCommitted({ via, workDir: work, bundleDirs });
    const template = committedTemplate();
    const bundles = Object.fromEntries(Object.keys(committed.bundles).map((v) => [v, join(bundleDirs, v)]));
    const layout = {
      bundles,
      template,
      templateText: readRepoFile(TEMPLATE_PATH) ?? '',
      catalog: committed.fbc,
      allowedRegistries: [`${RELEASE_REGISTRY}/`],
    };
    writeLayout(join(opts.out, 'fbc'), layout);
    writeLayout(join(opts.out, 'bundle-only'), { ...layout, bundleOnly: true });
    log('static tests (community and common suites) on the FBC submission and the bundle-only layout');
    const fbc = runSuites(loadRepo(join(opts.out, 'fbc')), { sdk: pipelineSdk });
    const bundleOnly = runSuites(loadRepo(join(opts.out, 'bundle-only')), { sdk: pipelineSdk });

    log('images built now (an operator image per version, helm runner, bundles), pushed to the registry');
    const set = buildImages({ registry: RELEASE_REGISTRY, helm: 'ours', workDir: join(work, 'build'), log });
    for (const b of allImages(set))
      if (b !== set.catalog) pushBuilt(b, work, { as: renameRegistry(b.repo, RELEASE_REGISTRY, via) });
    const renderedFromRegistry = renderTemplateThrough(set.template, {
      registry: RELEASE_REGISTRY,
      via,
      workDir: work,
    });
    const renderedOffline = readFileSync(join(set.configsDir, PACKAGE_NAME, 'catalog.yaml'), 'utf8');

    const built = set.bundleDirs[set.version];
    if (!built) throw new Error(`the build made no bundle for ${set.version}`);
    // Kept beside the layouts: the bundle that names the images built now (DIR/validated-bundle).
    const current = join(opts.out, 'validated-bundle');
    cpSync(built, current, { recursive: true });
    log(
      `operator-sdk bundle validate, every optional validator, on ${set.version}'s bundle over the pushed images`,
    );
    const full = validateAllOptional(current, {
      k8sVersion:
        deprecationTestKubeVersion(loadRepo(join(opts.out, 'fbc')).operators[0]!.bundles.at(-1)!) ?? '1.30',
      indexPath: join(ROOT, 'bundle.Dockerfile'),
      mirror: { from: RELEASE_REGISTRY, to: via },
    });

    const problems = [
      ...fbc
        .filter((r) => !expectedWarning(r))
        .map((r) => `fbc: ${r.level} ${r.check} (${r.target}): ${r.message}`),
      ...bundleOnly
        .filter((r) => !expectedWarning(r, true))
        .map((r) => `bundle-only: ${r.level} ${r.check} (${r.target}): ${r.message}`),
      ...full.findings
        .filter((f) => !expectedWarning(f))
        .map((f) => `operator-sdk (all optional): ${f.level}: ${f.message}`),
      ...(sameCatalog(renderedFromRegistry, renderedOffline)
        ? []
        : [
            "the catalog rendered by opm from the registry differs from the catalog image's (rendered offline)",
          ]),
    ];
    const reminders = (ciConfig().reviewers ?? []).some((r) => r.startsWith('REPLACE-'))
      ? [
          'packaging/ci.yaml: replace the reviewers placeholder with the maintainers GitHub user names before submitting',
        ]
      : [];
    return {
      out: opts.out,
      fbc,
      bundleOnly,
      renderedFromRegistry,
      renderedOffline,
      allOptional: { ...full, bundleDir: current },
      problems,
      reminders,
    };
  } finally {
    await registry.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Equal file-based catalogs: the same blobs, relatedImages in any order (opm lists them as it found them). */
export function sameCatalog(a: string, b: string): boolean {
  const norm = (text: string) =>
    parseFbc(text).map((blob) =>
      blob.relatedImages
        ? { ...blob, relatedImages: [...blob.relatedImages].sort((x, y) => x.image.localeCompare(y.image)) }
        : blob,
    );
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

async function main(argv: readonly string[]): Promise<number> {
  const out = flag(argv, '--out') ?? join(ROOT, 'bin/community');
  const report = await runCommunity({ out, log: (l) => console.error(`[community] ${l}`) });
  // What was checked and found, for the release record and its test (the catalogs are in the layouts).
  const { renderedFromRegistry: _r, renderedOffline: _o, ...found } = report;
  writeFileSync(join(out, 'report.json'), `${JSON.stringify(found, null, 2)}\n`);
  if (!sameCatalog(report.renderedFromRegistry, report.renderedOffline)) {
    writeFileSync(join(out, 'rendered-from-registry.yaml'), report.renderedFromRegistry);
    writeFileSync(join(out, 'rendered-offline.yaml'), report.renderedOffline);
  }
  const table = (rs: CheckResult[]) =>
    rs.map((r) => `  ${r.level.padEnd(8)} ${r.check} (${r.target}): ${r.message}`);
  console.log(
    [
      `submission laid out in ${out}/fbc (and ${out}/bundle-only)`,
      `static tests, FBC submission: ${report.fbc.length === 0 ? 'nothing reported' : ''}`,
      ...table(report.fbc),
      `static tests, bundle-only layout: ${report.bundleOnly.length === 0 ? 'nothing reported' : ''}`,
      ...table(report.bundleOnly),
      `operator-sdk, optional validators ${report.allOptional.validators.join(', ')}: ${report.allOptional.findings.length === 0 ? 'nothing reported' : ''}`,
      ...report.allOptional.findings.map((f) => `  ${f.level} ${f.message}`),
      ...report.reminders.map((r) => `reminder: ${r}`),
      ...report.problems.map((p) => `PROBLEM ${p}`),
      report.problems.length === 0
        ? 'community checks: passed'
        : `community checks: ${report.problems.length} problem(s)`,
    ].join('\n'),
  );
  return report.problems.length === 0 ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
