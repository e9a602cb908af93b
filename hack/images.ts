// Builds the operator, bundle and catalog images without a Docker daemon and pushes them by digest
// (hack/images/build.ts; docs/release.md; docs/adr/0005-images-and-mirroring.md).
//
//   node hack/images.ts                          start a loopback registry, push, check, print, stop it
//   node hack/images.ts --registry R             push to R (host[:port]/namespace; crane's credentials)
//   node hack/images.ts --print [--registry R]   only compute and print the digests (default R: quay.io/vworkspace)
//     --helm ours       also build the helm runner image from bin/helm and put it in the bundles
//                       (default: packaging/images.yaml's helm image)
//     --insecure        R speaks plain HTTP (loopback registries always do)
//     --summary FILE    write the references as JSON (hack/mirror.ts and the tests read it)
//     --serve           with the loopback registry: keep it running until Ctrl-C
//   SOURCE_DATE_EPOCH   overrides every version's date (packaging/releases.yaml) in layers and configs
//
// The digests follow from the content alone: the same sources give the same digests on every run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allImages, buildImages, type ImageSet, pushImages, RELEASE_REGISTRY } from './images/build.ts';
import { isLoopback } from './images/crane.ts';
import { startRegistry } from './lib/registry.ts';

export const DEFAULT_REGISTRY = RELEASE_REGISTRY;
/** The namespace under a loopback registry this command starts itself. */
export const LOCAL_NAMESPACE = 'vworkspace';

export interface Summary {
  registry: string;
  version: string;
  /** The operator image of package.json's version (IMG). */
  operator: string;
  /** Every version's operator image built: version → reference (each bundle names its own). */
  operators: Record<string, string>;
  helm: string;
  bundles: Record<string, string>;
  catalog: string;
  /** The tags pushed, for people: `repo:tag` → digest reference. */
  tags: Record<string, string>;
}

export function summarize(set: ImageSet): Summary {
  return {
    registry: set.registry,
    version: set.version,
    operator: set.operator.ref,
    operators: Object.fromEntries(Object.entries(set.operators).map(([v, o]) => [v, o.ref])),
    helm: set.helmRef,
    bundles: set.bundleRefs,
    catalog: set.catalog.ref,
    tags: Object.fromEntries(allImages(set).map((b) => [`${b.repo}:${b.tag}`, b.ref])),
  };
}

export function report(s: Summary, pushed: boolean): string {
  const helm = s.helm.startsWith(`${s.registry}/`) ? ` HELM_IMG=${s.helm}` : '';
  return [
    pushed ? `pushed to ${s.registry}:` : `digests for ${s.registry} (not pushed):`,
    ...Object.entries(s.tags).map(([tag, ref]) => `  ${tag.padEnd(70)} ${ref.slice(ref.indexOf('@') + 1)}`),
    '',
    `Pin the operator image of ${s.version} in packaging/images.yaml, then npm run bundle (docs/release.md):`,
    `  operator: { "${s.version}": ${s.operator} }${helm ? `   (and${helm})` : ''}`,
    `CatalogSource spec.image: ${s.catalog}`,
    '',
    `IMG=${s.operator}`,
  ].join('\n');
}

/** `--name value` from argv; a flag without its value is an error. */
export function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  if (!v || v.startsWith('--')) throw new Error(`${name} needs a value`);
  return v;
}

async function main(argv: readonly string[]): Promise<number> {
  const print = argv.includes('--print');
  const helmMode = flag(argv, '--helm') ?? 'pinned';
  if (helmMode !== 'ours' && helmMode !== 'pinned') throw new Error('--helm is ours or pinned');
  const summaryPath = flag(argv, '--summary');
  const given = flag(argv, '--registry');
  const workDir = mkdtempSync(join(tmpdir(), 'vws-images-'));
  const log = (l: string) => console.error(`[images] ${l}`);
  const local = !print && !given ? await startRegistry({ name: 'images-registry' }) : undefined;
  try {
    const registry = local ? `${local.host}/${LOCAL_NAMESPACE}` : (given ?? DEFAULT_REGISTRY);
    const set = buildImages({
      registry,
      helm: helmMode,
      workDir,
      log,
      ...(process.env.SOURCE_DATE_EPOCH ? { sourceDateEpoch: process.env.SOURCE_DATE_EPOCH } : {}),
    });
    if (!print) {
      pushImages(set, workDir, { insecure: argv.includes('--insecure') && !isLoopback(registry), log });
    }
    const summary = summarize(set);
    if (summaryPath) writeFileSync(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
    console.log(report(summary, !print));
    if (local && argv.includes('--serve')) {
      console.error(`[images] serving ${local.url} until Ctrl-C (storage ${local.dir})`);
      await new Promise<void>((ok) => {
        process.once('SIGINT', ok);
        process.once('SIGTERM', ok);
      });
    } else if (local) {
      console.error(`[images] the loopback registry ${local.host} stops now (--serve keeps it)`);
    }
    return 0;
  } finally {
    await local?.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
