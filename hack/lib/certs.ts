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

const ossl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A throw-away CA (ca.crt, ca.key) in `dir` and a key pair it signs: `<name>.key.new`, `<name>.crt.new`. */
function issue(dir: string, name: string, subject: string, extensions: string, days: number): void {
  const f = (n: string) => join(dir, n);
  ossl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt')].concat([
      '-days',
      String(days),
      '-subj',
      '/CN=vworkspace-test-ca',
    ]),
  );
  ossl(
    [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      f(`${name}.key.new`),
      '-out',
      f(`${name}.csr`),
    ].concat(['-subj', subject]),
  );
  writeFileSync(f(`${name}.ext.cnf`), extensions);
  ossl(
    [
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
    ].concat(['-out', f(`${name}.crt.new`), '-days', String(days), '-extfile', f(`${name}.ext.cnf`)]),
  );
}

/** Writes ca.crt, tls.crt and tls.key into `dir` (tls.* in the layout OLM mounts). */
export function makeServingCert(dir: string, host = '127.0.0.1', days = 2): ServingCert {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const san = /^[0-9.]+$/.test(host) ? `IP:${host}` : `DNS:${host}`;
  issue(dir, 'tls', `/CN=${host}`, `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`, days);
  // Write the pair last, key then cert, the way a rotation lands.
  writeFileSync(f('tls.key'), readFileSync(f('tls.key.new')), { mode: 0o600 });
  writeFileSync(f('tls.crt'), readFileSync(f('tls.crt.new')));
  return { dir, caFile: f('ca.crt'), caPem: readFileSync(f('ca.crt'), 'utf8') };
}

/** A CA (ca.crt) and a client certificate it signs (client.crt, client.key) for `/O=<org>/CN=<cn>`. */
export function makeClientCert(dir: string, cn: string, org: string, days = 2) {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  issue(dir, 'client', `/O=${org}/CN=${cn}`, 'extendedKeyUsage=clientAuth\n', days);
  writeFileSync(f('client.key'), readFileSync(f('client.key.new')), { mode: 0o600 });
  writeFileSync(f('client.crt'), readFileSync(f('client.crt.new')));
  return { ca: f('ca.crt'), cert: f('client.crt'), key: f('client.key') };
}
