// A TLS proxy between the operator process and the API server that records what the operator asked for
// and whether any response carried given byte strings ("needles", e.g. a Secret's data as the API server
// encodes it). What crosses this wire is what a compromised operator pod would have held in memory, so it
// is the observation for "the operator never reads that Secret": RBAC alone cannot show it, because a
// metadata-only watch needs the same verbs as a full one.
//
// Responses are streamed through unbuffered (watches stay watches) and asked for uncompressed, so the
// needles can be found in them; a needle split across two chunks is still found.
import { readFileSync } from 'node:fs';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { makeServingCert } from '../../../hack/lib/certs.ts';

export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  accept: string;
}

export interface NeedleHit {
  needle: string;
  url: string;
}

export class RecordingProxy {
  readonly requests: RecordedRequest[] = [];
  readonly hits: NeedleHit[] = [];
  readonly needles = new Set<string>();
  readonly url: string;
  /** CA file the operator's kubeconfig trusts for the proxy. */
  readonly caFile: string;
  readonly #server: Server;

  private constructor(server: Server, url: string, caFile: string) {
    this.#server = server;
    this.url = url;
    this.caFile = caFile;
  }

  /** Listens on 127.0.0.1 and forwards to `upstream` (trusting `upstreamCaFile`). */
  static async start(upstream: string, upstreamCaFile: string, certDir: string): Promise<RecordingProxy> {
    const cert = makeServingCert(certDir);
    const target = new URL(upstream);
    const upstreamCa = readFileSync(upstreamCaFile);
    let proxy: RecordingProxy | undefined;
    const server = createServer(
      { cert: readFileSync(join(certDir, 'tls.crt')), key: readFileSync(join(certDir, 'tls.key')) },
      (req, res) => {
        const p = proxy;
        if (!p) return;
        const url = req.url ?? '/';
        p.requests.push({ method: req.method ?? '', url, accept: String(req.headers.accept ?? '') });
        const { 'accept-encoding': _compressed, host: _host, ...headers } = req.headers;
        const up = httpsRequest(
          {
            host: target.hostname,
            port: target.port,
            path: url,
            method: req.method,
            headers: { ...headers, host: target.host },
            ca: upstreamCa,
          },
          (upRes) => {
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            let tail = '';
            upRes.on('data', (chunk: Buffer) => {
              const text = tail + chunk.toString('latin1');
              for (const needle of p.needles) {
                if (text.includes(needle) && !p.hits.some((h) => h.needle === needle && h.url === url))
                  p.hits.push({ needle, url });
              }
              const keep = Math.max(0, ...[...p.needles].map((n) => n.length - 1));
              tail = keep > 0 ? text.slice(-keep) : '';
              res.write(chunk);
            });
            upRes.on('end', () => res.end());
            upRes.on('error', () => res.destroy());
          },
        );
        up.on('error', () => res.destroy());
        res.on('close', () => up.destroy());
        req.pipe(up);
      },
    );
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    proxy = new RecordingProxy(
      server,
      `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
      cert.caFile,
    );
    return proxy;
  }

  /** Requests whose path is under `/api/v1/…secrets` (any namespace, list, watch or get). */
  secretRequests(): RecordedRequest[] {
    return this.requests.filter((r) => /\/secrets(\/|\?|$)/.test(r.url));
  }

  async stop(): Promise<void> {
    await new Promise<void>((ok) => {
      this.#server.close(() => ok());
      this.#server.closeAllConnections();
    });
  }
}
