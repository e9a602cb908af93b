// The physical floor of an admission webhook, for the admission scenario: an HTTPS server on the same
// TLS settings and the same Node HTTP server as the operator's (admission/server.ts), that parses each
// AdmissionReview (it must echo the request's uid) and answers "allowed" at once, with no check, no
// patch and no API call. Registered under the operator's own two webhook configurations, the difference
// between it and the operator is what the operator's checks cost beyond dispatch (issue 26 item 2).
//
//   node bench/null-webhook.ts CERT_DIR    prints `listening PORT` once serving; stops on SIGTERM
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { KEEP_ALIVE_TIMEOUT_MS } from '@vworkspace/operator';

const certDir = process.argv[2];
if (!certDir) {
  process.stderr.write('usage: node bench/null-webhook.ts CERT_DIR (holding tls.crt and tls.key)\n');
  process.exit(2);
}

const server = createServer(
  {
    cert: readFileSync(join(certDir, 'tls.crt')),
    key: readFileSync(join(certDir, 'tls.key')),
    minVersion: 'TLSv1.2',
  },
  (req, res) => {
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
      const payload = Buffer.from(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid, allowed: true },
        }),
      );
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': payload.length });
      res.end(payload);
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
