// A community catalog repository on disk, read the way the community operator pipeline reads it
// (operator-pipelines, operatorcert/operator_repo/core.py: Repo, Operator, Bundle, Catalog):
//
//   config.yaml                                   the repository's settings (organization, registries)
//   operators/<operator>/ci.yaml                  the operator's settings (reviewers, updateGraph, fbc)
//   operators/<operator>/<version>/manifests/     a bundle: one directory per version
//   operators/<operator>/<version>/metadata/annotations.yaml
//   operators/<operator>/<version>/release-config.yaml   (FBC) where the pipeline adds the bundle
//   operators/<operator>/catalog-templates/*.yaml
//   catalogs/<v4.x>/<operator>/catalog.yaml       the rendered file-based catalog per OpenShift release
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { compareSemver } from './semver.ts';

type Obj = Record<string, unknown>;

export interface Bundle {
  /** The directory name: the version the pipeline files the bundle under. */
  dir: string;
  root: string;
  annotations: Record<string, string>;
  csv: Obj & { metadata?: { name?: string; annotations?: Record<string, string> }; spec?: Obj };
  csvFile: string;
  releaseConfig?: Obj;
  manifests: { file: string; content: Obj }[];
}

export interface Operator {
  name: string;
  root: string;
  /** ci.yaml, or {} when absent (the pipeline then treats the operator as bundle-only). */
  config: Obj;
  bundles: Bundle[];
}

export interface OperatorCatalog {
  /** v4.17 */
  catalog: string;
  operator: string;
  blobs: Obj[];
}

export interface CommunityRepo {
  root: string;
  config: Obj;
  operators: Operator[];
  catalogs: OperatorCatalog[];
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

function yamlFile(path: string): unknown {
  return YAML.parse(readFileSync(path, 'utf8'));
}

function loadBundle(root: string): Bundle {
  const manifestsDir = join(root, 'manifests');
  const files = readdirSync(manifestsDir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort();
  const csvFile = files.find((f) => /\.clusterserviceversion\.ya?ml$/.test(f));
  if (!csvFile) throw new Error(`${root}: no *.clusterserviceversion.yaml in manifests/`);
  const annotationsPath = join(root, 'metadata/annotations.yaml');
  const annotations = existsSync(annotationsPath)
    ? (((yamlFile(annotationsPath) as Obj | null)?.annotations ?? {}) as Record<string, string>)
    : {};
  const releasePath = join(root, 'release-config.yaml');
  return {
    dir: root.split('/').pop() ?? '',
    root,
    annotations,
    csv: yamlFile(join(manifestsDir, csvFile)) as Bundle['csv'],
    csvFile,
    ...(existsSync(releasePath) ? { releaseConfig: yamlFile(releasePath) as Obj } : {}),
    manifests: files
      .map((f) => ({ file: f, content: yamlFile(join(manifestsDir, f)) }))
      .filter(
        (m): m is { file: string; content: Obj } => typeof m.content === 'object' && m.content !== null,
      ),
  };
}

export function loadRepo(root: string): CommunityRepo {
  const operatorsDir = join(root, 'operators');
  const operators = readdirSync(operatorsDir)
    .filter((n) => isDir(join(operatorsDir, n)))
    .map((name) => {
      const dir = join(operatorsDir, name);
      const ci = join(dir, 'ci.yaml');
      const bundles = readdirSync(dir)
        .map((v) => join(dir, v))
        .filter((p) => isDir(join(p, 'manifests')) && isDir(join(p, 'metadata')))
        .map(loadBundle)
        .sort((a, b) => compareSemver(csvVersionOf(a), csvVersionOf(b)));
      return { name, root: dir, config: existsSync(ci) ? ((yamlFile(ci) as Obj | null) ?? {}) : {}, bundles };
    });
  const catalogsDir = join(root, 'catalogs');
  const catalogs: OperatorCatalog[] = [];
  if (isDir(catalogsDir))
    for (const catalog of readdirSync(catalogsDir).sort())
      for (const operator of readdirSync(join(catalogsDir, catalog)).sort()) {
        const file = join(catalogsDir, catalog, operator, 'catalog.yaml');
        if (!existsSync(file)) continue;
        const blobs = YAML.parseAllDocuments(readFileSync(file, 'utf8'))
          .map((d) => d.toJS() as Obj | null)
          .filter((b): b is Obj => b !== null);
        catalogs.push({ catalog, operator, blobs });
      }
  const config = join(root, 'config.yaml');
  return { root, config: existsSync(config) ? (yamlFile(config) as Obj) : {}, operators, catalogs };
}

/** `<name>.v<version>` from metadata.name, split at the first dot as the pipeline does. */
export function csvNameParts(b: Bundle): { name: string; version: string } {
  const full = b.csv.metadata?.name;
  const i = typeof full === 'string' ? full.indexOf('.') : -1;
  if (typeof full !== 'string' || i < 0) throw new Error(`CSV for ${b.dir} has invalid .metadata.name`);
  return { name: full.slice(0, i), version: full.slice(i + 1).replace(/^v/, '') };
}

export const csvVersionOf = (b: Bundle): string => csvNameParts(b).version;

export function channelsOf(b: Bundle): string[] {
  const list = b.annotations['operators.operatorframework.io.bundle.channels.v1'];
  return list ? list.split(',').map((c) => c.trim()) : [];
}

export function defaultChannelOf(b: Bundle): string | undefined {
  return b.annotations['operators.operatorframework.io.bundle.channel.default.v1']?.trim();
}

export function fbcEnabled(op: Operator): boolean {
  return (op.config.fbc as { enabled?: unknown } | undefined)?.enabled === true;
}
