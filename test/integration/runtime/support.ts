// Helpers for the runtime's integration tests: polling, a TCP proxy that can cut the operator off
// from the API server (a network partition), and kubeconfigs pointing through it.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '@vworkspace/runtime';

export { eventually } from '../../support/eventually.ts';

export function loadKubeConfig(path: string, server?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  if (server) {
    // Same CA, token and TLS name check (the proxy listens on 127.0.0.1 too), different address.
    const clusters = kc.clusters.map((c) => ({ ...c, server }));
    kc.loadFromOptions({
      clusters,
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
  }
  return kc;
}

export function randomName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function createNamespace(client: RestClient, prefix = 'rt'): Promise<string> {
  const name = randomName(prefix);
  await client.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } });
  return name;
}

export interface TcpProxy {
  /** https://127.0.0.1:<port> */
  server: string;
  /** Connections accepted so far (a keep-alive client opens few). */
  readonly accepted: number;
  /** Drops every connection and refuses new ones until heal(). */
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

/** A TCP proxy to `target` (host:port); TLS passes through untouched. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const url = new URL(target);
  const sockets = new Set<Socket>();
  let open = true;
  let accepted = 0;
  const srv = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    accepted++;
    const upstream = connect(Number(url.port), url.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    server: `https://127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    heal() {
      open = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

/** The test's own client: unthrottled (qps 0), so setting up a thousand objects is not paced at 20/s. */
export function restClient(kubeconfigPath: string, server?: string): RestClient {
  return new RestClient(loadKubeConfig(kubeconfigPath, server), { qps: 0 });
}

export function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}
