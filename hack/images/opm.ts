// opm render, of a bundle directory or of images. opm pulls with containers/image, which refuses
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
/**
 * OpenShift 4.17+ catalogs may not carry olm.bundle.object (the bundle's manifests, base64); this
 * migration replaces them with one olm.csv.metadata property, and OLM unpacks the bundle image instead.
 */
export const MIGRATE_LEVEL = 'bundle-object-to-csv-metadata';

/**
 * `opm render DIR -o yaml` of a bundle directory. Without `image` the olm.bundle's image is empty and
 * the manifests are embedded (the kwok e2e serves that: OLM then needs no unpack Job); with it, the
 * image is filled in, as rendering the pushed image gives; `migrate` applies MIGRATE_LEVEL.
 */
export function renderBundleDir(dir: string, opts: { image?: string; migrate?: boolean } = {}): string {
  const args = ['render', dir, '--output', 'yaml'];
  if (opts.image) args.push('--alpha-image-ref-template', opts.image);
  if (opts.migrate) args.push('--migrate-level', MIGRATE_LEVEL);
  const r = runTool(ROOT, 'opm', args);
  if (r.code !== 0) throw new Error(`opm render ${dir} failed:\n${r.stderr}`);
  return r.stdout;
}

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
export function renderImage(ref: string, opts: { useHttp?: boolean; migrate?: boolean } = {}): FbcBlob[] {
  const useHttp = opts.useHttp ?? isLoopback(ref);
  const r = opmPull([
    'render',
    ...(useHttp ? ['--use-http'] : []),
    ...(opts.migrate ? ['--migrate-level', MIGRATE_LEVEL] : []),
    ref,
    '--output',
    'yaml',
  ]);
  if (r.code !== 0) throw new Error(`opm render ${ref} failed:\n${r.stderr.trim()}`);
  return parseFbc(r.stdout);
}

/**
 * `opm alpha render-template basic` of a template file: opm pulls every bundle image it names (from a
 * loopback registry over plain HTTP when `useHttp`) and renders the file-based catalog, migrated.
 */
export function renderTemplateFile(path: string, opts: { useHttp?: boolean } = {}): string {
  const r = opmPull([
    'alpha',
    'render-template',
    'basic',
    path,
    ...(opts.useHttp ? ['--use-http'] : []),
    '--migrate-level',
    MIGRATE_LEVEL,
    '--output',
    'yaml',
  ]);
  if (r.code !== 0) throw new Error(`opm alpha render-template basic ${path} failed:\n${r.stderr.trim()}`);
  return r.stdout;
}
