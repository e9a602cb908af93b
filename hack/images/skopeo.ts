// bin/skopeo (Debian's package, unpacked by hack/build-tools.sh images): the mirror copy as
// docs/disconnected.md tells a user to run it. skopeo cannot push to a digest reference, so the copy
// goes to a tag `mirror-<first 12 hex of the digest>` (which also keeps the registry's garbage
// collection off the manifest) and the digest is then checked in the mirror.
import { createHash } from 'node:crypto';
import { ROOT } from '../bundle.ts';
import { runTool } from '../packaging/tools.ts';
import { isLoopback } from './crane.ts';
import { type ImageRef, parseRef, repoName } from './mirror.ts';

export interface SkopeoOptions {
  /** Plain HTTP for every registry; loopback registries (127.0.0.1, localhost) always are. */
  insecure?: boolean;
}

function skopeo(args: readonly string[]): string {
  // --insecure-policy: no /etc/containers/policy.json on these machines. Trust here is the digest:
  // every copy is by digest and checked in the mirror afterwards; signatures are the cluster's policy.
  const full = ['--insecure-policy', ...args];
  const r = runTool(ROOT, 'skopeo', full);
  if (r.code !== 0) throw new Error(`skopeo ${full.join(' ')} failed (exit ${r.code}):\n${r.stderr.trim()}`);
  return r.stdout;
}

const tlsFlag = (flag: string, r: ImageRef, opts: SkopeoOptions) =>
  opts.insecure || isLoopback(r.registry) ? [`${flag}=false`] : [];

/** The tag a digest is pushed under: `repo:mirror-<12 hex>`. */
export function mirrorTag(target: string): string {
  const ref = parseRef(target);
  if (!ref.digest) throw new Error(`${target} is not a digest reference`);
  return `${repoName(ref)}:mirror-${ref.digest.slice('sha256:'.length, 'sha256:'.length + 12)}`;
}

/** The digest of the manifest `ref` names, computed from its raw bytes (`skopeo inspect --raw`). */
export function skopeoDigest(ref: string, opts: SkopeoOptions = {}): string {
  const raw = skopeo([
    'inspect',
    '--raw',
    ...tlsFlag('--tls-verify', parseRef(ref), opts),
    `docker://${ref}`,
  ]);
  return `sha256:${createHash('sha256').update(raw, 'utf8').digest('hex')}`;
}

/**
 * `skopeo copy --all --preserve-digests` from `source` (by digest) to the tag of `target` (by digest),
 * then checks that the tag resolves to that digest in the mirror.
 */
export function skopeoCopy(source: string, target: string, opts: SkopeoOptions = {}): void {
  const tagged = mirrorTag(target);
  skopeo([
    'copy',
    '--all',
    '--preserve-digests',
    ...tlsFlag('--src-tls-verify', parseRef(source), opts),
    ...tlsFlag('--dest-tls-verify', parseRef(tagged), opts),
    `docker://${source}`,
    `docker://${tagged}`,
  ]);
  const got = skopeoDigest(tagged, opts);
  const want = parseRef(target).digest;
  if (got !== want) throw new Error(`${tagged} has digest ${got} in the mirror, not ${want}`);
}
