// A Helm release record that inflates far beyond its size (a decompression bomb): the JSON of a release
// whose one string field is `inflatedMiB` MiB of one letter, gzipped at the highest level, encoded as
// Helm's secrets driver writes data.release (base64 of the gzip; the Secret's data adds its own base64).
// About 1/1000 of the inflated size: 450 MiB fits a Secret of about 600 KiB.
import { once } from 'node:events';
import { createGzip } from 'node:zlib';

const MIB = 1024 * 1024;

/** The Secret's `data.release` value (already base64 for the API): streamed, never held inflated. */
export async function releaseBomb(release: string, namespace: string, inflatedMiB: number): Promise<string> {
  const gz = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gz.on('data', (c: Buffer) => out.push(c));
  const head = JSON.stringify({ name: release, namespace, version: 1, info: { status: 'deployed' } });
  gz.write(`${head.slice(0, -1)},"manifest":"`);
  const chunk = Buffer.alloc(MIB, 'a');
  for (let i = 0; i < inflatedMiB; i++) if (!gz.write(chunk)) await once(gz, 'drain');
  gz.end('"}');
  await once(gz, 'end');
  return Buffer.from(Buffer.concat(out).toString('base64')).toString('base64');
}

/** The release Secret carrying `data` (from releaseBomb), labelled as Helm labels revision 1. */
export function releaseSecret(release: string, data: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'helm.sh/release.v1',
    metadata: {
      name: `sh.helm.release.v1.${release}.v1`,
      labels: { owner: 'helm', name: release, version: '1', status: 'deployed' },
    },
    data: { release: data },
  };
}
