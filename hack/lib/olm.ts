// OLM v0 on a cluster we started, without images: OLM's own CRDs (bin/crds/olm/, from the
// operator-framework/api module OLM's go.mod requires), the namespaces and OperatorGroups its Helm
// chart creates, and the `olm` and `catalog` operators (bin/olm, bin/catalog, built from the pinned
// OLM module by hack/build-tools.sh olm-operators) run as host processes with the cluster's
// kubeconfig, the way their Deployments run them in-cluster. Catalogs are served by `opm serve` on a
// loopback port behind a CatalogSource with `spec.address`: OLM dials it directly, no registry pod.
//
// Every process runs under the reaper (hack/lib/process.ts) and logs into the given work directory.
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlreadyExists, isNotFound, type KubeClient, PATCH_TYPES } from '@vworkspace/runtime';
import { BIN, freePort } from './controlplane.ts';
import { installCrds } from './crds.ts';
import { type Proc, running, startProcess, stopProcess, tailFile } from './process.ts';

/** The namespace of OLM's operators and of global CatalogSources (the chart's default). */
export const OLM_NAMESPACE = 'olm';
/** The chart's namespace for AllNamespaces operators, with the `global-operators` OperatorGroup. */
export const OPERATORS_NAMESPACE = 'operators';
export const GLOBAL_OPERATOR_GROUP = 'global-operators';
export const OLM_CRD_DIR = join(BIN, 'crds/olm');

export const OPERATORS_V1 = 'operators.coreos.com/v1';
export const OPERATORS_V1ALPHA1 = 'operators.coreos.com/v1alpha1';

function requireBin(name: string, how: string): string {
  const path = join(BIN, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`make tools\` (${how})`);
  return path;
}

export function olmCrdFiles(): string[] {
  if (!existsSync(OLM_CRD_DIR))
    throw new Error(`${OLM_CRD_DIR} is missing: run \`make tools\` (hack/fetch-crds.sh)`);
  return readdirSync(OLM_CRD_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(OLM_CRD_DIR, f));
}

/** Creates an object; an existing one is left as it is. */
export async function ensure(client: KubeClient, path: string, body: Record<string, unknown>): Promise<void> {
  await client.request({ method: 'POST', path, body }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
}

export interface Olm {
  procs: Proc[];
  /** The last lines of each OLM process's log, for failure reports. */
  logs(lines?: number): string;
  stop(): Promise<void>;
}

/**
 * Installs OLM's CRDs and chart objects on the cluster of `kubeconfigPath` and starts the olm and
 * catalog operators. Resolves once the olm operator has processed the global OperatorGroup (its
 * status lists the namespaces it targets), i.e. OLM is running and watching.
 */
export async function startOlm(
  kubeconfigPath: string,
  client: KubeClient,
  workdir: string,
  /**
   * catalogArgs: more flags for the catalog operator (a real node: --util-image, --opmImage).
   * resolvConf: a resolv.conf naming the cluster's DNS, which the catalog operator (a host process)
   * sees as /etc/resolv.conf in a mount namespace of its own: it dials a CatalogSource pod by its
   * Service's name (`<name>.<ns>.svc`), which only the cluster's DNS resolves (a real node).
   */
  opts: { timeoutMs?: number; catalogArgs?: string[]; resolvConf?: string } = {},
): Promise<Olm> {
  const olmBin = requireBin('olm', 'hack/build-tools.sh olm-operators');
  const catalogBin = requireBin('catalog', 'hack/build-tools.sh olm-operators');
  await installCrds(kubeconfigPath, olmCrdFiles());
  for (const name of [OLM_NAMESPACE, OPERATORS_NAMESPACE])
    await ensure(client, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const groups = '/apis/operators.coreos.com/v1';
  // The chart's objects (deploy/chart/templates 03-olmconfig, 13-operatorgroup-default).
  await ensure(client, `${groups}/olmconfigs`, {
    apiVersion: OPERATORS_V1,
    kind: 'OLMConfig',
    metadata: { name: 'cluster' },
  });
  await ensure(client, `${groups}/namespaces/${OPERATORS_NAMESPACE}/operatorgroups`, {
    apiVersion: OPERATORS_V1,
    kind: 'OperatorGroup',
    metadata: { name: GLOBAL_OPERATOR_GROUP, namespace: OPERATORS_NAMESPACE },
  });
  await ensure(client, `${groups}/namespaces/${OLM_NAMESPACE}/operatorgroups`, {
    apiVersion: OPERATORS_V1,
    kind: 'OperatorGroup',
    metadata: { name: 'olm-operators', namespace: OLM_NAMESPACE },
    spec: { targetNamespaces: [OLM_NAMESPACE] },
  });

  // As in the chart's Deployments. Both serve health and metrics on the fixed :8080; the one that
  // loses the bind logs it and runs on (nothing here reads those endpoints).
  const env = {
    ...process.env,
    KUBECONFIG: kubeconfigPath,
    OPERATOR_NAMESPACE: OLM_NAMESPACE,
    OPERATOR_NAME: 'olm-operator',
  };
  const procs = [
    startProcess('olm', olmBin, ['--namespace', OLM_NAMESPACE], join(workdir, 'olm.log'), env),
    startProcess(
      'catalog',
      ...withResolvConf(opts.resolvConf, catalogBin, [
        '--namespace',
        OLM_NAMESPACE,
        '--kubeconfig',
        kubeconfigPath,
        '--set-workload-user-id=false',
        ...(opts.catalogArgs ?? []),
      ]),
      join(workdir, 'catalog.log'),
      env,
    ),
  ];
  const olm: Olm = {
    procs,
    logs: (lines = 40) => procs.map((p) => `--- ${p.logPath} ---\n${tailFile(p.logPath, lines)}`).join('\n'),
    async stop() {
      await Promise.all(procs.map((p) => stopProcess(p)));
    },
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    const dead = procs.find((p) => !running(p));
    if (dead) {
      await olm.stop();
      throw new Error(`OLM's ${dead.name} operator exited:\n${olm.logs()}`);
    }
    const og = await client
      .request<{ status?: { namespaces?: string[] } }>({
        method: 'GET',
        path: `${groups}/namespaces/${OPERATORS_NAMESPACE}/operatorgroups/${GLOBAL_OPERATOR_GROUP}`,
      })
      .catch(() => undefined);
    if (og?.status?.namespaces) return olm;
    if (Date.now() > deadline) {
      await olm.stop();
      throw new Error(`OLM did not process the ${GLOBAL_OPERATOR_GROUP} OperatorGroup:\n${olm.logs()}`);
    }
    await sleep(500);
  }
}

/**
 * `bin args` run in a private mount namespace (unshare's default propagation: private, so the host
 * never sees the mount) where `resolvConf` is bind-mounted over /etc/resolv.conf.
 */
export function withResolvConf(
  resolvConf: string | undefined,
  bin: string,
  args: string[],
): [string, string[]] {
  if (!resolvConf) return [bin, args];
  const script = 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"';
  return ['unshare', ['--mount', 'sh', '-c', script, 'sh', resolvConf, bin, ...args]];
}

export interface OpmServer {
  dir: string;
  port: number;
  /** `127.0.0.1:<port>`, for a CatalogSource's spec.address. */
  address: string;
  proc: Proc;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      ok(true);
    });
    s.on('error', () => ok(false));
  });
}

/** `opm serve DIR` on a free loopback port; resolves once it accepts connections. */
export async function serveCatalog(dir: string, logPath: string, timeoutMs = 120_000): Promise<OpmServer> {
  const opm = requireBin('opm', 'hack/build-tools.sh olm');
  const port = await freePort();
  // No pprof endpoint: its fixed default port (6060) would keep a second server from starting.
  const proc = startProcess(
    'opm serve',
    opm,
    ['serve', dir, '--port', String(port), '--pprof-addr='],
    logPath,
  );
  const server: OpmServer = {
    dir,
    port,
    address: `127.0.0.1:${port}`,
    proc,
    stop: () => stopProcess(proc),
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await accepts(port))) {
    if (!running(proc)) throw new Error(`opm serve ${dir} exited:\n${tailFile(logPath)}`);
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`opm serve ${dir} not listening after ${timeoutMs} ms:\n${tailFile(logPath)}`);
    }
    await sleep(250);
  }
  return server;
}

export const catalogSourcePath = (namespace: string, name?: string) =>
  `/apis/operators.coreos.com/v1alpha1/namespaces/${namespace}/catalogsources${name ? `/${name}` : ''}`;

export interface CatalogSourceStatus {
  connectionState?: { address?: string; lastObservedState?: string };
}

/** Creates or re-points a grpc CatalogSource at `address` (host:port). */
export async function applyCatalogSource(
  client: KubeClient,
  name: string,
  address: string,
  namespace = OLM_NAMESPACE,
): Promise<void> {
  await client.request({
    method: 'PATCH',
    path: catalogSourcePath(namespace, name),
    query: { fieldManager: 'vworkspace-e2e', force: true },
    contentType: PATCH_TYPES.apply,
    body: {
      apiVersion: OPERATORS_V1ALPHA1,
      kind: 'CatalogSource',
      metadata: { name, namespace },
      spec: { sourceType: 'grpc', address, displayName: name, publisher: 'vworkspace e2e' },
    },
  });
}

/** Waits until OLM reports the CatalogSource connected (READY) to `address`. */
export async function waitCatalogSourceReady(
  client: KubeClient,
  name: string,
  address: string,
  timeoutMs = 120_000,
  namespace = OLM_NAMESPACE,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: CatalogSourceStatus | undefined;
  for (;;) {
    const cs = await client
      .request<{ status?: CatalogSourceStatus }>({ method: 'GET', path: catalogSourcePath(namespace, name) })
      .catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
    last = cs?.status;
    const c = last?.connectionState;
    if (c?.address === address && c.lastObservedState === 'READY') return;
    if (Date.now() > deadline)
      throw new Error(`CatalogSource ${namespace}/${name} not READY at ${address}: ${JSON.stringify(last)}`);
    await sleep(500);
  }
}
