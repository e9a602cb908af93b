// A real Kubernetes control plane (etcd + kube-apiserver, built by hack/build-tools.sh) on free
// loopback ports in a temp dir: used by the integration tests' global setup, by
// hack/local-cluster.ts for people, and by tests that must restart the API server.
//
// Every child runs under hack/lib/reaper.sh (hack/lib/process.ts), which kills it when this process
// disappears, so a crashed or SIGKILLed test run never leaves an etcd or API server behind.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { installCrds } from './crds.ts';
import { type Proc, startProcess, stopProcess, tailFile } from './process.ts';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin');

/** The admin identity: a static token in group system:masters. */
export const ADMIN_TOKEN = 'vworkspace-admin-token';

export interface ControlPlaneOptions {
  /** Directory for data, keys, logs and the kubeconfig (default: a new temp dir, removed on stop). */
  dir?: string;
  /** Install the project's CRDs (bundle/manifests) and the upstream CRDs (bin/crds). Default true. */
  crds?: boolean;
  /** Extra kube-apiserver flags, e.g. ['--audit-log-path=...']. */
  apiServerArgs?: string[];
  /** Keep the directory on stop (for debugging). Default: env VWS_KEEP_CLUSTER === '1'. */
  keep?: boolean;
  /**
   * The API server's bind and advertise address (default 127.0.0.1). A real node's pods reach the
   * `kubernetes` Service's endpoint, which cannot be a loopback address (hack/lib/real-node.ts).
   */
  address?: string;
}

export interface ControlPlane {
  dir: string;
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  etcdUrl: string;
  stop(): Promise<void>;
  /** Stops the API server and starts it again on the same port with the same data. */
  restartApiServer(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

function requireBinary(name: string): string {
  const path = join(BIN, name);
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: run \`make tools\` (hack/build-tools.sh core) to build it`);
  }
  return path;
}

/** GET an API server path with the admin token; resolves with the status code (0 on connection error). */
function probe(server: string, path: string): Promise<number> {
  return new Promise((ok) => {
    const req = request(
      `${server}${path}`,
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, rejectUnauthorized: false, timeout: 5000 },
      (res) => {
        res.resume();
        ok(res.statusCode ?? 0);
      },
    );
    req.on('error', () => ok(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  proc: Proc,
  logPath: string,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) {
      throw new Error(
        `${what} exited with code ${proc.child.exitCode}; last log lines:\n${tailFile(logPath)}`,
      );
    }
    if (await check()) return;
    await sleep(250);
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms; last log lines:\n${tailFile(logPath)}`);
}

export function kubeconfigYaml(server: string, caFile: string, token = ADMIN_TOKEN, user = 'admin'): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: vworkspace-local',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: vworkspace-local',
    '  context:',
    '    cluster: vworkspace-local',
    `    user: ${user}`,
    'current-context: vworkspace-local',
    '',
  ].join('\n');
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const etcdBin = requireBinary('etcd');
  const apiBin = requireBinary('kube-apiserver');
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'vws-cp-')));
  const keep = opts.keep ?? process.env.VWS_KEEP_CLUSTER === '1';
  await mkdir(join(dir, 'pki'), { recursive: true });

  // Service-account signing keys and the static admin token.
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saPub = join(dir, 'pki/sa.pub');
  const saKey = join(dir, 'pki/sa.key');
  await writeFile(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const tokens = join(dir, 'pki/tokens.csv');
  await writeFile(tokens, `${ADMIN_TOKEN},admin,admin,"system:masters"\n`, { mode: 0o600 });

  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcdLog = join(dir, 'etcd.log');
  const etcdArgs = [
    '--name=default',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    '--unsafe-no-fsync=true',
    // Argo's full Workflow CRD is larger than etcd's default 1.5 MiB request limit.
    '--max-request-bytes=16777216',
    '--quota-backend-bytes=4294967296',
    '--log-level=warn',
  ];
  let etcd: Proc | undefined = startProcess('etcd', etcdBin, etcdArgs, etcdLog);

  const address = opts.address ?? '127.0.0.1';
  const server = `https://${address}:${apiPort}`;
  const apiLog = join(dir, 'kube-apiserver.log');
  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--bind-address=${address}`,
    `--advertise-address=${address}`,
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, 'pki')}`,
    `--token-auth-file=${tokens}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${saPub}`,
    `--service-account-signing-key-file=${saKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    '--enable-priority-and-fairness=false',
    '--v=1',
    ...(opts.apiServerArgs ?? []),
  ];
  let api: Proc | undefined;
  const caFile = join(dir, 'pki/apiserver.crt');
  const kubeconfigPath = join(dir, 'kubeconfig');

  const startApi = async () => {
    api = startProcess('kube-apiserver', apiBin, apiArgs, apiLog);
    const proc = api;
    await waitFor(
      'kube-apiserver',
      async () => (await probe(server, '/readyz')) === 200,
      proc,
      apiLog,
      120_000,
    );
  };

  const stop = async () => {
    await stopProcess(api);
    await stopProcess(etcd);
    api = undefined;
    etcd = undefined;
    if (!keep && !opts.dir) await rm(dir, { recursive: true, force: true });
  };

  try {
    await waitFor(
      'etcd',
      async () => {
        try {
          const res = await fetch(`${etcdUrl}/health`);
          return res.ok;
        } catch {
          return false;
        }
      },
      etcd,
      etcdLog,
      60_000,
    );
    await startApi();
    await writeFile(kubeconfigPath, kubeconfigYaml(server, caFile), { mode: 0o600 });
    if (opts.crds ?? true) await installCrds(kubeconfigPath, defaultCrdFiles());
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    dir,
    kubeconfigPath,
    server,
    etcdUrl,
    stop,
    async restartApiServer() {
      await stopProcess(api);
      await startApi();
    },
  };
}

/** The project's generated CRDs plus the upstream CRDs fetched by hack/fetch-crds.sh. */
export function defaultCrdFiles(): string[] {
  const files: string[] = [];
  const own = join(ROOT, 'bundle/manifests');
  if (existsSync(own)) {
    for (const f of readdirSync(own).sort()) {
      if (/^[a-z0-9.-]+\.vworkspace\.io_[a-z]+\.yaml$/.test(f)) files.push(join(own, f));
    }
  }
  const upstream = join(BIN, 'crds');
  if (!existsSync(upstream)) {
    throw new Error(
      `${upstream} is missing: run \`make tools\` (hack/fetch-crds.sh) to fetch the upstream CRDs`,
    );
  }
  for (const f of readdirSync(upstream).sort()) if (f.endsWith('.yaml')) files.push(join(upstream, f));
  return files;
}
