// bin/crane (go-containerregistry, built by hack/build-tools.sh images): the only thing that talks to
// registries. Loopback registries (127.0.0.1, localhost) are plain HTTP, which crane already assumes
// for them; `insecure` adds --insecure for other plain-HTTP registries. Credentials are crane's own
// (~/.docker/config.json, `crane auth login`).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../bundle.ts';
import { runTool } from '../packaging/tools.ts';

export interface CraneOptions {
  insecure?: boolean;
}

export function crane(args: readonly string[], opts: CraneOptions = {}): string {
  const full = [...args, ...(opts.insecure ? ['--insecure'] : [])];
  const r = runTool(ROOT, 'crane', full);
  if (r.code !== 0) throw new Error(`crane ${full.join(' ')} failed (exit ${r.code}):\n${r.stderr.trim()}`);
  return r.stdout;
}

/** Pushes an OCI image layout to `ref` (a tag); returns the pushed `repo@sha256:…` reference. */
export function pushLayout(layoutDir: string, ref: string, opts: CraneOptions = {}): string {
  const tmp = mkdtempSync(join(tmpdir(), 'vws-crane-'));
  try {
    const refs = join(tmp, 'refs');
    crane(['push', layoutDir, ref, '--image-refs', refs], opts);
    const pushed = readFileSync(refs, 'utf8').trim().split('\n')[0] ?? '';
    if (!pushed.includes('@sha256:')) throw new Error(`crane push ${ref} reported ${JSON.stringify(pushed)}`);
    return pushed;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** `crane copy`: manifest and blobs byte for byte, so the digest stays the same. */
export function copyImage(src: string, dst: string, opts: CraneOptions = {}): void {
  crane(['copy', src, dst], opts);
}

export function digestOf(ref: string, opts: CraneOptions = {}): string {
  return crane(['digest', ref], opts).trim();
}

export function manifestOf(ref: string, opts: CraneOptions = {}): Record<string, unknown> {
  return JSON.parse(crane(['manifest', ref], opts)) as Record<string, unknown>;
}

export interface ConfigFile {
  architecture?: string;
  os?: string;
  created?: string;
  config?: {
    User?: string;
    Env?: string[];
    Entrypoint?: string[];
    Cmd?: string[];
    WorkingDir?: string;
    Labels?: Record<string, string>;
    ExposedPorts?: Record<string, unknown>;
  };
  rootfs?: { diff_ids?: string[] };
}

export function configOf(ref: string, opts: CraneOptions = {}): ConfigFile {
  return JSON.parse(crane(['config', ref], opts)) as ConfigFile;
}

/** The image's flattened filesystem as a tar file (`crane export`). */
export function exportImage(ref: string, tarPath: string, opts: CraneOptions = {}): void {
  crane(['export', ref, tarPath], opts);
}

/** Whether the registry has `ref` (a digest reference): `crane manifest` answers. */
export function exists(ref: string, opts: CraneOptions = {}): boolean {
  try {
    crane(['manifest', ref], opts);
    return true;
  } catch {
    return false;
  }
}

/** Loopback registries speak plain HTTP. */
export function isLoopback(registryOrRef: string): boolean {
  return /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(\/|$)/.test(registryOrRef);
}
