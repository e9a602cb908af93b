// `kubectl vws` as one self-contained executable: Node's single executable application (SEA). The plugin
// is bundled by esbuild into one CommonJS script (Node 24's SEA runs CommonJS only), Node turns it into a
// preparation blob (`node --experimental-sea-config`), and postject injects the blob into a copy of the
// Node 24 binary of the `node` npm package (the one development runs on). The result runs with no Node
// on the user's PATH: the runtime is inside it.
//
// No code cache and no snapshot in the blob: both are V8 artefacts tied to the build machine's CPU
// features, and without them the blob is the script's bytes plus a fixed header (the same sources give
// the same blob).
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { inject } from 'postject';
import { ROOT } from '../bundle.ts';

/** The fuse Node's binary carries, flipped by postject when a blob is injected (Node's SEA docs). */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** The resource name Node looks the blob up by. */
export const SEA_RESOURCE = 'NODE_SEA_BLOB';
/** The Node binary that becomes the executable: linux-x64, the platform the `node` package installed. */
export const NODE_BINARY = join(ROOT, 'node_modules/node/bin/node');
/** The platforms the executable is built for (only the installed Node binary's). */
export const SEA_PLATFORMS = [{ os: 'linux', arch: 'amd64' }] as const;

/**
 * The plugin as one CommonJS script: kubectl-vws.ts's main() run on process.argv. Its own
 * `import.meta.main` guard does not exist in CommonJS, so the entry here calls main() itself.
 */
export async function bundlePluginCjs(): Promise<Buffer> {
  const r = await build({
    stdin: {
      contents: [
        "import { main } from '@vworkspace/operator/cli';",
        "const io = { out: (l) => process.stdout.write(l + '\\n'), err: (l) => process.stderr.write(l + '\\n') };",
        "process.on('SIGINT', () => process.exit(130));",
        'void main(process.argv.slice(2), io).then((code) => process.exit(code));',
      ].join('\n'),
      resolveDir: ROOT,
      sourcefile: 'kubectl-vws-sea.ts',
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    write: false,
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'error',
    define: { 'import.meta.main': 'false' },
  });
  const out = r.outputFiles[0];
  if (!out) throw new Error('esbuild wrote nothing');
  return Buffer.from(out.contents);
}

/** Node's SEA preparation blob for `script`, made by the Node binary the executable will be. */
export function seaBlob(script: Buffer, workDir: string): Buffer {
  const main = join(workDir, 'kubectl-vws.cjs');
  const blob = join(workDir, 'kubectl-vws.blob');
  const config = join(workDir, 'sea-config.json');
  writeFileSync(main, script);
  writeFileSync(
    config,
    JSON.stringify({
      main,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: false,
      useSnapshot: false,
    }),
  );
  const r = spawnSync(NODE_BINARY, ['--experimental-sea-config', config], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`node --experimental-sea-config failed:\n${r.stdout}${r.stderr}`);
  return readFileSync(blob);
}

/**
 * Writes the executable to `out`: a copy of the Node binary with the blob injected. postject (LIEF) warns
 * about the Node binary's unnamed note sections on stderr; the injection itself throws on failure.
 */
export async function writeSeaExecutable(blob: Buffer, out: string): Promise<void> {
  copyFileSync(NODE_BINARY, out);
  chmodSync(out, 0o755);
  const warn = console.warn;
  console.warn = () => {};
  try {
    await inject(out, SEA_RESOURCE, blob, { sentinelFuse: SEA_FUSE });
  } finally {
    console.warn = warn;
  }
}

/** bundlePluginCjs → seaBlob → writeSeaExecutable: `out` is the plugin as one executable. */
export async function buildPluginExecutable(out: string, workDir: string): Promise<void> {
  await writeSeaExecutable(seaBlob(await bundlePluginCjs(), workDir), out);
}
