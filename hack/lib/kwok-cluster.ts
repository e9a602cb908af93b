// A kwok cluster on the binary runtime with the locally built binaries (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok): a real control plane whose controllers run Jobs
// while kwok plays the kubelet (pods become Running, Job pods complete with exit 0). Used where a
// test or the demo needs Job completion, and by the e2e tests (OLM). Nothing is downloaded.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN } from './controlplane.ts';
import { installCrds } from './crds.ts';
import { startGuard, stopProcess } from './process.ts';

const run = promisify(execFile);

export interface KwokCluster {
  name: string;
  kubeconfigPath: string;
  workdir: string;
  stop(): Promise<void>;
}

export interface KwokOptions {
  name?: string;
  nodes?: number;
  /** CRD files to install once the cluster is ready. */
  crdFiles?: string[];
  keep?: boolean;
  /** Extra kube-apiserver flags, name → value (e.g. `{ 'enable-aggregator-routing': 'true' }`). */
  apiServerArgs?: Record<string, string>;
  /**
   * The first node's pod CIDR (node i gets the i-th range after it; kwok assigns pod IPs from them;
   * default 10.0.0.0/24). With the range routed to this machine (hack/lib/loopback-route.ts), a host
   * process can serve what the API server sends to a pod (e2e: webhooks called through their Service
   * with --enable-aggregator-routing).
   */
  podCidr?: string;
}

/** The kwokctl configuration: etcd's request limit (below Argo's full Workflow CRD by default). Pure. */
export function kwokctlConfig(apiServerArgs: Record<string, string> = {}): string {
  const args = (pairs: [string, string][]) =>
    pairs.map(([key, value]) => `  - key: ${key}\n    value: ${JSON.stringify(value)}\n`).join('');
  const api = Object.entries(apiServerArgs);
  return `kind: KwokctlConfiguration
apiVersion: config.kwok.x-k8s.io/v1alpha1
componentsPatches:
- name: etcd
  extraArgs:
${args([['max-request-bytes', '16777216']])}${api.length ? `- name: kube-apiserver\n  extraArgs:\n${args(api)}` : ''}`;
}

function bin(name: string): string {
  const p = join(BIN, name);
  if (!existsSync(p)) throw new Error(`${p} is missing: run \`make tools\` (hack/build-tools.sh cluster)`);
  return p;
}

export async function startKwokCluster(opts: KwokOptions = {}): Promise<KwokCluster> {
  const name = opts.name ?? `vws-${process.pid}-${Date.now().toString(36)}`;
  // Fail with the make target to run before anything is created (a missing binary used to surface
  // as an unrelated error thrown from the cleanup path).
  const kwokctlBin = bin('kwokctl');
  for (const tool of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'])
    bin(tool);
  const workdir = await mkdtemp(join(tmpdir(), 'vws-kwok-'));
  const kubeconfigPath = join(workdir, 'kubeconfig');
  const configPath = join(workdir, 'kwokctl.yaml');
  await writeFile(configPath, kwokctlConfig(opts.apiServerArgs));
  const env = { ...process.env, KWOK_WORKDIR: workdir };
  const kwokctl = (args: string[]) => run(kwokctlBin, args, { env, maxBuffer: 16 * 1024 * 1024 });

  // kwokctl starts the cluster's processes on its own, outside the reaper: a guard deletes the cluster
  // if this process dies before stop(), and its work directory unless it is to be kept (a killed
  // `make bench` left them behind).
  const keep = opts.keep ?? process.env.VWS_KEEP_CLUSTER === '1';
  const guard = startGuard(
    'kwok cluster guard',
    `"$KWOKCTL" delete cluster --name "$KWOK_CLUSTER"${keep ? '' : '; rm -rf "$KWOK_WORKDIR"'}`,
    join(workdir, 'guard.log'),
    {
      KWOKCTL: kwokctlBin,
      KWOK_CLUSTER: name,
      KWOK_WORKDIR: workdir,
    },
  );
  const stop = async () => {
    await kwokctl(['delete', 'cluster', '--name', name]).catch(() => undefined);
    await stopProcess(guard);
    if (!keep) await rm(workdir, { recursive: true, force: true });
  };
  try {
    await kwokctl([
      'create',
      'cluster',
      '--name',
      name,
      '--runtime',
      'binary',
      '--config',
      configPath,
      '--kubeconfig',
      kubeconfigPath,
      '--etcd-binary',
      bin('etcd'),
      '--kube-apiserver-binary',
      bin('kube-apiserver'),
      '--kube-controller-manager-binary',
      bin('kube-controller-manager'),
      '--kube-scheduler-binary',
      bin('kube-scheduler'),
      '--kwok-controller-binary',
      bin('kwok'),
      '--wait',
      '120s',
    ]);
    await kwokctl([
      'scale',
      'node',
      '--replicas',
      String(opts.nodes ?? 1),
      '--name',
      name,
      ...(opts.podCidr ? ['--param', `.podCIDRs=${JSON.stringify([opts.podCidr])}`] : []),
    ]);
    if (opts.crdFiles?.length) await installCrds(kubeconfigPath, opts.crdFiles);
  } catch (err) {
    await stop();
    const e = err as { stderr?: string; message?: string };
    throw new Error(
      `kwok cluster ${name} failed to start: ${e.message ?? String(err)}\n${(e.stderr ?? '').slice(-3000)}`,
    );
  }
  return { name, kubeconfigPath, workdir, stop };
}
