// `make release REGISTRY=… VERSION=…`: the release pipeline as one command (docs/release.md;
// docs/adr/0033-release-pipeline.md). It leaves the working tree as the release commit and DIR as the
// release's assets:
//
//   1. pins      the operator image of every unpublished version and the helm runner image, built here
//                (reproducible, so computed before anything is pushed), written to packaging/images.yaml
//                with `registry: REGISTRY`; VERSION becomes the head of its channels when it is not yet
//   2. bundle    bundle/, catalog/template.yaml's digests and deploy/chart regenerated from those pins
//                (npm run bundle), then checked (npm run check:generated)
//   3. images    operator, helm runner, bundle and catalog images built and pushed by digest
//                (hack/images.ts); every pushed bundle must be the template's digest
//   4. validate  the community submission laid out in DIR/community and checked with the pipeline's
//                static tests and every operator-sdk validator over the images (hack/community.ts, opm
//                validate included); any problem fails the release, before anything is frozen
//   5. publish   packaging/published.yaml names the pushed bundles, their renders are frozen in
//                catalog/published/ (hack/catalog.ts publish: opm render of each pushed image)
//   6. chart     deploy/chart packaged and pushed to oci://REGISTRY/charts by digest
//   7. krew      the kubectl plugin's single executable and krew manifest (hack/krew.ts) in DIR/krew
//
//   node hack/release.ts --registry R [--version V] [--out DIR] [--insecure] [--skip krew]
//
// DIR (default dist/) gets release.json: every reference by digest, for the GitHub release and the docs.
// Each step is one of the project's own commands, run as a child process so it reads the files the
// previous step wrote.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { ROOT, readRepoFile, TEMPLATE_PATH } from './bundle.ts';
import { helmImage, operatorImage, publishedBundles } from './images/build.ts';
import { isLoopback } from './images/crane.ts';
import { flag, type Summary } from './images.ts';
import { CHART_DIR } from './packaging/chart.ts';
import { PACKAGE_NAME } from './packaging/csv.ts';
import { parseTemplate, templateVersions } from './packaging/template.ts';

export const STEPS = ['pins', 'bundle', 'images', 'validate', 'publish', 'chart', 'krew'] as const;
export type Step = (typeof STEPS)[number];

export interface ReleaseOptions {
  registry: string;
  version: string;
  out: string;
  insecure?: boolean;
  skip?: readonly Step[];
  log?: (line: string) => void;
}

export interface ReleaseRecord {
  version: string;
  registry: string;
  operator: string;
  operators: Record<string, string>;
  helm: string;
  bundles: Record<string, string>;
  catalog: string;
  chart?: { ref: string; digest: string };
  community?: string;
  krew?: string;
  /** Files of the release commit (relative to the repository). */
  changed: string[];
}

/** A child step: `node <script> args` or another program, in ROOT; its output goes to the log and is returned. */
function run(cmd: string, args: readonly string[], log: (l: string) => void): string {
  log(`$ ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd === 'node' ? process.execPath : cmd, args, {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
  });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  for (const line of out.split('\n').filter(Boolean)) log(`  ${line}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
  return out;
}

function packageVersion(): string {
  return (JSON.parse(readRepoFile('package.json') ?? '{}') as { version: string }).version;
}

/** packaging/images.yaml with `registry`, every `operator` pin given, and `helm`; comments kept. */
export function withPins(
  text: string,
  registry: string,
  operators: Record<string, string>,
  helm: string,
): string {
  const doc = YAML.parseDocument(text);
  doc.set('registry', registry);
  for (const [v, ref] of Object.entries(operators)) doc.setIn(['operator', v], ref);
  doc.set('helm', helm);
  return doc.toString({ lineWidth: 0 });
}

/** packaging/published.yaml with `bundles` added (a published version is never changed). */
export function withPublished(text: string | undefined, bundles: Record<string, string>): string {
  const doc = YAML.parseDocument(
    text ??
      "# Released versions: each version's pushed bundle image by digest, frozen from then on\n# (docs/release.md; written by make release).\n{}\n",
  );
  for (const [v, ref] of Object.entries(bundles)) {
    const had = doc.get(v);
    if (had !== undefined && had !== ref)
      throw new Error(`packaging/published.yaml: ${v} is already published as ${String(had)}`);
    doc.set(v, ref);
  }
  return doc.toString({ lineWidth: 0 });
}

function changedFiles(): string[] {
  const r = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return r.status === 0
    ? r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(3))
    : [];
}

export async function release(opts: ReleaseOptions): Promise<ReleaseRecord> {
  const log = opts.log ?? ((l: string) => console.error(`[release] ${l}`));
  const skip = new Set(opts.skip ?? []);
  const { registry, version } = opts;
  if (version !== packageVersion())
    throw new Error(
      `VERSION ${version} is not package.json's version ${packageVersion()}: bump package.json first`,
    );
  if (publishedBundles()[version])
    throw new Error(`${version} is already published (packaging/published.yaml)`);
  const insecure = opts.insecure && !isLoopback(registry) ? ['--insecure'] : [];
  mkdirSync(opts.out, { recursive: true });

  // 1. pins: the operator images of the versions to release, built for REGISTRY (digest known before the push).
  log('1/7 pins: operator images of the unpublished versions and the helm runner, computed for the registry');
  const template = parseTemplate(readRepoFile(TEMPLATE_PATH) ?? '');
  const published = publishedBundles();
  const versions = [...new Set([...templateVersions(template), version])].filter((v) => !published[v]);
  const operators = Object.fromEntries(versions.map((v) => [v, operatorImage(registry, v).ref]));
  const helm = helmImage(registry, version).ref;
  const imagesPath = join(ROOT, 'packaging/images.yaml');
  writeFileSync(imagesPath, withPins(readFileSync(imagesPath, 'utf8'), registry, operators, helm));
  if (!templateVersions(template).includes(version)) run('node', ['hack/catalog.ts', 'add', version], log);

  // 2. the bundle, the template's digests and the chart from those pins.
  log('2/7 bundle: bundle/, catalog/template.yaml and deploy/chart from the pins');
  run('node', ['hack/bundle.ts'], log);
  run('node', ['hack/catalog.ts', 'template'], log);
  run('node', ['hack/chart.ts'], log);
  run('npm', ['run', '--silent', 'check:generated'], log);

  // 3. every image, pushed by digest; the bundles must be exactly what the template names.
  log('3/7 images: build and push by digest');
  const summaryPath = join(opts.out, 'images.json');
  run(
    'node',
    ['hack/images.ts', '--registry', registry, '--helm', 'ours', '--summary', summaryPath, ...insecure],
    log,
  );
  const images = JSON.parse(readFileSync(summaryPath, 'utf8')) as Summary;
  rmSync(summaryPath);
  for (const [v, ref] of Object.entries(operators))
    if (images.operators[v] !== ref)
      throw new Error(`operator ${v}: pushed ${images.operators[v]}, pinned ${ref}`);
  if (images.helm !== helm) throw new Error(`helm runner: pushed ${images.helm}, pinned ${helm}`);
  const committed = parseTemplate(readRepoFile(TEMPLATE_PATH) ?? '');
  const named = committed.bundles.map((b) => b.image);
  for (const v of versions)
    if (!named.includes(images.bundles[v] ?? ''))
      throw new Error(`bundle ${v}: pushed ${images.bundles[v]}, which ${TEMPLATE_PATH} does not name`);

  const record: ReleaseRecord = {
    version,
    registry,
    operator: images.operator,
    operators: images.operators,
    helm: images.helm,
    bundles: images.bundles,
    catalog: images.catalog,
    changed: [],
  };

  // 4. every validator; the submission as the community pipeline checks it.
  if (!skip.has('validate')) {
    log('4/7 validate: the community submission, its static tests and every operator-sdk validator');
    record.community = join(opts.out, 'community');
    run('node', ['hack/community.ts', '--out', record.community], log);
  }

  // 5. published: frozen from now on, once everything validated.
  log('5/7 publish: packaging/published.yaml and the frozen renders in catalog/published/');
  const pushed = Object.fromEntries(versions.map((v) => [v, images.bundles[v]!]));
  writeFileSync(
    join(ROOT, 'packaging/published.yaml'),
    withPublished(readRepoFile('packaging/published.yaml'), pushed),
  );
  run('node', ['hack/catalog.ts', 'publish', ...versions], log);
  run('npm', ['run', '--silent', 'check:generated'], log);

  // 6. the chart, as an OCI artifact beside the images.
  if (!skip.has('chart')) {
    log('6/7 chart: helm package and helm push to oci://REGISTRY/charts');
    const helmBin = join(ROOT, 'bin/helm');
    run(helmBin, ['package', CHART_DIR, '--destination', opts.out], log);
    const tgz = join(opts.out, `${PACKAGE_NAME}-${version}.tgz`);
    const plain = isLoopback(registry) || opts.insecure ? ['--plain-http'] : [];
    const out = run(helmBin, ['push', tgz, `oci://${registry}/charts`, ...plain], log);
    const digest = /Digest: (sha256:[a-f0-9]{64})/.exec(out)?.[1];
    if (!digest) throw new Error(`helm push printed no digest:\n${out}`);
    record.chart = { ref: `oci://${registry}/charts/${PACKAGE_NAME}:${version}@${digest}`, digest };
  }

  // 7. the kubectl plugin.
  if (!skip.has('krew')) {
    log('7/7 krew: the single executable and the krew manifest');
    record.krew = join(opts.out, 'krew');
    run('node', ['hack/krew.ts', '--out', record.krew, '--version', version], log);
  }

  record.changed = changedFiles();
  writeFileSync(join(opts.out, 'release.json'), `${JSON.stringify(record, null, 2)}\n`);
  return record;
}

async function main(argv: readonly string[]): Promise<number> {
  const registry = flag(argv, '--registry');
  if (!registry) {
    console.error(
      'usage: node hack/release.ts --registry host[:port]/namespace [--version V] [--out DIR] [--insecure] [--skip krew,…]',
    );
    return 2;
  }
  const skip = (flag(argv, '--skip')?.split(',') ?? []) as Step[];
  for (const s of skip) if (!STEPS.includes(s)) throw new Error(`--skip ${s}: steps are ${STEPS.join(', ')}`);
  const out = flag(argv, '--out') ?? join(ROOT, 'dist');
  if (existsSync(join(out, 'release.json'))) rmSync(join(out, 'release.json'));
  const r = await release({
    registry,
    version: flag(argv, '--version') ?? packageVersion(),
    out,
    insecure: argv.includes('--insecure'),
    skip,
  });
  console.log(
    [
      `released ${PACKAGE_NAME} ${r.version} to ${r.registry}`,
      `  operator      ${r.operator}`,
      `  helm runner   ${r.helm}`,
      ...Object.entries(r.bundles).map(([v, ref]) => `  bundle ${v.padEnd(6)} ${ref}`),
      `  catalog       ${r.catalog}     (CatalogSource spec.image)`,
      ...(r.chart ? [`  chart         ${r.chart.ref}`] : []),
      ...(r.community
        ? [`  community     ${r.community}/fbc (the pull request to community-operators-prod)`]
        : []),
      ...(r.krew ? [`  krew          ${r.krew}/vws.yaml and the archives beside it`] : []),
      `the release commit: ${r.changed.join(' ')}`,
      `record: ${join(out, 'release.json')}`,
    ].join('\n'),
  );
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
