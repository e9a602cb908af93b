// The kubectl vws plugin as a krew plugin: one Node.js script bundled with esbuild from
// operator/src/cli/kubectl-vws.ts (the same TypeScript the npm bin runs), packed in a reproducible
// .tar.gz, and the krew manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin) naming that
// archive's release URL and sha256. Release step (docs/release.md):
//
//   node hack/krew.ts --out DIR [--version 0.1.0]     writes DIR/kubectl-vws-v<version>.tar.gz and DIR/vws.yaml
//
// The archive holds `kubectl-vws` (ESM, `#!/usr/bin/env node`) and a package.json with "type": "module",
// which is how Node runs an extensionless ES module. Needs Node.js 24+ on the user's PATH.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { ROOT, toYaml } from './bundle.ts';

export const PLUGIN = 'vws';
const REPO = 'https://github.com/vworkspace/vworkspace-operator';

export interface ArchiveFile {
  name: string;
  content: Buffer;
  mode: number;
}

function octal(n: number, width: number): string {
  return `${n.toString(8).padStart(width - 1, '0')}\0`;
}

/** A ustar archive of `files`, gzipped; reproducible: fixed mtime, owner and order. */
export function tarGz(files: readonly ArchiveFile[], mtime = 0): Buffer {
  const blocks: Buffer[] = [];
  for (const f of files) {
    const h = Buffer.alloc(512);
    h.write(f.name, 0, 100, 'utf8');
    h.write(octal(f.mode, 8), 100, 'ascii');
    h.write(octal(0, 8), 108, 'ascii');
    h.write(octal(0, 8), 116, 'ascii');
    h.write(octal(f.content.length, 12), 124, 'ascii');
    h.write(octal(mtime, 12), 136, 'ascii');
    h.write('        ', 148, 'ascii');
    h.write('0', 156, 'ascii');
    h.write('ustar\u000000', 257, 'ascii');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
    blocks.push(h, f.content, Buffer.alloc((512 - (f.content.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks), { level: 9 });
}

/** The bundled plugin: every import inlined; `require` provided for the CommonJS dependencies. */
export async function bundlePlugin(): Promise<Buffer> {
  const r = await build({
    entryPoints: [join(ROOT, 'operator/src/cli/kubectl-vws.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    write: false,
    legalComments: 'none',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __vwsCreateRequire } from 'node:module';\nconst require = __vwsCreateRequire(import.meta.url);",
    },
  });
  const out = r.outputFiles[0];
  if (!out) throw new Error('esbuild wrote nothing');
  return Buffer.from(out.contents);
}

export function archiveName(version: string): string {
  return `kubectl-vws-v${version}.tar.gz`;
}

export function archiveFiles(script: Buffer): ArchiveFile[] {
  return [
    { name: 'kubectl-vws', content: script, mode: 0o755 },
    { name: 'package.json', content: Buffer.from('{"type":"module"}\n'), mode: 0o644 },
  ];
}

/** The krew manifest for the archive of `version` with digest `sha256`. */
export function krewManifest(version: string, sha256: string): Record<string, unknown> {
  return {
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: PLUGIN },
    spec: {
      version: `v${version}`,
      homepage: `${REPO}/blob/main/docs/kubectl-vws.md`,
      shortDescription: 'Run and follow vworkspace day-2 Operations',
      description:
        'Runs a CronOperation now or an Operation from a template, approves and cancels Operations, follows an Operation live, and shows the history of a CronOperation, WatchOperation or ApplicationInstance of the vworkspace-operator.\n',
      caveats:
        'Needs Node.js 24 or newer as `node` on your PATH, and the vworkspace-operator installed in the cluster.\n',
      platforms: [
        {
          selector: { matchExpressions: [{ key: 'os', operator: 'In', values: ['linux', 'darwin'] }] },
          uri: `${REPO}/releases/download/v${version}/${archiveName(version)}`,
          sha256,
          bin: 'kubectl-vws',
        },
      ],
    },
  };
}

async function main(argv: readonly string[]): Promise<number> {
  const at = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const out = at('--out');
  if (!out) {
    console.error('usage: node hack/krew.ts --out DIR [--version X.Y.Z]');
    return 2;
  }
  const version =
    at('--version') ??
    (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const archive = tarGz(archiveFiles(await bundlePlugin()), Number(process.env.SOURCE_DATE_EPOCH ?? 0));
  const sha256 = createHash('sha256').update(archive).digest('hex');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, archiveName(version)), archive);
  writeFileSync(join(out, `${PLUGIN}.yaml`), toYaml(krewManifest(version, sha256)));
  console.log(
    `wrote ${join(out, archiveName(version))} (sha256 ${sha256}) and ${join(out, `${PLUGIN}.yaml`)}`,
  );
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
