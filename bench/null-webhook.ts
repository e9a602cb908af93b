// The physical floor of an admission webhook, for the admission scenario: an HTTPS server on the same
// TLS settings and the same Node HTTP server as the operator's (admission/server.ts), that parses each
// AdmissionReview (it must echo the request's uid) and answers "allowed" at once, with no check and no
// API call. Registered under the operator's own two webhook configurations, the difference between it
// and the operator is what the operator's checks cost beyond dispatch (issue 26 item 2).
//
// With PATCH_FILE it is the second baseline: its answers on one webhook path (the operator's mutating
// webhook of Operations) carry a fixed JSON patch, the one the operator answers the bench's Operation
// with, read back once through the API server (bench/lib/admission-patch.ts). The API server then
// decodes and applies a patch of the same shape and size with either pair, and the difference left
// is what the operator's checks add beyond dispatch and the patch. The patch is encoded once at start,
// so answering costs it no more than without one.
//
//   node bench/null-webhook.ts CERT_DIR [PATCH_FILE]   prints `listening PORT` once serving; stops on SIGTERM
//   GET /stats: {path: {count, seconds}}, each request timed from its arrival to its answer written, as
//   the operator's server times its own (its webhook latency histogram)
//   PATCH_FILE: JSON {"path": "/mutate-operation", "patch": [JSON patch operations]}
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { KEEP_ALIVE_TIMEOUT_MS } from '@vworkspace/operator';
import { type NullPatch, nullAnswerer, STATS_PATH } from './lib/admission-patch.ts';

const [certDir, patchFile] = process.argv.slice(2);
if (!certDir) {
  process.stderr.write(
    'usage: node bench/null-webhook.ts CERT_DIR (holding tls.crt and tls.key) [PATCH_FILE]\n',
  );
  process.exit(2);
}
const answer = nullAnswerer(
  patchFile ? (JSON.parse(readFileSync(patchFile, 'utf8')) as NullPatch) : undefined,
);

/** Requests answered and seconds spent, by path, from the request to its answer written: GET STATS_PATH. */
const served = new Map<string, { count: number; seconds: number }>();

const server = createServer(
  {
    cert: readFileSync(join(certDir, 'tls.crt')),
    key: readFileSync(join(certDir, 'tls.key')),
    minVersion: 'TLSv1.2',
  },
  (req, res) => {
    const started = process.hrtime.bigint();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === STATS_PATH) {
      const payload = Buffer.from(JSON.stringify(Object.fromEntries(served)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': payload.length });
      res.end(payload);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let uid = '';
      try {
        uid =
          (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } }).request
            ?.uid ?? '';
      } catch {
        // An unparsable review gets an answer without a uid, which the API server rejects: visible.
      }
      const payload = Buffer.from(JSON.stringify(answer(uid, req.url)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': payload.length });
      res.end(payload);
      // Timed as the operator's server times its requests (admission/server.ts `observe`).
      const seen = served.get(path) ?? { count: 0, seconds: 0 };
      seen.count++;
      seen.seconds += Number(process.hrtime.bigint() - started) / 1e9;
      served.set(path, seen);
    });
  },
);

// As the operator's server (admission/server.ts): idle connections outlive the API server's 90 s.
server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
