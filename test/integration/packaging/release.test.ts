// `make release` end to end against a registry on loopback (hack/release.ts): in a scratch copy of the
// repository (a git repository, so the release commit is visible), `node hack/release.ts --registry
// 127.0.0.1:<port>/vworkspace --skip krew` must
//   - pin every image it pushes, by digest, and leave a release commit that `npm run check:generated`
//     accepts (bundle/, the template's frozen entries, the chart follow the pins);
//   - push the operator, helm runner, bundle and catalog images under those digests, and the chart as an
//     OCI artifact whose default image is the pin;
//   - lay out the community submission and pass the community pipeline's checks, operator-sdk with every
//     optional validator over the pushed images, and opm (the former community test, folded in here so the
//     images are built once). Negative controls show each check can fail.
// The krew step is skipped here: test/integration/cli/kubectl-vws.test.ts builds and runs that executable.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { type CheckResult, runSuites } from '../../../hack/community/checks.ts';
import { loadRepo } from '../../../hack/community/repo.ts';
import { validateAllOptional } from '../../../hack/community/sdk.ts';
import { expectedWarning } from '../../../hack/community.ts';
import { ROOT } from '../../../hack/lib/controlplane.ts';
import { type Registry, startRegistry } from '../../../hack/lib/registry.ts';
import { PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { parseFbc } from '../../../hack/packaging/fbc.ts';
import { communityCatalogs } from '../../../hack/packaging/openshift.ts';
import type { Finding } from '../../../hack/packaging/tools.ts';
import type { ReleaseRecord } from '../../../hack/release.ts';

interface CommunityFound {
  fbc: CheckResult[];
  bundleOnly: CheckResult[];
  allOptional: { validators: string[]; findings: Finding[]; bundleDir: string };
  problems: string[];
}

let work: string;
let repo: string;
let registry: Registry;
let prefix: string;
let record: ReleaseRecord;
let output: string;

const crane = (...args: string[]) => execFileSync(join(ROOT, 'bin/crane'), args, { encoding: 'utf8' }).trim();
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });
const inRepo = (p: string) => readFileSync(join(repo, p), 'utf8');

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'vws-release-test-'));
  repo = join(work, 'repo');
  // The repository as committed plus this checkout's uncommitted files: what a release job checks out.
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
  for (const f of files) {
    mkdirSync(dirname(join(repo, f)), { recursive: true });
    cpSync(join(ROOT, f), join(repo, f));
  }
  // node_modules hard-linked, not symlinked: npm ls (the operator image's production tree) reads it as its own.
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(repo, 'node_modules')]);
  symlinkSync(join(ROOT, 'bin'), join(repo, 'bin'));
  git('init', '-q');
  git('add', '-A');
  git(
    '-c',
    'user.name=release-test',
    '-c',
    'user.email=release@test',
    'commit',
    '-q',
    '-m',
    'before the release',
  );
  registry = await startRegistry({ name: 'release-test-registry' });
  prefix = `${registry.host}/vworkspace`;
  const r = spawnSync(
    process.execPath,
    ['hack/release.ts', '--registry', prefix, '--out', join(work, 'dist'), '--skip', 'krew'],
    { cwd: repo, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  output = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`make release failed (exit ${r.status}):\n${output.slice(-8000)}`);
  console.log(`[release test] ${r.stdout}`);
  record = JSON.parse(readFileSync(join(work, 'dist/release.json'), 'utf8')) as ReleaseRecord;
}, 900_000);

afterAll(async () => {
  await registry?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const digestOf = (ref: string) => ref.slice(ref.indexOf('@') + 1);
const community = () =>
  JSON.parse(readFileSync(join(work, 'dist/community/report.json'), 'utf8')) as CommunityFound;
const op = (layout: string) => join(work, 'dist/community', layout, 'operators', PACKAGE_NAME);

describe('make release against a loopback registry', () => {
  it('pushed every image under the digest it pinned', () => {
    const refs = [
      ...Object.values(record.operators),
      record.helm,
      ...Object.values(record.bundles),
      record.catalog,
    ];
    expect(refs.length).toBe(6); // operator and bundle for 0.0.9 and 0.1.0, helm, catalog
    for (const ref of refs) {
      expect(ref).toMatch(new RegExp(`^${prefix.replace(/\./g, '\\.')}/[a-z-]+@sha256:[a-f0-9]{64}$`));
      expect(crane('digest', ref), ref).toBe(digestOf(ref));
    }
    const pins = YAML.parse(inRepo('packaging/images.yaml'));
    expect(pins).toMatchObject({ registry: prefix, operator: record.operators, helm: record.helm });
    expect(YAML.parse(inRepo('packaging/published.yaml'))).toEqual(record.bundles);
  });

  it('left a release commit whose generated files follow the pins', () => {
    const csv = YAML.parse(inRepo(`bundle/manifests/${PACKAGE_NAME}.clusterserviceversion.yaml`));
    expect(csv.metadata.annotations.containerImage).toBe(record.operator);
    expect(csv.spec.relatedImages).toEqual([
      { name: 'vworkspace-operator', image: record.operator },
      { name: 'helm', image: record.helm },
    ]);
    // The template names the pushed bundles by image (as opm's basic template takes them), and each
    // version is frozen beside it as opm rendered its pushed image.
    const template = YAML.parse(inRepo('catalog/template.yaml')) as {
      entries: { schema: string; image?: string }[];
    };
    const bundles = template.entries.filter((e) => e.schema === 'olm.bundle');
    expect(bundles).toEqual(Object.values(record.bundles).map((image) => ({ schema: 'olm.bundle', image })));
    for (const [v, ref] of Object.entries(record.bundles)) {
      const frozen = YAML.parse(inRepo(`catalog/published/${v}.yaml`));
      expect(frozen).toMatchObject({ schema: 'olm.bundle', name: `${PACKAGE_NAME}.v${v}`, image: ref });
    }
    expect(YAML.parse(inRepo('deploy/chart/vworkspace-operator/values.yaml')).image.digest).toBe(
      digestOf(record.operator),
    );
    const check = spawnSync('npm', ['run', '--silent', 'check:generated'], {
      cwd: repo,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
    });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expect(
      git('status', '--porcelain', '--untracked-files=all')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(3))
        .sort(),
    ).toEqual([...record.changed].sort());
    expect(record.changed).toEqual(
      expect.arrayContaining([
        'packaging/images.yaml',
        'packaging/published.yaml',
        'catalog/template.yaml',
        'catalog/published/0.1.0.yaml',
        `bundle/manifests/${PACKAGE_NAME}.clusterserviceversion.yaml`,
        'deploy/chart/vworkspace-operator/values.yaml',
      ]),
    );
  });

  it('pushed a catalog image serving every released bundle by digest', () => {
    const dir = join(work, 'catalog-fs');
    mkdirSync(dir);
    execFileSync('sh', [
      '-c',
      `"${join(ROOT, 'bin/crane')}" export "${record.catalog}" - | tar -x -C "${dir}" configs`,
    ]);
    const fbc = parseFbc(readFileSync(join(dir, 'configs', PACKAGE_NAME, 'catalog.yaml'), 'utf8'));
    const images = fbc.filter((b) => b.schema === 'olm.bundle').map((b) => (b as { image: string }).image);
    expect(images.sort()).toEqual(Object.values(record.bundles).sort());
  });

  it('pushed the chart to oci://REGISTRY/charts with the pinned image as its default', () => {
    expect(record.chart?.ref).toBe(`oci://${prefix}/charts/${PACKAGE_NAME}:0.1.0@${record.chart?.digest}`);
    const values = execFileSync(
      join(ROOT, 'bin/helm'),
      ['show', 'values', `oci://${prefix}/charts/${PACKAGE_NAME}`, '--version', '0.1.0', '--plain-http'],
      { encoding: 'utf8', env: { ...process.env, HOME: work } },
    );
    expect(YAML.parse(values).image).toMatchObject({
      repository: `${prefix}/${PACKAGE_NAME}`,
      digest: digestOf(record.operator),
    });
  });
});

describe('the community submission the release laid out', () => {
  it('passes: no failure, no warning but the notices every submission gets', () => {
    const found = community();
    expect(found.problems).toEqual([]);
    expect(found.fbc.filter((r) => r.level === 'failure')).toEqual([]);
    expect(found.bundleOnly.filter((r) => !expectedWarning(r, true))).toEqual([]);
    expect(output).toContain('community checks: passed');
  });

  it('is laid out as the pipeline expects: ci.yaml, a directory per version, release-config, template, catalogs', () => {
    const ci = YAML.parse(readFileSync(join(op('fbc'), 'ci.yaml'), 'utf8'));
    expect(ci.fbc.enabled).toBe(true);
    expect(readFileSync(join(op('fbc'), 'catalog-templates/basic.yaml'), 'utf8')).toBe(
      inRepo('catalog/template.yaml'),
    );
    const layout = loadRepo(join(work, 'dist/community/fbc'));
    expect(layout.operators[0]!.bundles.map((b) => b.dir)).toEqual(['0.0.9', '0.1.0']);
    expect(layout.operators[0]!.bundles.at(-1)!.releaseConfig).toBeDefined();
    const minKube = (layout.operators[0]!.bundles[0]!.csv.spec as { minKubeVersion: string }).minKubeVersion;
    expect(layout.catalogs.map((c) => c.catalog)).toEqual(communityCatalogs(minKube));
    const fbc = parseFbc(
      readFileSync(join(work, 'dist/community/fbc/catalogs/v4.17', PACKAGE_NAME, 'catalog.yaml'), 'utf8'),
    );
    for (const b of fbc.filter((x) => x.schema === 'olm.bundle') as {
      image: string;
      properties: { type: string }[];
    }[]) {
      expect(Object.values(record.bundles)).toContain(b.image);
      expect(b.properties.map((p) => p.type)).toContain('olm.csv.metadata');
      expect(b.properties.map((p) => p.type)).not.toContain('olm.bundle.object');
    }
  });

  it('ran every optional operator-sdk validator, multiarch included, over the pushed images', () => {
    const found = community();
    expect(found.allOptional.validators).toEqual(
      expect.arrayContaining(['multiarch', 'good-practices', 'operatorhubv2']),
    );
    expect(found.allOptional.findings.filter((f) => !expectedWarning(f))).toEqual([]);
  });
});

describe('negative controls', () => {
  it('CSVs without replaces and olm.skipRange leave a dangling bundle in the bundle-only layout', () => {
    const broken = join(work, 'broken');
    cpSync(join(work, 'dist/community/bundle-only'), broken, { recursive: true });
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
    const r = validateAllOptional(join(work, 'dist/community/validated-bundle'), {
      k8sVersion: '1.33',
      indexPath: join(ROOT, 'bundle.Dockerfile'),
      mirror: { from: prefix, to: '127.0.0.1:1/vworkspace' },
    });
    expect(r.findings.map((f) => f.message).join('\n')).toMatch(/unable to inspect the image/);
  });

  it('refuses to release a version that is not package.json’s', () => {
    const r = spawnSync(
      process.execPath,
      ['hack/release.ts', '--registry', prefix, '--version', '9.9.9', '--out', join(work, 'nope')],
      {
        cwd: repo,
        encoding: 'utf8',
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("VERSION 9.9.9 is not package.json's version 0.1.0: bump package.json first");
  });
});
