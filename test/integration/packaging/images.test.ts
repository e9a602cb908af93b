// The images built without a Docker daemon (hack/images.ts), pushed to a real CNCF distribution
// registry on loopback: reproducible digests (a second build in a fresh process), every image stored
// under the digest computed before the push, the image configs, and each image's filesystem put to
// work the closest way this machine allows (no container runtime: extracted and run under
// `unshare --root` as the image's user): the operator image runs the operator against the
// integration API server until /readyz, the catalog image serves its catalog to grpc_health_probe.
// Last, `make bundle IMG=<operator>@sha256:…` pins that image in the CSV exactly as the bundle image has it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { operatorNodeArgs } from '@vworkspace/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { readTar } from '../../../hack/images/archive.ts';
import {
  allImages,
  buildImages,
  CONFIGS_LABEL,
  committedTemplate,
  type ImageSet,
  pushImages,
} from '../../../hack/images/build.ts';
import { productionPackageDirs } from '../../../hack/images/contents.ts';
import { configOf, digestOf, manifestOf } from '../../../hack/images/crane.ts';
import { renderImage } from '../../../hack/images/opm.ts';
import { type Summary, summarize } from '../../../hack/images.ts';
import { freePort, kubeconfigYaml, ROOT } from '../../../hack/lib/controlplane.ts';
import { startProcess, stopProcess, tailFile } from '../../../hack/lib/process.ts';
import { type Registry, startRegistry } from '../../../hack/lib/registry.ts';
import { PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { parseFbc } from '../../../hack/packaging/fbc.ts';
import { extractImage, inImage, runInImage } from '../../support/image-rootfs.ts';
import { OperatorProcess } from '../../support/operator-process.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

type Obj = Record<string, unknown>;

let registry: Registry;
let work: string;
let set: ImageSet;
let failed = false;
/** The image inputs in the working tree when the first build started (see inputsFingerprint). */
let inputsBefore: Map<string, string>;

const log = (l: string) => console.log(`[images test] ${l}`);

beforeAll(async () => {
  registry = await startRegistry({ name: 'images-test-registry' });
  work = mkdtempSync(join(tmpdir(), 'vws-images-test-'));
  inputsBefore = inputsFingerprint();
  log(`registry ${registry.url}, work dir ${work}`);
  set = buildImages({ registry: `${registry.host}/vws`, helm: 'ours', workDir: join(work, 'build'), log });
  pushImages(set, join(work, 'build'), { log });
  for (const b of allImages(set)) log(`${b.name.padEnd(14)} ${b.ref}`);
}, 300_000);

afterAll(async () => {
  await registry?.stop();
  if (failed) console.log(`[images test] kept ${work} for inspection (registry log: ${registry?.logPath})`);
  else if (work) rmSync(work, { recursive: true, force: true });
});

/** Records a failure so afterAll keeps the work dir. */
function check<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    failed = true;
    throw err;
  }
}

/**
 * sha256 of every working-tree file the images are built from (sources without their unit tests,
 * packaging, bundle, catalog, pins). A reproducibility check is only meaningful when these did not change between the two builds,
 * which a checkout shared with someone editing cannot promise; the test then says so instead of
 * reporting a digest difference.
 */
function inputsFingerprint(): Map<string, string> {
  const out = new Map<string, string>();
  const add = (rel: string) => {
    const abs = join(ROOT, rel);
    if (statSync(abs).isDirectory()) for (const f of readdirSync(abs).sort()) add(join(rel, f));
    else if (!rel.endsWith('.test.ts'))
      out.set(rel, createHash('sha256').update(readFileSync(abs)).digest('hex'));
  };
  for (const p of [
    'operator/src',
    'package.json',
    'package-lock.json',
    'packaging',
    'bundle',
    'catalog',
    'hack/versions.env',
  ])
    add(p);
  return out;
}

function changedInputs(a: Map<string, string>, b: Map<string, string>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

function imageFiles(ref: string): Map<string, Buffer> {
  const img = extractTar(ref);
  return new Map(img.filter((e) => e.type === 'file').map((e) => [e.path, e.data]));
}

function extractTar(ref: string) {
  const dir = mkdtempSync(join(work, 'export-'));
  const tar = join(dir, 'fs.tar');
  const r = spawnSync(join(ROOT, 'bin/crane'), ['export', ref, tar], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`crane export ${ref}: ${r.stderr}`);
  return readTar(readFileSync(tar));
}

describe('images built without a daemon', () => {
  it('gives the same digests when built again in a fresh process (hack/images.ts --print)', () => {
    const summaryPath = join(work, 'again.json');
    const r = spawnSync(
      process.execPath,
      ['hack/images.ts', '--print', '--registry', set.registry, '--helm', 'ours', '--summary', summaryPath],
      // Without the layer cache: the second build gzips every layer itself (zlib determinism).
      { cwd: ROOT, encoding: 'utf8', timeout: 240_000, env: { ...process.env, VWS_LAYER_CACHE: 'off' } },
    );
    check(() => expect(r.status, r.stderr).toBe(0));
    const changed = changedInputs(inputsBefore, inputsFingerprint());
    if (changed.length > 0)
      throw new Error(
        `the image inputs changed in the working tree while the test ran, so the digests cannot be compared: ${changed.join(', ')}`,
      );
    const again = JSON.parse(readFileSync(summaryPath, 'utf8')) as Summary;
    const first = summarize(set);
    log(
      `first build:\n${JSON.stringify(first.tags, null, 2)}\nsecond build:\n${JSON.stringify(again.tags, null, 2)}`,
    );
    check(() => expect(again).toEqual(first));
    expect(r.stdout).toContain(`IMG=${set.operator.ref}`);
  });

  it('stored every image under the digest computed before the push, by tag and by digest', () => {
    for (const b of allImages(set)) {
      check(() => expect(digestOf(`${b.repo}:${b.tag}`), b.name).toBe(b.digest));
      const manifest = manifestOf(`${b.repo}@${b.image.digest}`) as {
        mediaType: string;
        layers: { digest: string }[];
      };
      check(() => expect(manifest.layers.map((l) => l.digest)).toEqual(b.image.layers.map((l) => l.digest)));
      expect(manifest.mediaType).toBe('application/vnd.oci.image.manifest.v1+json');
    }
  });

  it('operator and helm images: an image index naming linux/amd64, what the CSV references', () => {
    for (const b of [...Object.values(set.operators), set.helm!]) {
      const index = manifestOf(b.ref) as {
        mediaType: string;
        manifests: { digest: string; platform: { os: string; architecture: string } }[];
      };
      check(() =>
        expect(index).toMatchObject({
          mediaType: 'application/vnd.oci.image.index.v1+json',
          manifests: [{ digest: b.image.digest, platform: { os: 'linux', architecture: 'amd64' } }],
        }),
      );
    }
  });

  it('each version has its own operator image: its version label and date', () => {
    const versions = Object.keys(set.operators);
    expect(versions.length).toBeGreaterThanOrEqual(2);
    check(() =>
      expect(new Set(Object.values(set.operators).map((o) => o.digest)).size).toBe(versions.length),
    );
    for (const [v, o] of Object.entries(set.operators))
      expect(configOf(o.ref).config?.Labels?.['org.opencontainers.image.version']).toBe(v);
  });

  it('operator image: entrypoint, nonroot numeric user, working dir, labels', () => {
    const cfg = configOf(set.operator.ref);
    log(`operator config: ${JSON.stringify(cfg.config)}`);
    check(() =>
      expect(cfg.config).toMatchObject({
        User: '65532:65532',
        Entrypoint: ['/nodejs/bin/node', ...operatorNodeArgs()],
        WorkingDir: '/app',
        Labels: {
          'org.opencontainers.image.title': PACKAGE_NAME,
          'org.opencontainers.image.version': set.version,
          'org.opencontainers.image.licenses': 'Apache-2.0',
        },
      }),
    );
    expect(cfg.config?.Labels?.['io.vworkspace.image.runtime-libraries']).toMatch(/libc6=/);
    expect(cfg.created).toBe(cfg.config?.Labels?.['org.opencontainers.image.created']);
  });

  it('operator image: production node_modules and the sources only, no development Node, tests or dev dependencies', () => {
    const paths = new Set(extractTar(set.operator.ref).map((e) => e.path));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const missing = Object.keys(pkg.dependencies)
      .filter((d) => d !== 'node')
      .filter((d) => !paths.has(`app/node_modules/${d}/package.json`));
    check(() => expect(missing).toEqual([]));
    // development-only packages (a dev dependency another production package needs, like @types/node, stays)
    const ls = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const production = new Set(productionPackageDirs(ROOT, ls.stdout));
    const devOnly = Object.keys(pkg.devDependencies).filter((d) => !production.has(`node_modules/${d}`));
    check(() => expect(devOnly.filter((d) => paths.has(`app/node_modules/${d}`))).toEqual([]));
    expect(devOnly).toContain('vitest');
    expect(paths.has('app/node_modules/node')).toBe(false);
    expect([...paths].filter((p) => p.startsWith('app/operator/') && p.endsWith('.test.ts'))).toEqual([]);
    // the tooling (hack/, @vworkspace/tooling) never: ADR 0052
    expect(
      [...paths].filter((p) => /^app\/(hack(\/|$)|node_modules\/@vworkspace\/tooling$)/.test(p)),
    ).toEqual([]);
    for (const p of [
      'app/operator/src/main.ts',
      'app/operator/package.json',
      'app/package.json',
      'nodejs/bin/node',
      'etc/passwd',
    ])
      expect(paths.has(p), p).toBe(true);
  });

  it('operator image: its own filesystem runs the operator, as user 65532, against the API server until ready', async () => {
    const img = extractImage(set.operator.ref, mkdtempSync(join(work, 'operator-')));
    const version = runInImage(img, [
      '/nodejs/bin/node',
      '-e',
      'console.log(process.version, process.getuid())',
    ]);
    log(`node inside the image: ${version.stdout.trim()} ${version.stderr.trim()}`);
    check(() => expect(version.stdout.trim()).toMatch(/^v24\.\d+\.\d+ 65532$/));

    const kc = adminKubeConfig();
    const cluster = kc.getCurrentCluster()!;
    copyFileSync(cluster.caFile!, join(img.rootfs, 'tmp/ca.crt'));
    writeFileSync(
      join(img.rootfs, 'tmp/kubeconfig'),
      kubeconfigYaml(cluster.server, '/tmp/ca.crt', kc.getCurrentUser()!.token!),
    );
    const namespace = await createNamespace(kc, 'image');
    const launch = inImage(img);
    log(`starting ${launch.command} ${launch.args.join(' ')}`);
    const op = await OperatorProcess.start(
      {
        kubeconfigPath: '/tmp/kubeconfig',
        namespace,
        logDir: work,
        launch,
        env: { ...launch.env, NODE_OPTIONS: '' },
      },
      'operator-from-image',
    );
    try {
      await op.waitReady(90_000);
      log(`ready; log ${op.logPath}`);
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      await op.stop();
    }
  });

  it('bundle images: manifests/ and metadata/ at the root, labels = annotations.yaml, the operator by digest', () => {
    for (const b of set.bundles) {
      const version = b.tag.slice(1);
      const cfg = configOf(b.ref);
      check(() => expect(cfg.config?.Labels?.['com.redhat.openshift.versions']).toBe('v4.17'));
      expect(cfg.config?.Entrypoint).toBeUndefined();
      const files = imageFiles(b.ref);
      const roots = new Set([...files.keys()].map((p) => p.split('/')[0]));
      check(() => expect([...roots].sort()).toEqual(['manifests', 'metadata']));
      const annotations = YAML.parse(files.get('metadata/annotations.yaml')!.toString()) as {
        annotations: Record<string, string>;
      };
      check(() => expect(annotations.annotations).toEqual(cfg.config?.Labels));
      const csv = YAML.parse(
        files.get(`manifests/${PACKAGE_NAME}.clusterserviceversion.yaml`)!.toString(),
      ) as Obj;
      expectPinned(csv, set.operators[version]!.ref, set.helmRef, version);
    }
  });

  it('bundle images render with opm from the registry into exactly the catalog image entries', () => {
    const catalog = renderImage(set.catalog.ref);
    for (const b of set.bundles) {
      const [fromImage] = renderImage(b.ref, { migrate: true }).filter((x) => x.schema === 'olm.bundle');
      const inCatalog = catalog.find((x) => x.schema === 'olm.bundle' && x.image === b.ref);
      check(() => expect(inCatalog, `catalog entry with image ${b.ref}`).toBeDefined());
      check(() => expect(fromImage).toEqual(inCatalog));
    }
  });

  it('catalog image: configs label, opm entrypoint, grpc_health_probe, bundles by digest; it serves', async () => {
    const cfg = configOf(set.catalog.ref);
    check(() =>
      expect(cfg.config).toMatchObject({
        Labels: { [CONFIGS_LABEL]: '/configs' },
        Entrypoint: ['/bin/opm'],
        Cmd: ['serve', '/configs', '--cache-dir=/tmp/cache', '--cache-enforce-integrity=false'],
      }),
    );
    const img = extractImage(set.catalog.ref, mkdtempSync(join(work, 'catalog-')));
    const fbc = parseFbc(readFileSync(join(img.rootfs, 'configs', PACKAGE_NAME, 'catalog.yaml'), 'utf8'));
    for (const b of set.bundles)
      check(() => expect(fbc.filter((x) => x.schema === 'olm.bundle').map((x) => x.image)).toContain(b.ref));
    // the committed upgrade graph
    expect(fbc.filter((x) => x.schema === 'olm.channel')).toEqual(committedTemplate().channels);

    const port = await freePort();
    const launch = inImage(img, [
      ...(cfg.config?.Entrypoint ?? []),
      ...(cfg.config?.Cmd ?? []),
      `--port=${port}`,
      '--pprof-addr=127.0.0.1:0',
    ]);
    const logPath = join(work, 'catalog-serve.log');
    const serve = startProcess('opm serve (catalog image)', launch.command, launch.args, logPath, launch.env);
    try {
      let probe = runInImage(img, ['/bin/grpc_health_probe', `-addr=127.0.0.1:${port}`]);
      for (let i = 0; i < 120 && probe.code !== 0; i++) {
        await sleep(500);
        probe = runInImage(img, ['/bin/grpc_health_probe', `-addr=127.0.0.1:${port}`]);
      }
      log(`grpc_health_probe inside the catalog image: ${probe.stdout.trim()} ${probe.stderr.trim()}`);
      check(() => expect(probe.code, tailFile(logPath)).toBe(0));
      expect(`${probe.stdout}${probe.stderr}`).toContain('status: SERVING');
    } finally {
      await stopProcess(serve);
    }
  });

  it('make bundle IMG=<operator>@sha256:… pins it in the Deployment, containerImage and relatedImages', () => {
    const dir = join(work, 'make-bundle');
    const committedCsv = readFileSync(
      join(ROOT, 'bundle/manifests', `${PACKAGE_NAME}.clusterserviceversion.yaml`),
    );
    const r = spawnSync(
      'make',
      [
        '-o',
        'node_modules/.vws-installed',
        'bundle',
        `IMG=${set.operator.ref}`,
        `HELM_IMG=${set.helmRef}`,
        `BUNDLE_DIR=${dir}`,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    check(() => expect(r.status, `${r.stdout}${r.stderr}`).toBe(0));
    const csvPath = join(dir, 'manifests', `${PACKAGE_NAME}.clusterserviceversion.yaml`);
    expectPinned(
      YAML.parse(readFileSync(csvPath, 'utf8')) as Obj,
      set.operator.ref,
      set.helmRef,
      set.version,
    );
    // the same bytes as the bundle image of this version carries
    const current = set.bundles.find((b) => b.tag === `v${set.version}`)!;
    const inImage = imageFiles(current.ref);
    for (const sub of ['manifests', 'metadata'])
      for (const f of readdirSync(join(dir, sub)))
        check(() =>
          expect(inImage.get(`${sub}/${f}`)?.equals(readFileSync(join(dir, sub, f))), f).toBe(true),
        );
    // BUNDLE_DIR leaves the committed bundle alone
    expect(
      readFileSync(join(ROOT, 'bundle/manifests', `${PACKAGE_NAME}.clusterserviceversion.yaml`)),
    ).toEqual(committedCsv);
  });
});

/** The CSV names the operator image by digest in all three places and the helm image in both of its. */
function expectPinned(csv: Obj, operator: string, helm: string, version: string): void {
  const spec = csv.spec as {
    version: string;
    relatedImages: { name: string; image: string }[];
    install: {
      spec: {
        deployments: {
          spec: {
            template: { spec: { containers: { image: string; env: { name: string; value?: string }[] }[] } };
          };
        }[];
      };
    };
  };
  const meta = csv.metadata as { annotations: Record<string, string> };
  const container = spec.install.spec.deployments[0]!.spec.template.spec.containers[0]!;
  check(() => {
    expect(spec.version).toBe(version);
    expect(container.image).toBe(operator);
    expect(meta.annotations.containerImage).toBe(operator);
    expect(spec.relatedImages).toContainEqual({ name: PACKAGE_NAME, image: operator });
    expect(spec.relatedImages).toContainEqual({ name: 'helm', image: helm });
    expect(container.env).toContainEqual({ name: 'RELATED_IMAGE_HELM', value: helm });
  });
}
