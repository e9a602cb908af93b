// The images of the journeys that install through OLM on a real node (olm-on-node.ts), built by the
// project's image code (hack/images/build.ts, what `make images` runs) for the node's loopback registry:
// per version of catalog/template.yaml an operator image (labelled and dated with that version, so each
// bundle's pod runs an image of its own: the upgrade replaces the pod's image) and the bundle image naming
// it and the helm runner image (built from bin/helm, so the node can pull what the CSV names) by digest;
// then two catalog
// images rendered from the template, one cut back to an older version and one with every version,
// holding our package (bundles by image: OLM unpacks them with its real unpack Job) and the provider
// packages (embedded, running the node's busybox so their pods really start); and a third with our
// package alone, as a cluster sees it whose engines were installed from Helm charts.
import { join } from 'node:path';
import {
  type BuiltImage,
  buildImages,
  catalogImage,
  type ImageSet,
  isRendered,
  openVersions,
  pushBuilt,
  renderCatalogFor,
} from '../../../hack/images/build.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { compareVersions, versionOf } from '../../../hack/packaging/fbc.ts';
import type { CatalogTemplate } from '../../../hack/packaging/template.ts';
import { addProviders } from '../support/catalog.ts';

export interface OlmImages {
  /** version → the operator image that version's bundle runs, by digest. */
  operators: Record<string, string>;
  /** version → bundle image by digest. */
  bundles: Record<string, string>;
  /** The helm runner image every bundle's CSV names (RELATED_IMAGE_HELM). */
  helm: string;
  /** The catalog with versions up to `upTo`, and the full one, by digest. */
  catalogUpTo: string;
  catalogFull: string;
  /** Every version and no provider package: a cluster whose engines came from Helm, not OLM. */
  catalogWithoutProviders: string;
}

/**
 * The template as it looked when `upTo` was the newest version: later channel entries dropped, and the
 * later bundle images with them (unrendered images pair with the open versions in order).
 */
export function templateUpTo(t: CatalogTemplate, upTo: string): CatalogTemplate {
  const keep = (name: string) => compareVersions(versionOf(t.package.name, name), upTo) <= 0;
  const open = openVersions(t);
  const kept = open.filter((v) => compareVersions(v, upTo) <= 0).length;
  return {
    ...t,
    channels: t.channels
      .map((c) => ({ ...c, entries: c.entries.filter((e) => keep(e.name)) }))
      .filter((c) => c.entries.length > 0),
    bundles: [
      ...t.bundles.filter((b) => isRendered(b) && keep(String(b.name))),
      ...t.bundles.filter((b) => !isRendered(b)).slice(0, kept),
    ],
  };
}

/** A catalog image of `template`, with the provider packages (their pods run the node's busybox) unless `providers` is false. */
function catalogWithProviders(
  node: RealNode,
  workDir: string,
  set: ImageSet,
  name: string,
  template: CatalogTemplate,
  version: string,
  providers = true,
): BuiltImage {
  const dir = join(workDir, name);
  renderCatalogFor(dir, template, set.bundleDirs);
  if (providers) addProviders(dir, { image: node.images.busybox, command: ['sleep', '86400'] });
  return { ...catalogImage(node.registryPrefix, version, dir), name };
}

export function buildOlmImages(
  node: RealNode,
  workDir: string,
  upTo: string,
  log: (l: string) => void,
): OlmImages {
  const set = buildImages({ registry: node.registryPrefix, helm: 'ours', workDir, log });
  if (!set.helm) throw new Error("buildImages built no helm image with helm: 'ours'");
  const older = catalogWithProviders(
    node,
    workDir,
    set,
    'catalog-up-to',
    templateUpTo(set.template, upTo),
    upTo,
  );
  const full = catalogWithProviders(node, workDir, set, 'catalog-full', set.template, set.version);
  const ours = catalogWithProviders(
    node,
    workDir,
    set,
    'catalog-without-providers',
    set.template,
    set.version,
    false,
  );
  for (const b of [...Object.values(set.operators), set.helm, ...set.bundles, older, full, ours])
    pushBuilt(b, workDir);
  return {
    operators: Object.fromEntries(Object.entries(set.operators).map(([v, b]) => [v, b.ref])),
    bundles: set.bundleRefs,
    helm: set.helm.ref,
    catalogUpTo: older.ref,
    catalogFull: full.ref,
    catalogWithoutProviders: ours.ref,
  };
}
