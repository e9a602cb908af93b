// `make community` (hack/community.ts): the operator laid out as a community catalog submission and
// checked as the community pipeline checks it, against real images in a real registry on loopback:
//   - the pipeline's static tests (community and common suites, ported in hack/community/checks.ts) find
//     nothing but the notices every submission gets, on the FBC submission and on a bundle-only layout
//     of the same bundles (where the pipeline builds the graph from the CSVs);
//   - the catalogs hold bundles by image with olm.csv.metadata, rendered by `opm alpha render-template`
//     pulling the bundle images from the registry, and equal the catalog the catalog image holds;
//   - operator-sdk with every optional validator, multiarch included, inspects the pushed operator and
//     helm images (image indexes naming linux/amd64) and reports nothing.
// Negative controls show each part can fail: CSVs without their edges leave a dangling bundle, and the
// multiarch validator without the registry cannot inspect the images.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { runSuites } from '../../../hack/community/checks.ts';
import { loadRepo } from '../../../hack/community/repo.ts';
import { validateAllOptional } from '../../../hack/community/sdk.ts';
import { type CommunityReport, expectedWarning, runCommunity } from '../../../hack/community.ts';
import { ROOT } from '../../../hack/lib/controlplane.ts';
import { PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { parseFbc } from '../../../hack/packaging/fbc.ts';
import { communityCatalogs } from '../../../hack/packaging/openshift.ts';

let out: string;
let report: CommunityReport;

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'vws-community-test-'));
  report = await runCommunity({ out, log: (l) => console.log(`[community test] ${l}`) });
}, 300_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

const op = (layout: string) => join(out, layout, 'operators', PACKAGE_NAME);

describe('the community submission', () => {
  it('passes: no failure, no warning but the notices every submission gets', () => {
    console.log(`[community test] problems:\n${report.problems.join('\n') || '(none)'}`);
    expect(report.problems).toEqual([]);
    expect(report.fbc.filter((r) => r.level === 'failure')).toEqual([]);
    expect(report.bundleOnly.filter((r) => r.level === 'failure')).toEqual([]);
    expect(report.bundleOnly.filter((r) => !expectedWarning(r, true))).toEqual([]);
  });

  it('is laid out as the pipeline expects: ci.yaml, a directory per version, release-config, template, catalogs', () => {
    const ci = YAML.parse(readFileSync(join(op('fbc'), 'ci.yaml'), 'utf8'));
    expect(ci.fbc.enabled).toBe(true);
    expect(readFileSync(join(op('fbc'), 'catalog-templates/basic.yaml'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'catalog/template.yaml'), 'utf8'),
    );
    const repo = loadRepo(join(out, 'fbc'));
    expect(repo.operators[0]!.bundles.map((b) => b.dir)).toEqual(['0.0.9', '0.1.0']);
    expect(repo.operators[0]!.bundles.at(-1)!.releaseConfig).toBeDefined();
    const minKube = (repo.operators[0]!.bundles[0]!.csv.spec as { minKubeVersion: string }).minKubeVersion;
    expect(repo.catalogs.map((c) => c.catalog)).toEqual(communityCatalogs(minKube));
  });

  it('has catalogs of bundle images by digest with olm.csv.metadata, rendered by opm from the registry', () => {
    const fbc = parseFbc(readFileSync(join(out, 'fbc/catalogs/v4.17', PACKAGE_NAME, 'catalog.yaml'), 'utf8'));
    const bundles = fbc.filter((b) => b.schema === 'olm.bundle') as {
      image: string;
      properties: { type: string }[];
    }[];
    expect(bundles).toHaveLength(2);
    for (const b of bundles) {
      expect(b.image).toMatch(/^quay\.io\/vworkspace\/vworkspace-operator-bundle@sha256:[a-f0-9]{64}$/);
      expect(b.properties.map((p) => p.type)).toContain('olm.csv.metadata');
      expect(b.properties.map((p) => p.type)).not.toContain('olm.bundle.object');
    }
    // the images built now, rendered both ways: from the registry by opm, and for the catalog image
    expect(parseFbc(report.renderedFromRegistry).filter((b) => b.schema === 'olm.bundle')).toHaveLength(2);
  });

  it('ran every optional operator-sdk validator, multiarch included, over the pushed images', () => {
    expect(report.allOptional.validators).toEqual(
      expect.arrayContaining(['multiarch', 'good-practices', 'operatorhubv2']),
    );
    expect(report.allOptional.findings.filter((f) => !expectedWarning(f))).toEqual([]);
  });
});

describe('negative controls', () => {
  it('CSVs without replaces and olm.skipRange leave a dangling bundle in the bundle-only layout', () => {
    const broken = join(out, 'broken');
    cpSync(join(out, 'bundle-only'), broken, { recursive: true });
    const csvPath = join(
      broken,
      'operators',
      PACKAGE_NAME,
      '0.1.0/manifests',
      `${PACKAGE_NAME}.clusterserviceversion.yaml`,
    );
    const csv = YAML.parse(readFileSync(csvPath, 'utf8'));
    delete csv.spec.replaces;
    delete csv.metadata.annotations['olm.skipRange'];
    writeFileSync(csvPath, YAML.stringify(csv));
    const results = runSuites(loadRepo(broken), { sdk: () => [], skip: [] });
    expect(results.filter((r) => r.level === 'failure').map((r) => r.message)).toContain(
      `Channel candidate-v0 has dangling bundles: {${PACKAGE_NAME}/0.0.9}`,
    );
  });

  it('the multiarch validator cannot inspect the images where no registry holds them', () => {
    // The references redirected to a loopback port nothing listens on: refused at once, no traffic out.
    const r = validateAllOptional(report.allOptional.bundleDir, {
      k8sVersion: '1.33',
      indexPath: join(ROOT, 'bundle.Dockerfile'),
      mirror: { from: 'quay.io/vworkspace', to: '127.0.0.1:1/vworkspace' },
    });
    expect(r.findings.map((f) => f.message).join('\n')).toMatch(/unable to inspect the image/);
  });
});
