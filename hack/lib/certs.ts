// A throw-away CA and a serving certificate for 127.0.0.1 (openssl CLI), for webhooks that the
// local API server calls by URL: used by tests and the demo. On a cluster, OLM issues these.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServingCert {
  dir: string;
  caFile: string;
  /** PEM of the CA, for a webhook configuration's caBundle (base64 it). */
  caPem: string;
}

/** Writes ca.crt, tls.crt and tls.key into `dir` (tls.* in the layout OLM mounts). */
export function makeServingCert(dir: string, host = '127.0.0.1', days = 2): ServingCert {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const ossl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ossl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-days',
    String(days),
    '-subj',
    '/CN=vworkspace-test-ca',
  ]);
  ossl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('tls.key.new'),
    '-out',
    f('tls.csr'),
    '-subj',
    `/CN=${host}`,
  ]);
  const san = /^[0-9.]+$/.test(host) ? `IP:${host}` : `DNS:${host}`;
  writeFileSync(f('ext.cnf'), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`);
  ossl([
    'x509',
    '-req',
    '-in',
    f('tls.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('tls.crt.new'),
    '-days',
    String(days),
    '-extfile',
    f('ext.cnf'),
  ]);
  // Write the pair last, key then cert, the way a rotation lands.
  writeFileSync(f('tls.key'), readFileSync(f('tls.key.new')), { mode: 0o600 });
  writeFileSync(f('tls.crt'), readFileSync(f('tls.crt.new')));
  return { dir, caFile: f('ca.crt'), caPem: readFileSync(f('ca.crt'), 'utf8') };
}
