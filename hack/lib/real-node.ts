// One real node beside the kwok flavour (docs/real-node.md, ADR 0014): pods really run. A control plane
// (etcd, kube-apiserver, controller-manager, scheduler) plus containerd 2.x with runc, the kubelet,
// kube-proxy (iptables mode), a CNI bridge on a private pod range and CoreDNS as a pod, all built by
// hack/build-tools.sh node. Images come from a loopback registry (plain HTTP via hosts.toml), built by
// the project's own image tooling (hack/images/node-images.ts). Needs root.
//
// Every process runs under the reaper and names the node's work directory on its command line; a
// guard runs hack/lib/real-node-cleanup.sh on stop() or when this process dies first, which removes
// whatever the node left on the host (processes, pods, cgroups, mounts, links, iptables chains,
// sysctls, files). One real node per machine at a time (/run/vws-real-node.lock): ports 10250 and the
// iptables chains are the host's.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { RUNCOMMAND_IMAGES } from '@vworkspace/operator/packaging';
import { isNotFound, type KubeClient, PATCH_TYPES, RestClient } from '@vworkspace/runtime';
import { pushBuilt } from '../images/build.ts';
import { copyImage } from '../images/crane.ts';
import { nodeImages } from '../images/node-images.ts';
import { makeClientCert } from './certs.ts';
import { BIN, type ControlPlane, ROOT, startControlPlane } from './controlplane.ts';
import { failWaitsWhile } from './eventually.ts';
import { type FreeSpace, type NodeCondition, preflightProblem, pressureMessage } from './node-pressure.ts';
import { type Proc, running, startGuard, startProcess, stopProcess, tailFile } from './process.ts';
import {
  cniConflist,
  containerdConfig,
  corednsObjects,
  kubeletConfig,
  kubeProxyConfig,
  mirrorHostsToml,
  type NodeLayout,
  paths,
  registryHostsToml,
  SYSCTLS,
  splitImage,
} from './real-node-config.ts';
import { type Registry, startRegistry } from './registry.ts';

export const CLEANUP = join(ROOT, 'hack/lib/real-node-cleanup.sh');
export const LOCK = '/run/vws-real-node.lock';
export const NODE_NAME = 'vws-node';
export const NODE_IP = '10.250.250.1';
export const POD_CIDR = '10.244.0.0/24';
export const SERVICE_CIDR = '10.96.0.0/16';
export const DNS_IP = '10.96.0.10';
export const REGISTRY_NAMESPACE = 'vworkspace';
const BRIDGE = 'vws-br0';
const DOCKER_HUB = 'https://registry-1.docker.io';
/** The device plugin socket's directory (fixed in the kubelet) and libcni's result cache. */
const HOST_DIRS = ['/var/lib/kubelet', '/var/lib/cni'];

export interface RealNodeOptions {
  /** Install the project's and the upstream CRDs (as the integration control plane does). Default true. */
  crds?: boolean;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

export interface RealNode {
  workdir: string;
  kubeconfigPath: string;
  nodeName: string;
  nodeIp: string;
  controlPlane: ControlPlane;
  client: KubeClient;
  kc: KubeConfig;
  registry: Registry;
  /** `<registry>/vworkspace`: where images for this node go. */
  registryPrefix: string;
  /** The node's own images, by digest. */
  images: { pause: string; busybox: string; coredns: string; olmUtil: string };
  /** Host pids of the node's pods' processes (its cgroup tree) whose argv matches. */
  podProcesses(match: (argv: string[]) => boolean): number[];
  /** Why every wait on the node is in vain now (the kubelet reports pressure and evicts pods), if so. */
  pressure(): string | undefined;
  /** The last lines of every component's log, for failure reports. */
  logs(lines?: number): string;
  stop(): Promise<void>;
}

function need(name: string): string {
  const p = join(BIN, name);
  if (!existsSync(p)) throw new Error(`${p} is missing: run \`make tools\` (hack/build-tools.sh node)`);
  return p;
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Is a process alive that names `dir` on its command line (the holder of the lock)? */
function nodeAlive(dir: string): boolean {
  for (const pid of execFileSync('ls', ['/proc'], { encoding: 'utf8' }).split('\n')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

/** What of the node's host-wide state (its address on lo, its bridge) exists now; empty when none. */
function hostStateInUse(): string {
  const found: string[] = [];
  if (sh('ip', ['-o', 'addr', 'show', 'dev', 'lo']).includes(` ${NODE_IP}/`)) found.push(`${NODE_IP} on lo`);
  try {
    sh('ip', ['link', 'show', BRIDGE]);
    found.push(`link ${BRIDGE}`);
  } catch {
    // absent: as it should be
  }
  return found.join(', ');
}

/** Is process `pid` alive? */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the one-node lock: `<workdir>\n<pid>`, created exclusively, so two starters never both win. A
 * holder is live while its process lives or anything names its directory (its guard still cleaning up
 * after a killed run); a live holder is waited for, up to VWS_NODE_LOCK_WAIT seconds (default 1800:
 * several checkouts on one machine take turns); a stale holder's leftovers are cleaned first.
 */
async function takeLock(workdir: string, log: (l: string) => void): Promise<void> {
  const waitSeconds = Number(process.env.VWS_NODE_LOCK_WAIT ?? 1800);
  const deadline = Date.now() + waitSeconds * 1000;
  let said = 0;
  for (;;) {
    try {
      await writeFile(LOCK, `${workdir}\n${process.pid}\n`, { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let content = '';
    try {
      content = readFileSync(LOCK, 'utf8');
    } catch {
      continue; // released meanwhile
    }
    const [holder = '', pid = ''] = content.split('\n').map((l) => l.trim());
    if ((/^\d+$/.test(pid) && pidAlive(Number(pid))) || (holder && nodeAlive(holder))) {
      if (Date.now() > deadline)
        throw new Error(
          `another real node runs on this machine (${holder}) and did not stop within VWS_NODE_LOCK_WAIT=${waitSeconds} s; stop it first (one per machine)`,
        );
      if (Date.now() - said > 60_000) {
        log(`waiting for the real node ${holder} to stop (one per machine)`);
        said = Date.now();
      }
      await sleep(2000);
      continue;
    }
    if (holder && existsSync(holder)) {
      log(`cleaning up after a real node that did not stop (${holder})`);
      sh(CLEANUP, [holder]);
    }
    // The cleanup removes a lock naming its directory; an empty or dangling one goes here.
    try {
      if (readFileSync(LOCK, 'utf8') === content) rmSync(LOCK, { force: true });
    } catch {
      // released meanwhile
    }
  }
}

/**
 * The free space of the filesystem holding `path`. VWS_NODE_FREE_BYTES stands in for the free bytes
 * (tests only: it shows the pre-flight refusal and the pressure line without filling a disk).
 */
export function freeSpace(path: string): FreeSpace {
  const s = statfsSync(path);
  const fake = process.env.VWS_NODE_FREE_BYTES;
  if (fake !== undefined && !/^\d+$/.test(fake))
    throw new Error(
      `VWS_NODE_FREE_BYTES=${fake} is not a number of bytes; unset it, or give one (tests only)`,
    );
  return { path, freeBytes: fake ? Number(fake) : s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
}

/**
 * Polls the Node's conditions every few seconds; says at once when the kubelet reports pressure (and
 * when it stops), and makes every `eventually` wait give up with that line meanwhile.
 */
function watchPressure(client: KubeClient, dir: string, log: (l: string) => void) {
  let current: string | undefined;
  let busy = false;
  const unregister = failWaitsWhile(() => current);
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      const node = await client.request<{ status?: { conditions?: NodeCondition[] } }>({
        method: 'GET',
        path: `/api/v1/nodes/${NODE_NAME}`,
      });
      const message = pressureMessage(node.status?.conditions ?? [], freeSpace(dir));
      if (message !== current) log(message ?? 'the kubelet reports no pressure any more');
      current = message;
    } catch {
      // not registered yet, or the API server is stopping: the next poll tells
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void poll(), 3000);
  timer.unref();
  return {
    current: () => current,
    stop: () => {
      clearInterval(timer);
      unregister();
    },
  };
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  logs: () => string,
  failing: () => string | undefined = () => undefined,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    const failure = failing();
    if (failure) throw new Error(`gave up waiting for ${what}: ${failure}\n${logs()}`);
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs / 1000} s\n${logs()}`);
    await sleep(500);
  }
}

export async function apply(
  client: KubeClient,
  obj: Record<string, unknown>,
  fieldManager = 'vws-real-node',
) {
  const meta = obj.metadata as { name: string; namespace?: string };
  const [group, version] = String(obj.apiVersion).includes('/')
    ? String(obj.apiVersion).split('/')
    : ['', String(obj.apiVersion)];
  const plural = `${String(obj.kind).toLowerCase()}s`.replace(/ys$/, 'ies').replace(/sss$/, 'sses');
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const ns = meta.namespace ? `/namespaces/${meta.namespace}` : '';
  await client.request({
    method: 'PATCH',
    path: `${base}${ns}/${plural}/${meta.name}`,
    query: { fieldManager, force: true },
    contentType: PATCH_TYPES.apply,
    body: obj,
  });
}

export async function startRealNode(opts: RealNodeOptions = {}): Promise<RealNode> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`[real-node] ${l}\n`));
  if (process.getuid?.() !== 0)
    throw new Error('the real node needs root (containerd, runc, bridges, iptables); run as root');
  const bins = Object.fromEntries(
    [
      'containerd',
      'containerd-shim-runc-v2',
      'runc',
      'kubelet',
      'kube-proxy',
      'kube-controller-manager',
      'kube-scheduler',
      'iptables',
      'coredns',
      'pause',
      'busybox',
      'cpb',
      'crane',
      'registry',
    ].map((n) => [n, need(n)]),
  );
  for (const p of ['bridge', 'host-local', 'loopback', 'portmap']) need(`cni/${p}`);
  const short = preflightProblem(freeSpace('/tmp'));
  if (short) throw new Error(short);

  // The directory is made only once the lock is ours: a starter that dies while it waits leaves nothing.
  const workdir = `/tmp/vws-node-${randomBytes(6).toString('base64url').replace(/[-_]/g, 'x')}`;
  await takeLock(workdir, log);
  // The lock is ours, so the node's host-wide things must be absent. If they are not, something else
  // (a node started by an older checkout that misread the lock, or a leak) holds them: refuse, and do NOT
  // run the cleanup, which would tear them down under it.
  const held = hostStateInUse();
  if (held) {
    rmSync(LOCK, { force: true });
    throw new Error(
      `the real node's host state is already in use (${held}) although the node lock was free: another node runs without the lock, or one leaked; stop it, or run hack/lib/real-node-leaks.sh to find what is left`,
    );
  }
  await mkdir(workdir, { mode: 0o700 });
  const layout: NodeLayout = {
    dir: workdir,
    bin: BIN,
    // VWS_NODE_RUNC: another runc for the shim (debugging a runtime problem).
    runc: process.env.VWS_NODE_RUNC ?? join(BIN, 'runc'),
    nodeName: NODE_NAME,
    nodeIp: NODE_IP,
    podCidr: POD_CIDR,
    serviceCidr: SERVICE_CIDR,
    dnsIp: DNS_IP,
    bridge: BRIDGE,
    cgroupRoot: `vws-node-${workdir.slice(-6)}`,
    registryHost: '',
    sandboxImage: '',
  };
  const p = paths(layout);
  await writeFile(
    join(workdir, 'node.env'),
    [
      `NODE_BRIDGE=${BRIDGE}`,
      `NODE_IP=${NODE_IP}`,
      `CGROUP_ROOT=${layout.cgroupRoot}`,
      `BIN=${BIN}`,
      // Host paths the kubelet and libcni write to whatever they are told: removed after the node
      // when it created them.
      ...HOST_DIRS.map((d, i) => `HOST_DIR_${i}=${existsSync(d) ? '' : d}`),
      '',
    ].join('\n'),
  );
  const saved = SYSCTLS.filter((k) => existsSync(`/proc/sys/${k}`)).map(
    (k) => `${k} ${readFileSync(`/proc/sys/${k}`, 'utf8').trim()}`,
  );
  await writeFile(join(workdir, 'sysctl.saved'), `${saved.join('\n')}\n`);
  const guard = startGuard('real node cleanup', `"${CLEANUP}" "$NODE_DIR"`, join(workdir, 'cleanup.log'), {
    NODE_DIR: workdir,
  });
  const procs: Proc[] = [];
  let controlPlane: ControlPlane | undefined;
  let registry: Registry | undefined;
  let pressure: ReturnType<typeof watchPressure> | undefined;
  const env = { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ''}` };
  const logs = (lines = 30) =>
    [...(controlPlane ? [join(controlPlane.dir, 'kube-apiserver.log')] : []), ...procs.map((x) => x.logPath)]
      .map((f) => `--- ${f} ---\n${tailFile(f, lines)}`)
      .join('\n');
  const start = (name: string, args: string[]) => {
    const proc = startProcess(name, bins[name] ?? name, args, join(workdir, `${name}.log`), env);
    procs.push(proc);
    return proc;
  };
  const stop = async () => {
    pressure?.stop();
    // The kubelet and kube-proxy first, so nothing recreates what the cleanup removes.
    for (const name of ['kube-proxy', 'kubelet'])
      await stopProcess(
        procs.find((x) => x.name === name),
        5000,
      );
    await stopProcess(guard, 60_000);
    await Promise.all(procs.map((x) => stopProcess(x, 2000)));
    await controlPlane?.stop();
    await registry?.stop();
  };

  try {
    for (const [k, v] of [
      ['net/ipv4/ip_forward', '1'],
      ['net/bridge/bridge-nf-call-iptables', '1'],
    ] as const)
      await writeFile(`/proc/sys/${k}`, v);
    // The node's address lives on the loopback link (the kernel here has no dummy links, and the CNI
    // bridge plugin refuses a bridge with an address other than its gateway): local to the host, and
    // reached by pods through their gateway.
    sh('ip', ['addr', 'add', `${NODE_IP}/32`, 'dev', 'lo', 'label', 'lo:vws']);

    await mkdir(join(workdir, 'registry'));
    registry = await startRegistry({ name: 'node-registry', dir: join(workdir, 'registry') });
    const registryPrefix = `${registry.host}/${REGISTRY_NAMESPACE}`;
    log(`loopback registry ${registry.url}; building and pushing the node images ...`);
    const built = nodeImages(registryPrefix);
    for (const b of Object.values(built)) pushBuilt(b, workdir);
    // The RunCommand template's default allowlisted image names docker.io, which these machines cannot
    // reach: containerd mirrors docker.io to the loopback registry (hosts.toml below), where our
    // Debian busybox stands under that name.
    const mirrored = splitImage(RUNCOMMAND_IMAGES[0]);
    copyImage(built.busybox.ref, `${registry.host}/${mirrored.path}`);
    layout.registryHost = registry.host;
    layout.sandboxImage = `${built.pause.repo}:${built.pause.tag}`;

    log('control plane (etcd, kube-apiserver on the node address, controller-manager, scheduler) ...');
    const pki = join(workdir, 'kubelet-client');
    const kubeletClient = makeClientCert(pki, 'kube-apiserver-kubelet-client', 'system:masters');
    controlPlane = await startControlPlane({
      dir: join(workdir, 'cp'),
      address: NODE_IP,
      crds: opts.crds ?? true,
      keep: true,
      apiServerArgs: [
        `--kubelet-client-certificate=${kubeletClient.cert}`,
        `--kubelet-client-key=${kubeletClient.key}`,
        '--kubelet-preferred-address-types=InternalIP',
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
      ],
    });
    const cp = controlPlane;
    const kubeconfig = cp.kubeconfigPath;
    start('kube-controller-manager', [
      `--kubeconfig=${kubeconfig}`,
      `--service-account-private-key-file=${join(cp.dir, 'pki/sa.key')}`,
      `--root-ca-file=${join(cp.dir, 'pki/apiserver.crt')}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--use-service-account-credentials=false',
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);
    start('kube-scheduler', [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);

    log('containerd, kubelet, kube-proxy ...');
    for (const d of [
      p.registryHosts,
      p.cniConfDir,
      p.kubeletRoot,
      p.kubeletCerts,
      p.podLogs,
      join(workdir, 'containerd'),
    ])
      await mkdir(d, { recursive: true });
    await mkdir(join(p.registryHosts, registry.host), { recursive: true });
    await writeFile(join(p.registryHosts, registry.host, 'hosts.toml'), registryHostsToml(registry.host));
    await mkdir(join(p.registryHosts, mirrored.host), { recursive: true });
    await writeFile(
      join(p.registryHosts, mirrored.host, 'hosts.toml'),
      mirrorHostsToml(DOCKER_HUB, registry.host),
    );
    await writeFile(p.containerdConfig, containerdConfig(layout));
    await writeFile(join(p.cniConfDir, '10-vws-pods.conflist'), cniConflist(layout));
    await writeFile(p.resolvConf, readFileSync('/etc/resolv.conf'));
    const containerd = start('containerd', ['--config', p.containerdConfig, '--log-level', 'warn']);
    await waitUntil(
      'containerd socket',
      async () => running(containerd) && existsSync(p.containerdSocket),
      30_000,
      logs,
    );

    await createCgroupRoot(layout.cgroupRoot);
    await writeFile(p.kubeletConfig, kubeletConfig(layout, kubeletClient.ca));
    start('kubelet', [
      `--config=${p.kubeletConfig}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${p.kubeletRoot}`,
      `--cert-dir=${p.kubeletCerts}`,
      `--node-ip=${NODE_IP}`,
      `--hostname-override=${NODE_NAME}`,
      '--v=1',
    ]);
    await writeFile(p.kubeProxyConfig, kubeProxyConfig(layout, kubeconfig));
    start('kube-proxy', [`--config=${p.kubeProxyConfig}`, '--v=1']);

    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const client = new RestClient(kc, { qps: 0 }); // the harness's own client: unthrottled
    pressure = watchPressure(client, workdir, log);
    await waitUntil(
      `node ${NODE_NAME} Ready`,
      async () => {
        const node = await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
          method: 'GET',
          path: `/api/v1/nodes/${NODE_NAME}`,
        });
        return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      120_000,
      logs,
    );

    log(`node ${NODE_NAME} Ready; CoreDNS ...`);
    await waitUntil(
      'the kube-system/default ServiceAccount',
      async () =>
        !!(await client.request({
          method: 'GET',
          path: '/api/v1/namespaces/kube-system/serviceaccounts/default',
        })),
      60_000,
      logs,
    );
    for (const obj of corednsObjects(built.coredns.ref, DNS_IP)) await apply(client, obj);
    await waitUntil(
      'CoreDNS available',
      async () => {
        const d = await client.request<{ status?: { availableReplicas?: number } }>({
          method: 'GET',
          path: '/apis/apps/v1/namespaces/kube-system/deployments/coredns',
        });
        return (d.status?.availableReplicas ?? 0) >= 1;
      },
      180_000,
      logs,
      () => pressure?.current(),
    );
    log('CoreDNS available: the node is up');
    return {
      workdir,
      kubeconfigPath: kubeconfig,
      nodeName: NODE_NAME,
      nodeIp: NODE_IP,
      controlPlane: cp,
      client,
      kc,
      registry,
      registryPrefix,
      images: {
        pause: built.pause.ref,
        busybox: built.busybox.ref,
        coredns: built.coredns.ref,
        olmUtil: built.olmUtil.ref,
      },
      podProcesses: (match) => podProcesses(layout.cgroupRoot, match),
      pressure: pressure.current,
      logs,
      stop,
    };
  } catch (err) {
    const report = logs();
    await stop();
    throw new Error(
      `the real node failed to start: ${err instanceof Error ? err.message : String(err)}\n${report}`,
    );
  }
}

/**
 * The kubelet's cgroupRoot must exist in every hierarchy (cgroup v1: one per controller, and the named
 * systemd one); a new cpuset cgroup takes its parent's cpus and mems, or no task could join it.
 */
async function createCgroupRoot(root: string): Promise<void> {
  if (!existsSync('/sys/fs/cgroup/cpu')) {
    await mkdir(`/sys/fs/cgroup/${root}`, { recursive: true }); // cgroup v2: one unified tree
    return;
  }
  for (const h of readdirSync('/sys/fs/cgroup', { withFileTypes: true })) {
    if (!h.isDirectory() || h.name === 'unified') continue;
    await mkdir(`/sys/fs/cgroup/${h.name}/${root}`, { recursive: true });
  }
  for (const f of ['cpuset.cpus', 'cpuset.mems'])
    await writeFile(`/sys/fs/cgroup/cpuset/${root}/${f}`, readFileSync(`/sys/fs/cgroup/cpuset/${f}`));
}

/** Every pid in the `pids` cgroup tree under `root` whose argv matches (the pods' processes on the host). */
export function podProcesses(root: string, match: (argv: string[]) => boolean): number[] {
  const out: number[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        if (match(argv)) out.push(Number(pid));
      } catch {
        // exited meanwhile
      }
    }
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  // cgroup v1 (this machine): the pids hierarchy; v2: the unified one.
  walk(existsSync('/sys/fs/cgroup/pids') ? `/sys/fs/cgroup/pids/${root}` : `/sys/fs/cgroup/${root}`);
  return out;
}

/** Deletes a namespaced object; a missing one is fine. */
export async function deleteIfExists(client: KubeClient, path: string): Promise<void> {
  await client.request({ method: 'DELETE', path }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}
