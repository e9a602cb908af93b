// HTTP endpoints: /metrics (default port 8080) and /healthz, /readyz (default port 8081), like
// controller-runtime's metrics and health-probe servers. Readiness is a set of named checks
// (the manager registers "every informer has synced"); a failing check answers 500 and lists
// which one failed, so `kubectl describe pod` shows why.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A check's verdict, with a short detail shown by `?verbose` (e.g. the event loop's delay). */
export interface CheckResult {
  ok: boolean;
  detail?: string;
}

export type Check = () => boolean | CheckResult | Promise<boolean | CheckResult>;

export interface HttpServerHandle {
  /** The port actually bound (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

async function listen(server: Server, port: number, host: string): Promise<HttpServerHandle> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections (Prometheus, kubelet) would hold close() open.
        server.closeAllConnections();
      }),
  };
}

export function startMetricsServer(
  registry: Registry,
  port = 8080,
  host = '0.0.0.0',
): Promise<HttpServerHandle> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404).end('not found\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(`${String(err)}\n`),
    );
  });
  return listen(server, port, host);
}

export class ProbeChecks {
  readonly #health = new Map<string, Check>();
  readonly #ready = new Map<string, Check>();

  addHealthCheck(name: string, check: Check): void {
    this.#health.set(name, check);
  }

  addReadyCheck(name: string, check: Check): void {
    this.#ready.set(name, check);
  }

  healthz(): Promise<CheckReport> {
    return run(this.#health);
  }

  readyz(): Promise<CheckReport> {
    return run(this.#ready);
  }
}

export interface CheckReport {
  ok: boolean;
  /** Per check, in registration order. */
  results: { name: string; ok: boolean; detail?: string }[];
}

async function run(checks: Map<string, Check>): Promise<CheckReport> {
  const results = await Promise.all(
    [...checks].map(async ([name, check]) => {
      try {
        const r = await check();
        return typeof r === 'boolean' ? { name, ok: r } : { name, ...r };
      } catch {
        return { name, ok: false };
      }
    }),
  );
  return { ok: results.every((r) => r.ok), results };
}

/** Body in the API server's `?verbose` style: `[+]name ok` / `[-]name failed`. */
function render(report: CheckReport, verbose: boolean): string {
  const lines = report.results
    .filter((r) => verbose || !r.ok)
    .map((r) => `${r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed`}${r.detail ? `: ${r.detail}` : ''}`);
  lines.push(report.ok ? 'ok' : 'check failed');
  return `${lines.join('\n')}\n`;
}

export function startProbeServer(
  checks: ProbeChecks,
  port = 8081,
  host = '0.0.0.0',
): Promise<HttpServerHandle> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://probe');
    const which =
      url.pathname === '/healthz'
        ? checks.healthz()
        : url.pathname === '/readyz'
          ? checks.readyz()
          : undefined;
    if (req.method !== 'GET' || !which) {
      res.writeHead(404).end('not found\n');
      return;
    }
    which.then((report) =>
      res
        .writeHead(report.ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8' })
        .end(render(report, url.searchParams.has('verbose'))),
    );
  });
  return listen(server, port, host);
}
