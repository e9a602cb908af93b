// Runs the real helm CLI (bin/helm, built by hack/build-tools.sh) against a kubeconfig.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT } from './controlplane.ts';

const run = promisify(execFile);
export const TINY_CHART = join(ROOT, 'test/fixtures/charts/tiny');

/** The catalog entry of the tiny chart, as an ApplicationInstance's spec.appRef names it. */
export const TINY_APP_REF = {
  catalogId: 'tiny',
  chart: { sourceType: 'helm', url: 'https://charts.example.com/stable', name: 'tiny', version: '1.0.0' },
};

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

/**
 * An ApplicationInstance of a release of the tiny chart, as the demo and the e2e journeys create it.
 * `capabilities` (verb → engine, the `ops.vworkspace.io/<verb>` annotations) default to the chart's
 * own: Velero backups and Job RunCommands.
 */
export function tinyInstance(
  release: string,
  namespace: string,
  capabilities: Record<string, string> = { backup: 'velero', runcommand: 'job' },
): Record<string, unknown> {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: {
      name: release,
      annotations: Object.fromEntries(
        Object.entries(capabilities).map(([verb, engine]) => [`ops.vworkspace.io/${verb}`, engine]),
      ),
    },
    spec: {
      appRef: TINY_APP_REF,
      release: { name: release, namespace },
    },
  };
}
