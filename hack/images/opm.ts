// opm commands that pull images (`opm render <image>`). opm pulls with containers/image, which refuses
// to run without a signature policy (policy.json in ~/.config/containers or /etc/containers, neither
// present on these machines); this gives it a private HOME whose policy accepts any image: the images
// are named and checked by digest. Plain-HTTP registries (the loopback ones) need --use-http.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../bundle.ts';
import { type FbcBlob, parseFbc } from '../packaging/fbc.ts';
import { runTool, type ToolRun } from '../packaging/tools.ts';
import { isLoopback } from './crane.ts';

export const ACCEPT_ANYTHING_POLICY = { default: [{ type: 'insecureAcceptAnything' }] };

export function opmPull(args: readonly string[]): ToolRun {
  const home = mkdtempSync(join(tmpdir(), 'vws-opm-home-'));
  try {
    mkdirSync(join(home, '.config/containers'), { recursive: true });
    writeFileSync(join(home, '.config/containers/policy.json'), JSON.stringify(ACCEPT_ANYTHING_POLICY));
    return runTool(ROOT, 'opm', args, { HOME: home, XDG_CONFIG_HOME: join(home, '.config') });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** `opm render <image>` from a registry: the image's catalog or bundle as file-based catalog blobs. */
export function renderImage(ref: string, opts: { useHttp?: boolean } = {}): FbcBlob[] {
  const useHttp = opts.useHttp ?? isLoopback(ref);
  const r = opmPull(['render', ...(useHttp ? ['--use-http'] : []), ref, '--output', 'yaml']);
  if (r.code !== 0) throw new Error(`opm render ${ref} failed:\n${r.stderr.trim()}`);
  return parseFbc(r.stdout);
}
