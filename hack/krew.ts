// The kubectl vws plugin as a krew plugin: one self-contained executable per platform (Node's single
// executable application, hack/packaging/sea.ts: the Node 24 runtime and the bundled plugin in one
// file), packed with the LICENSE in a reproducible .tar.gz, and the krew manifest
// (krew.googlecontainertools.github.com/v1alpha2 Plugin) naming each archive's release URL and sha256.
// Release step (docs/release.md; `make release` runs it):
//
//   node hack/krew.ts --out DIR [--version 0.1.0]
//       writes DIR/kubectl-vws-v<version>-<os>-<arch>.tar.gz and DIR/vws.yaml
//
// Nothing is needed on the user's machine but kubectl (and krew): no Node.js on PATH.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { ROOT, toYaml } from './bundle.ts';
import { buildPluginExecutable, SEA_PLATFORMS } from './packaging/sea.ts';

export const PLUGIN = 'vws';
export const BIN = 'kubectl-vws';
const REPO = 'https://github.com/vworkspace/vworkspace-operator';

export interface ArchiveFile {
  name: string;
  content: Buffer;
  mode: number;
}

export interface Platform {
  os: string;
  arch: string;
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

export function archiveName(version: string, p: Platform): string {
  return `${BIN}-v${version}-${p.os}-${p.arch}.tar.gz`;
}

/** What krew unpacks: the executable and the license it is distributed under. */
export function archiveFiles(executable: Buffer, license: Buffer): ArchiveFile[] {
  return [
    { name: BIN, content: executable, mode: 0o755 },
    { name: 'LICENSE', content: license, mode: 0o644 },
  ];
}

/** The krew manifest for `version`: one platform entry per archive, with its sha256. */
export function krewManifest(
  version: string,
  archives: readonly { platform: Platform; sha256: string }[],
): Record<string, unknown> {
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
      caveats: 'Needs the vworkspace-operator installed in the cluster (docs/install.md).\n',
      platforms: archives.map(({ platform, sha256 }) => ({
        selector: { matchLabels: { os: platform.os, arch: platform.arch } },
        uri: `${REPO}/releases/download/v${version}/${archiveName(version, platform)}`,
        sha256,
        files: [
          { from: BIN, to: '.' },
          { from: 'LICENSE', to: '.' },
        ],
        bin: BIN,
      })),
    },
  };
}

export interface KrewRelease {
  /** archive path → sha256 */
  archives: { path: string; platform: Platform; sha256: string }[];
  manifest: string;
}

/** Builds the executable, packs one archive per platform into `out` and writes `out/vws.yaml`. */
export async function writeKrewRelease(out: string, version: string, mtime = 0): Promise<KrewRelease> {
  const work = mkdtempSync(join(tmpdir(), 'vws-krew-build-'));
  try {
    const exe = join(work, BIN);
    await buildPluginExecutable(exe, work);
    const license = readFileSync(join(ROOT, 'LICENSE'));
    mkdirSync(out, { recursive: true });
    const archives = SEA_PLATFORMS.map((platform) => {
      const archive = tarGz(archiveFiles(readFileSync(exe), license), mtime);
      const path = join(out, archiveName(version, platform));
      writeFileSync(path, archive);
      return { path, platform, sha256: createHash('sha256').update(archive).digest('hex') };
    });
    const manifest = join(out, `${PLUGIN}.yaml`);
    writeFileSync(manifest, toYaml(krewManifest(version, archives)));
    return { archives, manifest };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
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
  const r = await writeKrewRelease(out, version, Number(process.env.SOURCE_DATE_EPOCH ?? 0));
  for (const a of r.archives) console.log(`wrote ${a.path} (sha256 ${a.sha256})`);
  console.log(`wrote ${r.manifest}`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main(process.argv.slice(2)));
