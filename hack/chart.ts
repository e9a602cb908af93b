// Writes the Helm chart of the install without OLM, generated from the bundle (hack/packaging/chart.ts;
// docs/install.md "Without OLM"; docs/adr/0032-install-without-olm.md):
//
//   node hack/chart.ts            write deploy/chart/vworkspace-operator/ (npm run bundle runs it)
//   node hack/chart.ts --check    exit 1 naming every stale or extra file; write nothing (check:generated)
import { readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type GeneratedFile, ROOT, readRepoFile, writeGenerated } from './bundle.ts';
import { CHART_DIR, chartFiles } from './packaging/chart.ts';

export function currentChartFiles(): GeneratedFile[] {
  return chartFiles(readRepoFile, readdirSync(join(ROOT, 'bundle/manifests')).sort());
}

function committed(dir: string): string[] {
  let out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? `${e.name}/` : e.name));
  } catch {
    return [];
  }
  for (const e of entries)
    out = e.endsWith('/') ? [...out, ...committed(join(dir, e))] : [...out, relative(ROOT, join(dir, e))];
  return out;
}

/** Files that differ from what the generator writes, and files it would not write. */
export function staleChartFiles(): string[] {
  const want = currentChartFiles();
  const wanted = new Set(want.map((f) => f.path));
  return [
    ...want.filter((f) => readRepoFile(f.path) !== f.content).map((f) => f.path),
    ...committed(join(ROOT, CHART_DIR)).filter((p) => !wanted.has(p)),
  ];
}

function main(argv: readonly string[]): number {
  if (argv.includes('--check')) {
    const stale = staleChartFiles();
    for (const p of stale) console.error(`stale: ${p} (run: npm run bundle)`);
    return stale.length === 0 ? 0 : 1;
  }
  const want = currentChartFiles();
  const wanted = new Set(want.map((f) => f.path));
  for (const p of committed(join(ROOT, CHART_DIR))) if (!wanted.has(p)) rmSync(join(ROOT, p));
  writeGenerated(want);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
