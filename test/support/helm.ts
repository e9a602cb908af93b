// Runs the real helm CLI (bin/helm, built by hack/build-tools.sh) against a kubeconfig.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT } from '../../hack/lib/controlplane.ts';

const run = promisify(execFile);
export const TINY_CHART = join(ROOT, 'test/fixtures/charts/tiny');

export async function helm(kubeconfig: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = join(BIN, 'helm');
  if (!existsSync(bin))
    throw new Error(`${bin} is missing: run \`make tools\` (hack/build-tools.sh cluster)`);
  // A private HELM_* home per call keeps the machine's helm config out of the tests.
  const home = join(ROOT, 'bin/.helm-home');
  return run(bin, ['--kubeconfig', kubeconfig, ...args], {
    env: {
      ...process.env,
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
    },
  });
}
