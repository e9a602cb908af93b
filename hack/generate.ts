// Writes everything derived from the TypeScript API (operator/src/api/):
//   bundle/manifests/<group>_<plural>.yaml   one CustomResourceDefinition per kind
//   docs/api/<kind>.md                       the field reference between the GENERATED markers
//   docs/templates.md                        the built-in templates' parameters, same markers
//   bundle/manifests/vworkspace-profile-*_rbac.authorization.k8s.io_v1_clusterrole.yaml
//                                            one ClusterRole per RBAC profile (operator/src/rbac/)
//
//   node hack/generate.ts           write the files
//   node hack/generate.ts --check   exit 1 naming every stale file; write nothing (CI)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ALL_KINDS,
  crdFileName,
  docFileName,
  renderCrdYaml,
  spliceGenerated,
  spliceReference,
} from '@vworkspace/operator/api';
import {
  BUILTIN_TEMPLATES,
  profileClusterRoleFileName,
  RBAC_PROFILE_LIST,
  renderProfileClusterRole,
  renderTemplatesReference,
} from '@vworkspace/operator/packaging';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface GeneratedFile {
  /** Path relative to the repository root. */
  path: string;
  content: string;
}

/** Every generated file with the content it must have. `read` gives the current text of a file or undefined. */
export function generatedFiles(read: (path: string) => string | undefined): GeneratedFile[] {
  const files: GeneratedFile[] = [];
  for (const kind of ALL_KINDS) {
    files.push({ path: join('bundle/manifests', crdFileName(kind)), content: renderCrdYaml(kind) });
    const doc = join('docs/api', docFileName(kind));
    const current = read(doc);
    if (current === undefined)
      throw new Error(`${doc} is missing: write its prose with the GENERATED markers first`);
    files.push({ path: doc, content: spliceReference(current, kind, doc) });
  }
  const templatesDoc = 'docs/templates.md';
  const current = read(templatesDoc);
  if (current === undefined)
    throw new Error(`${templatesDoc} is missing: write its prose with the GENERATED markers first`);
  files.push({
    path: templatesDoc,
    content: spliceGenerated(current, renderTemplatesReference(BUILTIN_TEMPLATES), templatesDoc),
  });
  for (const profile of RBAC_PROFILE_LIST) {
    files.push({
      path: join('bundle/manifests', profileClusterRoleFileName(profile)),
      content: renderProfileClusterRole(profile),
    });
  }
  return files;
}

export function readRepoFile(path: string): string | undefined {
  const abs = join(ROOT, path);
  return existsSync(abs) ? readFileSync(abs, 'utf8') : undefined;
}

/** Paths whose committed content differs from what the generator produces. */
export function staleFiles(read: (path: string) => string | undefined = readRepoFile): string[] {
  return generatedFiles(read)
    .filter((f) => read(f.path) !== f.content)
    .map((f) => f.path);
}

function main(argv: readonly string[]): number {
  if (argv.includes('--check')) {
    const stale = staleFiles();
    for (const path of stale) console.error(`stale: ${path} (run: npm run generate)`);
    return stale.length === 0 ? 0 : 1;
  }
  for (const f of generatedFiles(readRepoFile)) {
    if (readRepoFile(f.path) === f.content) continue;
    writeFileSync(join(ROOT, f.path), f.content);
    console.log(`wrote ${f.path}`);
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
