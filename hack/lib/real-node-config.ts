// The real node's configuration files and in-cluster objects (hack/lib/real-node.ts). Pure: every
// path and address comes in, the text goes out; unit-tested in real-node-config.test.ts.
//
// Every path a component would default to on the host (/var/lib/containerd, /run/containerd,
// /opt/containerd, /etc/cni, /var/lib/kubelet, /var/log/pods, /var/lib/cni) is moved under the node's
// work directory, so its cleanup (real-node-cleanup.sh) has one place to look.
import { EVICTION_PERCENT } from './node-pressure.ts';

export interface NodeLayout {
  /** The node's work directory (unique per run: every process started for it names it). */
  dir: string;
  /** bin/ of the repository. */
  bin: string;
  /** The runc binary containerd's shim runs. */
  runc: string;
  nodeName: string;
  /** The node's address: a /32 on a dummy link; the API server and the kubelet listen on it. */
  nodeIp: string;
  /** The pods' range on this node (host-local IPAM); the bridge takes its first address. */
  podCidr: string;
  serviceCidr: string;
  /** The kube-dns Service's ClusterIP. */
  dnsIp: string;
  bridge: string;
  /** Parent of the kubelet's cgroup tree (cgroupRoot), removed whole by the cleanup. */
  cgroupRoot: string;
  /** `127.0.0.1:<port>` of the loopback registry containerd pulls from over plain HTTP. */
  registryHost: string;
  /** The sandbox image, e.g. `127.0.0.1:5000/vworkspace/pause:vws-1`. */
  sandboxImage: string;
}

export const paths = (l: NodeLayout) => ({
  containerdConfig: `${l.dir}/containerd/config.toml`,
  containerdSocket: `${l.dir}/containerd.sock`,
  containerdRoot: `${l.dir}/containerd/root`,
  containerdState: `${l.dir}/containerd/state`,
  registryHosts: `${l.dir}/containerd/certs.d`,
  runcRoot: `${l.dir}/runc`,
  cniConfDir: `${l.dir}/cni/net.d`,
  cniDataDir: `${l.dir}/cni/networks`,
  kubeletRoot: `${l.dir}/kubelet`,
  kubeletConfig: `${l.dir}/kubelet.yaml`,
  kubeletCerts: `${l.dir}/kubelet-pki`,
  podLogs: `${l.dir}/pod-logs`,
  kubeProxyConfig: `${l.dir}/kube-proxy.yaml`,
  resolvConf: `${l.dir}/resolv.conf`,
});

/** containerd 2.x (config version 3): the CRI plugins, runc via bin/runc, CNI from bin/cni. */
export function containerdConfig(l: NodeLayout): string {
  const p = paths(l);
  const q = JSON.stringify;
  return `version = 3
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
imports = []
# NRI listens on a host path; nothing here uses it.
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = ${q(p.containerdSocket)}

[ttrpc]
  address = ${q(`${p.containerdSocket}.ttrpc`)}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${l.dir}/containerd/opt`)}

[plugins."io.containerd.image-verifier.v1.bindir"]
  bin_dir = ${q(`${l.dir}/containerd/image-verifier`)}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${q(l.sandboxImage)}
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = ${q(p.registryHosts)}

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # Root here lacks CAP_SYS_RESOURCE (not even in its bounding set), so no process may lower its
  # oom_score_adj: the sandbox's -998 and a Guaranteed pod's -997 made runc init die ("nsexec: failed
  # to update /proc/self/oom_score_adj: Permission denied", reported as "can't get final child's PID
  # from pipe: EOF"). containerd clamps them to its own score instead.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ${q(l.runc)}
        Root = ${q(p.runcRoot)}
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [${q(`${l.bin}/cni`)}]
    conf_dir = ${q(p.cniConfDir)}
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

/** hosts.toml for the loopback registry: plain HTTP, pull and resolve. */
export function registryHostsToml(registryHost: string): string {
  return `server = "http://${registryHost}"

[host."http://${registryHost}"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`;
}

/**
 * hosts.toml that makes the loopback registry a pull mirror of `upstream` (docker.io here: unreachable
 * from these machines); containerd tries the mirror first.
 */
export function mirrorHostsToml(upstream: string, registryHost: string): string {
  return `server = "${upstream}"

[host."http://${registryHost}"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`;
}

/** `docker.io/library/busybox:1.37.0` → { host: 'docker.io', path: 'library/busybox:1.37.0' }. Pure. */
export function splitImage(ref: string): { host: string; path: string } {
  const slash = ref.indexOf('/');
  return { host: ref.slice(0, slash), path: ref.slice(slash + 1) };
}

/** The pod network: a bridge with the gateway and masquerade, host-local addresses, portmap. */
export function cniConflist(l: NodeLayout): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'vws-pods',
      plugins: [
        {
          type: 'bridge',
          bridge: l.bridge,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: l.podCidr }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: paths(l).cniDataDir,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true }, snat: true },
      ],
    },
    null,
    2,
  )}\n`;
}

/**
 * The kubelet's settings (KubeletConfiguration): cgroupfs driver under the node's own cgroupRoot,
 * cgroup v1 allowed (the pin refuses v1 by default), swap ignored, static CPU manager off, no
 * eviction on the shared disk, the API server authenticated by its client certificate and authorized
 * by SubjectAccessReview, every path under the work directory.
 */
export function kubeletConfig(l: NodeLayout, clientCaFile: string): string {
  const p = paths(l);
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${l.nodeIp}
port: 10250
readOnlyPort: 0
healthzPort: 0
containerRuntimeEndpoint: unix://${p.containerdSocket}
cgroupDriver: cgroupfs
cgroupRoot: /${l.cgroupRoot}
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
memorySwap: {}
cpuManagerPolicy: none
clusterDomain: cluster.local
clusterDNS: [${l.dnsIp}]
resolvConf: ${p.resolvConf}
podLogsDir: ${p.podLogs}
serializeImagePulls: false
registerNode: true
maxPods: 50
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: ${EVICTION_PERCENT}%
  imagefs.available: ${EVICTION_PERCENT}%
  nodefs.inodesFree: ${EVICTION_PERCENT}%
protectKernelDefaults: false
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${clientCaFile}
authorization:
  mode: Webhook
`;
}

/** kube-proxy in iptables mode; it leaves conntrack sysctls and localhost NodePorts alone. */
export function kubeProxyConfig(l: NodeLayout, kubeconfig: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: ${kubeconfig}
hostnameOverride: ${l.nodeName}
bindAddress: ${l.nodeIp}
clusterCIDR: ${l.podCidr}
detectLocalMode: ClusterCIDR
healthzBindAddress: ""
metricsBindAddress: ""
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  syncPeriod: 10s
`;
}

/** The sysctls the node's components write, restored by the cleanup (paths under /proc/sys). */
export const SYSCTLS = [
  'net/ipv4/ip_forward',
  'net/bridge/bridge-nf-call-iptables',
  'net/bridge/bridge-nf-call-ip6tables',
  'net/ipv4/conf/all/route_localnet',
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
] as const;

type Obj = Record<string, unknown>;

/** CoreDNS as a Deployment in kube-system: its RBAC, Corefile, Service kube-dns at `dnsIp`. */
export function corednsObjects(image: string, dnsIp: string): Obj[] {
  const ns = 'kube-system';
  const labels = { 'k8s-app': 'kube-dns' };
  const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
}
`;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: ns }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: ns },
      data: { Corefile: corefile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            dnsPolicy: 'Default',
            priorityClassName: 'system-cluster-critical',
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'coredns',
                image,
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: ns, labels },
      spec: {
        clusterIP: dnsIp,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ];
}
