import { describe, expect, it } from 'vitest';
import {
  cniConflist,
  containerdConfig,
  corednsObjects,
  kubeletConfig,
  kubeProxyConfig,
  mirrorHostsToml,
  type NodeLayout,
  paths,
  splitImage,
} from './real-node-config.ts';

const layout: NodeLayout = {
  dir: '/tmp/vws-node-abc',
  bin: '/repo/bin',
  runc: '/repo/bin/runc',
  nodeName: 'vws-node',
  nodeIp: '10.250.250.1',
  podCidr: '10.244.0.0/24',
  serviceCidr: '10.96.0.0/16',
  dnsIp: '10.96.0.10',
  bridge: 'vws-br0',
  cgroupRoot: 'vws-node-abc',
  registryHost: '127.0.0.1:5000',
  sandboxImage: '127.0.0.1:5000/vworkspace/pause:vws-1',
};

describe('real node configuration', () => {
  it('puts every containerd path under the node directory (the cleanup looks nowhere else)', () => {
    const toml = containerdConfig(layout);
    const quoted = [...toml.matchAll(/"(\/[^"]*)"/g)].map((m) => m[1] ?? '');
    expect(quoted.length).toBeGreaterThan(5);
    for (const p of quoted) expect(p.startsWith(layout.dir) || p.startsWith(layout.bin), p).toBe(true);
    expect(toml).toContain('netns_mounts_under_state_dir = true');
    expect(toml).toContain(`sandbox = "${layout.sandboxImage}"`);
    expect(toml).toContain('SystemdCgroup = false');
    // No CAP_SYS_RESOURCE here: no negative oom_score_adj for sandboxes and Guaranteed pods.
    expect(toml).toContain('restrict_oom_score_adj = true');
  });

  it('the kubelet: cgroupfs under its own root, cgroup v1 allowed, swap ignored, no static CPU', () => {
    const yaml = kubeletConfig(layout, '/ca.crt');
    for (const line of [
      'cgroupDriver: cgroupfs',
      'cgroupRoot: /vws-node-abc',
      'failCgroupV1: false',
      'failSwapOn: false',
      'cpuManagerPolicy: none',
      `containerRuntimeEndpoint: unix://${paths(layout).containerdSocket}`,
      'clusterDNS: [10.96.0.10]',
      'mode: Webhook',
      `podLogsDir: ${layout.dir}/pod-logs`,
    ])
      expect(yaml).toContain(line);
    expect(yaml).toMatch(/anonymous:\n\s+enabled: false/);
  });

  it('kube-proxy in iptables mode on the pod range, leaving conntrack sysctls alone', () => {
    const yaml = kubeProxyConfig(layout, '/kubeconfig');
    expect(yaml).toContain('mode: iptables');
    expect(yaml).toContain('clusterCIDR: 10.244.0.0/24');
    expect(yaml).toMatch(/conntrack:\n\s+maxPerCore: 0\n\s+min: 0/);
  });

  it('the pod network: a bridge gateway with masquerade, host-local addresses under the node directory', () => {
    const conf = JSON.parse(cniConflist(layout)) as { plugins: Record<string, unknown>[] };
    expect(conf.plugins.map((p) => p.type)).toEqual(['bridge', 'portmap']);
    expect(conf.plugins[0]).toMatchObject({
      bridge: 'vws-br0',
      isGateway: true,
      ipMasq: true,
      ipam: {
        type: 'host-local',
        ranges: [[{ subnet: '10.244.0.0/24' }]],
        dataDir: `${layout.dir}/cni/networks`,
      },
    });
  });

  it('mirrors an unreachable registry to the loopback one over plain HTTP', () => {
    expect(splitImage('docker.io/library/busybox:1.37.0')).toEqual({
      host: 'docker.io',
      path: 'library/busybox:1.37.0',
    });
    const toml = mirrorHostsToml('https://registry-1.docker.io', '127.0.0.1:5000');
    expect(toml).toContain('[host."http://127.0.0.1:5000"]');
    expect(toml).toContain('capabilities = ["pull", "resolve"]');
  });

  it('CoreDNS: the kube-dns Service at the DNS address, non-root on 1053', () => {
    const objs = corednsObjects('reg/coredns@sha256:x', '10.96.0.10');
    const svc = objs.find((o) => o.kind === 'Service') as {
      spec: { clusterIP: string; ports: { targetPort: number }[] };
    };
    expect(svc.spec.clusterIP).toBe('10.96.0.10');
    expect(svc.spec.ports.every((p) => p.targetPort === 1053)).toBe(true);
    expect(JSON.stringify(objs.find((o) => o.kind === 'Deployment'))).toContain('"runAsNonRoot":true');
  });
});
