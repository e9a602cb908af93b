import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { inClusterConfig, LiteKubeConfig, loadKubeConfig, parseKubeConfig } from './kubeconfig.ts';

const dirs: string[] = [];
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'vws-kubeconfig-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A kubeconfig document with one context; `cluster` and `user` are its entries' bodies. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, id = ''): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': `c${id}`,
    contexts: [
      { name: `other${id}`, context: { cluster: 'x', user: 'x' } },
      { name: `c${id}`, context: { cluster: `k${id}`, user: `u${id}` } },
    ],
    clusters: [{ name: `k${id}`, cluster }],
    users: [{ name: `u${id}`, user }],
  });
}

async function options(kc: {
  applyToHTTPSOptions(o: RequestOptions): Promise<void>;
}): Promise<RequestOptions> {
  const o: RequestOptions = {};
  await kc.applyToHTTPSOptions(o);
  return o;
}

describe('parseKubeConfig', () => {
  it('reads the current context: server, CA and client certificate from files relative to the kubeconfig', async () => {
    const d = dir();
    mkdirSync(join(d, 'pki'));
    writeFileSync(join(d, 'pki/ca.crt'), 'CA');
    writeFileSync(join(d, 'pki/client.crt'), 'CERT');
    writeFileSync(join(d, 'pki/client.key'), 'KEY');
    writeFileSync(
      join(d, 'config'),
      kubeconfig(
        { server: 'https://127.0.0.1:6443', 'certificate-authority': 'pki/ca.crt', 'tls-server-name': 'api' },
        { 'client-certificate': 'pki/client.crt', 'client-key': join(d, 'pki/client.key') },
      ),
    );
    const kc = parseKubeConfig(join(d, 'config'))!;
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://127.0.0.1:6443', skipTLSVerify: false });
    const o = await options(kc);
    expect([String(o.ca), String(o.cert), String(o.key), o.servername]).toEqual(['CA', 'CERT', 'KEY', 'api']);
    expect(o.headers).toBeUndefined();
  });

  it('reads inline data and a bearer token; insecure-skip-tls-verify turns verification off', async () => {
    const d = dir();
    writeFileSync(
      join(d, 'config'),
      kubeconfig(
        {
          server: 'https://k:6443',
          'certificate-authority-data': Buffer.from('CA').toString('base64'),
          'insecure-skip-tls-verify': true,
        },
        { token: 'secret-token' },
      ),
    );
    const o = await options(parseKubeConfig(join(d, 'config'))!);
    expect(String(o.ca)).toBe('CA');
    expect(o.rejectUnauthorized).toBe(false);
    expect(o.headers).toEqual({ Authorization: 'Bearer secret-token' });
  });

  it('leaves what it does not implement to client-node: exec plugins, proxies, basic auth, impersonation', () => {
    const d = dir();
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { server: 'https://k' },
        { exec: { command: 'get-token', apiVersion: 'client.authentication.k8s.io/v1' } },
      ],
      [{ server: 'https://k', 'proxy-url': 'http://proxy:3128' }, { token: 't' }],
      [{ server: 'https://k' }, { username: 'u', password: 'p' }],
      [{ server: 'https://k' }, { token: 't', as: 'someone-else' }],
      [{ server: 'https://k' }, { 'auth-provider': { name: 'oidc' } }],
    ];
    for (const [i, [cluster, user]] of cases.entries()) {
      writeFileSync(join(d, `config${i}`), kubeconfig(cluster, user));
      expect(parseKubeConfig(join(d, `config${i}`)), JSON.stringify(user)).toBeUndefined();
    }
  });
});

describe('LiteKubeConfig token files', () => {
  it('re-reads a token file once a minute (a rotated projected token is picked up)', async () => {
    const d = dir();
    writeFileSync(join(d, 'token'), 'one\n');
    let now = 1_000_000;
    const kc = new LiteKubeConfig({ server: 'https://k' }, { tokenFile: join(d, 'token') }, () => now);
    expect((await options(kc)).headers).toEqual({ Authorization: 'Bearer one' });
    writeFileSync(join(d, 'token'), 'two\n');
    now += 59_000;
    expect((await options(kc)).headers).toEqual({ Authorization: 'Bearer one' });
    now += 1_000;
    expect((await options(kc)).headers).toEqual({ Authorization: 'Bearer two' });
  });
});

describe('loadKubeConfig', () => {
  it('uses the in-cluster ServiceAccount without KUBECONFIG or ~/.kube/config', async () => {
    const sa = dir();
    writeFileSync(join(sa, 'token'), 'sa-token');
    writeFileSync(join(sa, 'ca.crt'), 'CLUSTER-CA');
    const kc = await loadKubeConfig(
      { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      dir(),
      sa,
    );
    expect(kc).toBeInstanceOf(LiteKubeConfig);
    expect(kc.getCurrentCluster()?.server).toBe('https://[fd00::1]:443');
    const o = await options(kc);
    expect([String(o.ca), o.headers]).toEqual(['CLUSTER-CA', { Authorization: 'Bearer sa-token' }]);
    expect(() => inClusterConfig({}, sa)).toThrow(/KUBERNETES_SERVICE_HOST/);
  });

  it('prefers KUBECONFIG, then ~/.kube/config; several files or other shapes go to client-node', async () => {
    const d = dir();
    writeFileSync(join(d, 'a'), kubeconfig({ server: 'https://a' }, { token: 'a' }));
    writeFileSync(join(d, 'b'), kubeconfig({ server: 'https://b' }, { token: 'b' }, 'b'));
    const home = dir();
    mkdirSync(join(home, '.kube'));
    writeFileSync(join(home, '.kube/config'), kubeconfig({ server: 'https://home' }, { token: 'h' }));
    const env = (KUBECONFIG?: string) => (KUBECONFIG ? { KUBECONFIG } : {});

    const fromEnv = await loadKubeConfig(env(join(d, 'a')), home);
    expect([fromEnv instanceof LiteKubeConfig, fromEnv.getCurrentCluster()?.server]).toEqual([
      true,
      'https://a',
    ]);
    const fromHome = await loadKubeConfig(env(), home);
    expect(fromHome.getCurrentCluster()?.server).toBe('https://home');
    // client-node merges several files (it reads KUBECONFIG itself).
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = `${join(d, 'b')}:${join(d, 'a')}`;
    try {
      const merged = await loadKubeConfig(env(process.env.KUBECONFIG), home);
      expect(merged).not.toBeInstanceOf(LiteKubeConfig);
      expect((merged as KubeConfig).clusters.map((c) => c.server).sort()).toEqual(['https://a', 'https://b']);
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });
});
