// operator-sdk bundle validate, two ways:
//  - as the community pipeline runs it (check_osdk_bundle_validate_*): one selector, the Kubernetes
//    version of the newest OpenShift release the bundle targets, the JSON report's outputs only;
//  - every optional validator operator-sdk has (`--list-optional`), multiarch included, against images
//    that exist: the multiarch validator runs `<container-tool> pull IMAGE` and `<container-tool>
//    manifest inspect IMAGE` for every image the CSV names and reads the platforms of the index. There is
//    no docker or podman here, so `docker` is a small script over crane doing exactly those two things
//    (crane's `manifest` prints the registry's bytes, which is what `docker manifest inspect` shows for an
//    index), optionally reading a release registry's references from the loopback registry they were
//    pushed to (same digests), as a registry mirror would.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../bundle.ts';
import { type Finding, runTool, sdkFindings, toolPath } from '../packaging/tools.ts';
import type { SdkRunner } from './checks.ts';

export const pipelineSdk: SdkRunner = (bundleDir, selector, k8sVersion) => {
  const r = runTool(ROOT, 'operator-sdk', [
    'bundle',
    'validate',
    '-o',
    'json-alpha1',
    bundleDir,
    '--select-optional',
    selector,
    `--optional-values=k8s-version=${k8sVersion}`,
  ]);
  const start = r.stdout.indexOf('{');
  try {
    const report = JSON.parse(r.stdout.slice(start)) as {
      outputs?: { type: string; message: string }[] | null;
    };
    return report.outputs ?? [];
  } catch {
    return undefined;
  }
};

/**
 * The validators `operator-sdk bundle validate --list-optional` lists, by their `name=` label (each
 * row's labels come in map order, so `name=` is not always on the row's first line).
 */
export function optionalValidators(): string[] {
  const r = runTool(ROOT, 'operator-sdk', ['bundle', 'validate', '--list-optional']);
  if (r.code !== 0) throw new Error(`operator-sdk bundle validate --list-optional: ${r.stderr}`);
  return validatorNames(r.stdout);
}

export function validatorNames(listOptional: string): string[] {
  return [...listOptional.matchAll(/\bname=(\S+)/g)].map((m) => m[1]!);
}

/** `docker pull` / `docker manifest inspect` over crane; VWS_MIRROR_FROM/TO rename a registry. */
export function dockerShim(crane: string): string {
  return `#!/usr/bin/env bash
# docker, as much of it as operator-sdk's multiarch validator runs (hack/community/sdk.ts).
set -euo pipefail
ref=\${*: -1}
if [[ -n "\${VWS_MIRROR_FROM:-}" && "$ref" == "$VWS_MIRROR_FROM/"* ]]; then ref="$VWS_MIRROR_TO/\${ref#"$VWS_MIRROR_FROM/"}"; fi
case "$1 \${2:-}" in
  "pull "*) exec ${crane} digest "$ref" >/dev/null ;;
  "manifest inspect") exec ${crane} manifest "$ref" ;;
  *) echo "docker (hack/community/sdk.ts) only does pull and manifest inspect, not: $*" >&2; exit 2 ;;
esac
`;
}

export interface FullValidation {
  validators: string[];
  findings: Finding[];
}

/**
 * Every optional validator on `bundleDir`, failing on any warning or error (the report's outputs and
 * any warning logged). `mirror` reads references of `from` at `to`.
 */
export function validateAllOptional(
  bundleDir: string,
  opts: { k8sVersion: string; indexPath: string; mirror?: { from: string; to: string } },
): FullValidation {
  const validators = optionalValidators();
  const bin = mkdtempSync(join(tmpdir(), 'vws-docker-shim-'));
  try {
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'docker'), dockerShim(toolPath(ROOT, 'crane')));
    chmodSync(join(bin, 'docker'), 0o755);
    const r = runTool(
      ROOT,
      'operator-sdk',
      [
        'bundle',
        'validate',
        bundleDir,
        '-o',
        'json-alpha1',
        '--select-optional',
        `name in (${validators.join(',')})`,
        `--optional-values=k8s-version=${opts.k8sVersion}`,
        '--optional-values=container-tools=docker',
        `--optional-values=index-path=${opts.indexPath}`,
      ],
      {
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        ...(opts.mirror ? { VWS_MIRROR_FROM: opts.mirror.from, VWS_MIRROR_TO: opts.mirror.to } : {}),
      },
    );
    // logrus info lines name each validator run; the findings are warnings and errors only.
    return { validators, findings: sdkFindings(r) };
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}
