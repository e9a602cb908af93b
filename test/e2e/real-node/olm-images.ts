// The images of the OLM journey on a real node, built by the project's image code (hack/images/build.ts)
// for the node's loopback registry: per version of the catalog, an operator image (labelled with that
// version, so each bundle's pod runs an image of its own: the upgrade replaces the pod's image) and the
// bundle image naming it by digest; then catalog images, one cut back to an older version and one
// with every version, holding our package (bundles by image: OLM unpacks them with its real unpack Job)
// and the provider packages (embedded, running the node's busybox so their pods really start).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { readRepoFile, writeBundleDir } from '../../../hack/bundle.ts';
import { CATALOG_DIR, renderBundle } from '../../../hack/catalog.ts';
import {
  type BuiltImage,
  bundleImage,
  catalogImage,
  catalogVersions,
  operatorImage,
  pushBuilt,
  renderCatalogFor,
  sourceDate,
} from '../../../hack/images/build.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { compareVersions } from '../../../hack/packaging/fbc.ts';
import { addProviders, cutToVersion } from '../support/catalog.ts';
import { CURRENT_VERSION } from '../support/install.ts';

export interface OlmImages {
  /** version → the operator image that version's bundle runs, by digest. */
  operators: Record<string, string>;
  /** version → bundle image by digest. */
  bundles: Record<string, string>;
  /** The catalog with versions up to `upTo`, and the full one, by digest. */
  catalogUpTo: string;
  catalogFull: string;
}

export function buildOlmImages(node: RealNode, workDir: string, upTo: string): OlmImages {
  const registry = node.registryPrefix;
  const helm = String((YAML.parse(readRepoFile('packaging/images.yaml') ?? '') as { helm?: string }).helm);
  const built: BuiltImage[] = [];
  const operators: Record<string, string> = {};
  const bundles: Record<string, string> = {};
  const entries: { version: string; yaml: string; ref: string }[] = [];
  for (const version of catalogVersions()) {
    const operator = { ...operatorImage(registry, version), name: `operator-${version}` };
    const dir = join(workDir, `bundle-${version}`);
    writeBundleDir(dir, {
      version,
      images: { operator: operator.ref, helm },
      createdAt: sourceDate(version).created,
    });
    const bundle = bundleImage(registry, version, dir);
    built.push(operator, bundle);
    operators[version] = operator.ref;
    bundles[version] = bundle.ref;
    entries.push({ version, ref: bundle.ref, yaml: renderBundle(dir, bundle.ref) });
  }
  const container = { image: node.images.busybox, command: ['sleep', '86400'] };
  const catalog = (name: string, cut?: string) => {
    const dir = join(workDir, name);
    mkdirSync(dir, { recursive: true });
    renderCatalogFor(dir, cut ? entries.filter((e) => compareVersions(e.version, cut) <= 0) : entries);
    if (cut) cutToVersion(join(dir, CATALOG_DIR.split('/').pop() ?? ''), cut);
    addProviders(dir, container);
    return { ...catalogImage(registry, cut ?? CURRENT_VERSION, dir), name };
  };
  const older = catalog('catalog-up-to', upTo);
  const full = catalog('catalog-full');
  pushBuilt([...built, older, full], workDir);
  return { operators, bundles, catalogUpTo: older.ref, catalogFull: full.ref };
}
