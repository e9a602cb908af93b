// Journey 4, air-gapped mirror (docs/disconnected.md): the release images go to a source registry,
// `hack/mirror.ts` copies the catalog and every image it references to a second registry by digest and
// writes the ImageDigestMirrorSet / ImageContentSourcePolicy, the source registry is stopped, and
// everything is then proven from the mirror alone:
//   - `opm render --use-http <mirror>/…-catalog@sha256:…` reads the catalog: same package, channels
//     (the committed upgrade graph) and bundles as the source catalog;
//   - every image the catalog references (bundle images, relatedImages: operator, helm runner) and the
//     catalog itself exist in the mirror under their digests, at the repository the IDMS sends them to;
//   - the IDMS and ICSP have a rule for every referenced repository, pointing into the mirror;
//   - every mirrored bundle image renders with opm into the catalog's olm.bundle (content intact).
// The same catalog is also mirrored with skopeo (Debian's package, `--tool skopeo`, the copy command
// docs/disconnected.md gives users) to a third registry, which is then proven the same way from itself.
// All registries are real CNCF distribution registries on loopback (plain HTTP). The helm runner image
// is ours (bin/helm, `--helm ours`): the bundle's default helm image lives on docker.io, which this
// machine cannot reach, so it could not be the source of a mirror here.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { committedTemplate } from '../../hack/images/build.ts';
import { digestOf } from '../../hack/images/crane.ts';
import {
  catalogImages,
  type MirrorPlan,
  parseRef,
  type RepositoryMirror,
  redirect,
  repoName,
} from '../../hack/images/mirror.ts';
import { renderImage } from '../../hack/images/opm.ts';
import type { Summary } from '../../hack/images.ts';
import { ROOT } from '../../hack/lib/controlplane.ts';
import { tailFile } from '../../hack/lib/process.ts';
import { type Registry, startRegistry } from '../../hack/lib/registry.ts';
import { PACKAGE_NAME } from '../../hack/packaging/csv.ts';
import type { FbcBlob } from '../../hack/packaging/fbc.ts';

let source: Registry;
let mirror: Registry;
let skopeoMirror: Registry;
let work: string;
let outDir: string;
let skopeoOutDir: string;
let summary: Summary | undefined;
let written: { catalog: { source: string; target: string }; images: string[]; plan: MirrorPlan } | undefined;
let mirroredCatalog: FbcBlob[] | undefined;
let anyFailed = false;

const say = (l: string) => console.log(`[mirror journey] ${l}`);

function node(args: string[], what: string): string {
  say(`$ node ${args.join(' ')}`);
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 480_000 });
  if (r.status !== 0)
    throw new Error(`${what} failed (exit ${r.status}):\n${r.stderr.slice(-4000)}\n${r.stdout.slice(-2000)}`);
  say(`${what}: ok\n${r.stderr.trim()}\n${r.stdout.trim()}`);
  return r.stdout;
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is missing: an earlier step failed`);
  return value;
}

function readOut(file: string, dir = outDir): string {
  return readFileSync(join(dir, file), 'utf8');
}

/** Each image, redirected by the ImageDigestMirrorSet written to `dir`, is in `registry` under its digest. */
function expectMirroredByDigest(images: readonly string[], dir: string, registry: Registry): void {
  const idms = YAML.parse(readOut('imagedigestmirrorset.yaml', dir)) as {
    spec: { imageDigestMirrors: { source: string; mirrors: string[] }[] };
  };
  const rules: RepositoryMirror[] = idms.spec.imageDigestMirrors.map((r) => ({
    source: r.source,
    mirror: r.mirrors[0]!,
  }));
  for (const image of images) {
    const target = redirect(image, rules);
    say(`${image}\n    -> ${target ?? 'NO RULE'}`);
    expect(target, `IDMS rule for ${image}`).toBeDefined();
    expect(target!.startsWith(`${registry.host}/olm/`)).toBe(true);
    expect(digestOf(target!)).toBe(parseRef(image).digest);
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'vws-mirror-journey-'));
  outDir = join(work, 'out');
  skopeoOutDir = join(work, 'out-skopeo');
  source = await startRegistry({ name: 'source-registry' });
  mirror = await startRegistry({ name: 'mirror-registry' });
  skopeoMirror = await startRegistry({ name: 'skopeo-mirror-registry' });
  say(
    `source registry ${source.url}, mirror registry ${mirror.url}, skopeo's mirror ${skopeoMirror.url}, work dir ${work}`,
  );
});

afterEach((ctx) => {
  if (ctx.task.result?.state !== 'fail') return;
  anyFailed = true;
  say('---- data at the failure ----');
  say(`images summary: ${JSON.stringify(summary, null, 2)}`);
  for (const f of [
    'images.json',
    'mapping.txt',
    'imagedigestmirrorset.yaml',
    'imagecontentsourcepolicy.yaml',
  ]) {
    try {
      say(`${f}:\n${readOut(f)}`);
    } catch {
      say(`${f}: not written`);
    }
  }
  say(`source registry log:\n${tailFile(source.logPath)}`);
  say(`mirror registry log:\n${tailFile(mirror.logPath)}`);
  say(`skopeo's mirror registry log:\n${tailFile(skopeoMirror.logPath)}`);
});

afterAll(async () => {
  await source?.stop();
  await mirror?.stop();
  await skopeoMirror?.stop();
  if (anyFailed) say(`kept ${work} for inspection`);
  else rmSync(work, { recursive: true, force: true });
});

describe('journey 4: air-gapped mirror', () => {
  it('step 1: builds the operator, helm runner, bundle and catalog images and pushes them to the source registry', () => {
    const summaryPath = join(work, 'images.json');
    node(
      [
        'hack/images.ts',
        '--registry',
        `${source.host}/vworkspace`,
        '--helm',
        'ours',
        '--summary',
        summaryPath,
      ],
      'hack/images.ts',
    );
    summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as Summary;
    expect(Object.keys(summary.bundles).sort()).toEqual(['0.0.9', '0.1.0']);
  });

  it('step 2: mirrors the catalog and every image it references by digest (hack/mirror.ts)', () => {
    const s = need(summary, 'the pushed images');
    node(['hack/mirror.ts', s.catalog, `${mirror.host}/olm`, '--out', outDir], 'hack/mirror.ts');
    written = JSON.parse(readOut('images.json')) as typeof written;
    const w = need(written, 'images.json');
    // what the source catalog references: both bundle images and every related image
    expect(w.images).toEqual(
      [...new Set([...Object.values(s.bundles), ...Object.values(s.operators), s.helm])].sort(),
    );
    expect(w.catalog.source).toBe(s.catalog);
    expect(w.plan.entries).toHaveLength(w.images.length + 1);
    expect(readOut('mapping.txt').trim().split('\n')).toHaveLength(w.plan.entries.length);
  });

  it('step 2b: mirrors the same catalog with skopeo copy --all --preserve-digests to a third registry', () => {
    const s = need(summary, 'the pushed images');
    node(
      ['hack/mirror.ts', s.catalog, `${skopeoMirror.host}/olm`, '--out', skopeoOutDir, '--tool', 'skopeo'],
      'hack/mirror.ts --tool skopeo',
    );
    const w = JSON.parse(readOut('images.json', skopeoOutDir)) as NonNullable<typeof written>;
    expect(w.images).toEqual(need(written, 'the crane mirror result').images);
    expect(w.plan.entries.every((e) => e.target.startsWith(`${skopeoMirror.host}/olm/`))).toBe(true);
  });

  it('step 3: stops the source registry (from here on only the mirror exists)', async () => {
    await source.stop();
    const answer = await fetch(`${source.url}/v2/`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.status,
      () => 0,
    );
    say(`source registry ${source.url} answers: ${answer || 'nothing'}`);
    expect(answer).toBe(0);
  });

  it('step 4: opm renders the mirrored catalog image: same package, channels and bundles as the source', () => {
    const w = need(written, 'the mirror result');
    say(`$ opm render --use-http ${w.catalog.target}`);
    mirroredCatalog = renderImage(w.catalog.target, { useHttp: true });
    const kinds = mirroredCatalog.map((b) => `${b.schema} ${b.name}`);
    say(`mirrored catalog: ${kinds.join(', ')}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        `olm.package ${PACKAGE_NAME}`,
        'olm.channel candidate-v0',
        'olm.channel stable-v0',
        `olm.bundle ${PACKAGE_NAME}.v0.0.9`,
        `olm.bundle ${PACKAGE_NAME}.v0.1.0`,
      ]),
    );
    // the upgrade graph is the committed one (catalog/template.yaml's channels)
    const committed = committedTemplate().channels;
    const channels = mirroredCatalog.filter((b) => b.schema === 'olm.channel');
    expect(channels.map((c) => [c.name, c.entries])).toEqual(
      expect.arrayContaining(committed.map((c) => [c.name, c.entries])),
    );
    // the catalog names exactly the images that were mirrored
    expect(catalogImages(mirroredCatalog)).toEqual(w.images);
  });

  it('step 5: every image the catalog references exists in the mirror under its digest, where the IDMS sends it', () => {
    const w = need(written, 'the mirror result');
    const catalog = need(mirroredCatalog, 'the mirrored catalog');
    expectMirroredByDigest([w.catalog.source, ...catalogImages(catalog)], outDir, mirror);
  });

  it('step 6: the IDMS and ICSP map every referenced repository to the mirror', () => {
    const w = need(written, 'the mirror result');
    const catalog = need(mirroredCatalog, 'the mirrored catalog');
    const idms = YAML.parse(readOut('imagedigestmirrorset.yaml')) as {
      apiVersion: string;
      kind: string;
      spec: { imageDigestMirrors: { source: string; mirrors: string[] }[] };
    };
    const icsp = YAML.parse(readOut('imagecontentsourcepolicy.yaml')) as {
      apiVersion: string;
      kind: string;
      spec: { repositoryDigestMirrors: { source: string; mirrors: string[] }[] };
    };
    expect([idms.apiVersion, idms.kind]).toEqual(['config.openshift.io/v1', 'ImageDigestMirrorSet']);
    expect([icsp.apiVersion, icsp.kind]).toEqual([
      'operator.openshift.io/v1alpha1',
      'ImageContentSourcePolicy',
    ]);
    const referenced = [
      ...new Set([w.catalog.source, ...catalogImages(catalog)].map((i) => repoName(parseRef(i)))),
    ].sort();
    say(`referenced repositories: ${referenced.join(', ')}`);
    expect(idms.spec.imageDigestMirrors.map((r) => r.source).sort()).toEqual(referenced);
    expect(icsp.spec.repositoryDigestMirrors).toEqual(idms.spec.imageDigestMirrors);
    for (const r of idms.spec.imageDigestMirrors)
      expect(r.mirrors).toEqual([`${mirror.host}/olm/${parseRef(r.source).repository}`]);
    const cs = YAML.parse(readOut('catalogsource.yaml')) as { spec: { image: string } };
    expect(cs.spec.image).toBe(w.catalog.target);
  });

  it('step 7: every mirrored bundle image renders with opm into its catalog entry (content intact)', () => {
    const catalog = need(mirroredCatalog, 'the mirrored catalog');
    const rules = need(written, 'the mirror result').plan.repositories;
    for (const entry of catalog.filter((b) => b.schema === 'olm.bundle')) {
      const target = redirect(entry.image!, rules)!;
      say(`$ opm render --use-http ${target}`);
      // as the catalog was rendered: olm.csv.metadata, not the embedded manifests
      const [fromMirror] = renderImage(target, { useHttp: true, migrate: true }).filter(
        (b) => b.schema === 'olm.bundle',
      );
      // opm names the image it pulled; everything else is the catalog's entry
      const { image: _pulled, relatedImages: pulledRelated, ...rest } = need(fromMirror, `bundle ${target}`);
      const { image: _listed, relatedImages: listedRelated, ...expected } = entry;
      expect(rest).toEqual(expected);
      const withoutBundle = (r: { image: string }[] | undefined, self: string) =>
        (r ?? []).filter((x) => x.image !== self);
      expect(withoutBundle(pulledRelated, target)).toEqual(withoutBundle(listedRelated, entry.image!));
    }
  });

  it("step 8: skopeo's mirror alone: its catalog renders, and every image is there by digest where its IDMS sends it", () => {
    const w = JSON.parse(readOut('images.json', skopeoOutDir)) as NonNullable<typeof written>;
    say(`$ opm render --use-http ${w.catalog.target}`);
    const catalog = renderImage(w.catalog.target, { useHttp: true });
    expect(catalog).toEqual(need(mirroredCatalog, 'the crane-mirrored catalog'));
    expectMirroredByDigest([w.catalog.source, ...catalogImages(catalog)], skopeoOutDir, skopeoMirror);
  });
});
