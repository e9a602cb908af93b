// Lays the operator out as a pull request to the community catalog repository
// (community-operators-prod; operator-pipelines docs/users/fbc_workflow.md):
//
//   config.yaml                                     the repository's settings, as the pipeline reads them
//   operators/vworkspace-operator/ci.yaml           packaging/ci.yaml
//   operators/vworkspace-operator/<version>/        each version's bundle (manifests/, metadata/);
//     release-config.yaml                           for the newest: where the pipeline adds it (FBC)
//   operators/vworkspace-operator/catalog-templates/basic.yaml   catalog/template.yaml
//   catalogs/v4.x/vworkspace-operator/catalog.yaml  the template rendered, per OpenShift release
//
// `bundleOnly` lays out the same bundles the way an operator without FBC submits them: no fbc in
// ci.yaml, no release-config.yaml, no catalogs; the pipeline then builds the graph from the CSVs.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { readRepoFile, toYaml } from '../bundle.ts';
import { PACKAGE_NAME } from '../packaging/csv.ts';
import { compareVersions } from '../packaging/fbc.ts';
import { type CatalogTemplate, edgesFor } from '../packaging/template.ts';

/** Where the catalogs of this layout may name bundle images from (the pipeline's allowed_bundle_registries). */
export interface LayoutInput {
  /** version → bundle directory (manifests/, metadata/) */
  bundles: Record<string, string>;
  template: CatalogTemplate;
  /** The template as catalog-templates/basic.yaml holds it (the committed file). */
  templateText: string;
  /** The rendered catalog (file-based catalog YAML), written for every catalog of ci.yaml. */
  catalog: string;
  /** config.yaml's allowed_bundle_registries. */
  allowedRegistries: string[];
  bundleOnly?: boolean;
}

export interface CiConfig {
  reviewers?: string[];
  updateGraph?: string;
  fbc?: {
    enabled?: boolean;
    catalog_mapping?: { template_name: string; type: string; catalog_names: string[] }[];
  };
}

export function ciConfig(): CiConfig {
  const text = readRepoFile('packaging/ci.yaml');
  if (!text) throw new Error('packaging/ci.yaml is missing');
  return YAML.parse(text) as CiConfig;
}

/** release-config.yaml: the pipeline adds the bundle to these templates with these channels and edges. */
export function releaseConfig(template: CatalogTemplate, version: string): Record<string, unknown> {
  const channels = template.channels
    .filter((c) => c.entries.some((e) => e.name === `${PACKAGE_NAME}.v${version}`))
    .map((c) => c.name);
  return {
    catalog_templates: [
      { template_name: 'basic.yaml', channels, ...edgesFor(template.channels, PACKAGE_NAME, version) },
    ],
  };
}

export function writeLayout(root: string, input: LayoutInput): void {
  const ci = ciConfig();
  const op = join(root, 'operators', PACKAGE_NAME);
  mkdirSync(op, { recursive: true });
  writeFileSync(
    join(root, 'config.yaml'),
    toYaml({ organization: 'community-operators', allowed_bundle_registries: input.allowedRegistries }),
  );
  const { fbc, ...bundleOnlyCi } = ci;
  writeFileSync(join(op, 'ci.yaml'), toYaml(input.bundleOnly ? bundleOnlyCi : ci));
  const versions = Object.keys(input.bundles).sort(compareVersions);
  for (const v of versions) {
    cpSync(join(input.bundles[v]!, 'manifests'), join(op, v, 'manifests'), { recursive: true });
    cpSync(join(input.bundles[v]!, 'metadata'), join(op, v, 'metadata'), { recursive: true });
  }
  if (input.bundleOnly) return;
  const newest = versions.at(-1);
  if (newest)
    writeFileSync(join(op, newest, 'release-config.yaml'), toYaml(releaseConfig(input.template, newest)));
  mkdirSync(join(op, 'catalog-templates'), { recursive: true });
  writeFileSync(join(op, 'catalog-templates', 'basic.yaml'), input.templateText);
  for (const mapping of fbc?.catalog_mapping ?? [])
    for (const name of mapping.catalog_names) {
      mkdirSync(join(root, 'catalogs', name, PACKAGE_NAME), { recursive: true });
      writeFileSync(join(root, 'catalogs', name, PACKAGE_NAME, 'catalog.yaml'), input.catalog);
    }
}
