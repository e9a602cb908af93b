import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  decodeReleaseHooks,
  decodeReleaseSecret,
  HELM_RELEASE_SECRET_TYPE,
  latestRelease,
  MAX_RELEASE_RECORD_BYTES,
  readyFromRelease,
  type SecretLike,
} from './helm-release.ts';

// Builds a release Secret the way Helm's secrets driver writes it: the record is JSON, gzipped,
// base64-encoded, and stored as Secret data (which base64-encodes it once more).
function releaseSecret(
  release: string,
  revision: number,
  status: string,
  opts: {
    gzip?: boolean;
    chartVersion?: string;
    annotations?: Record<string, string>;
    ns?: string;
    hooks?: unknown;
  } = {},
): SecretLike {
  const record = {
    name: release,
    namespace: opts.ns ?? 'apps',
    version: revision,
    info: { status, description: 'test' },
    chart: {
      metadata: {
        name: 'tiny',
        version: opts.chartVersion ?? '1.2.3',
        appVersion: '4.5.6',
        annotations: opts.annotations ?? {},
      },
    },
    ...(opts.hooks === undefined ? {} : { hooks: opts.hooks }),
  };
  const json = Buffer.from(JSON.stringify(record));
  const helmEncoded = ((opts.gzip ?? true) ? gzipSync(json) : json).toString('base64');
  return {
    metadata: {
      name: `sh.helm.release.v1.${release}.v${revision}`,
      namespace: opts.ns ?? 'apps',
      labels: { owner: 'helm', name: release, version: String(revision), status },
    },
    type: HELM_RELEASE_SECRET_TYPE,
    data: { release: Buffer.from(helmEncoded).toString('base64') },
  };
}

describe('decodeReleaseSecret', () => {
  it('decodes a gzipped record', () => {
    const r = decodeReleaseSecret(
      releaseSecret('web', 3, 'deployed', { annotations: { 'ops.vworkspace.io/backup': 'velero' } }),
    );
    expect(r).toMatchObject({
      name: 'web',
      revision: 3,
      status: 'deployed',
      chartVersion: '1.2.3',
      appVersion: '4.5.6',
    });
    expect(r.chartAnnotations).toEqual({ 'ops.vworkspace.io/backup': 'velero' });
  });

  it('decodes an uncompressed record (older Helm versions)', () => {
    expect(decodeReleaseSecret(releaseSecret('web', 1, 'failed', { gzip: false })).status).toBe('failed');
  });

  it('says which Secret is broken instead of throwing a parser error', () => {
    const bad: SecretLike = {
      ...releaseSecret('web', 1, 'deployed'),
      data: { release: Buffer.from('bm90IGpzb24=').toString('base64') },
    };
    expect(() => decodeReleaseSecret(bad)).toThrow(
      'apps/sh.helm.release.v1.web.v1 does not hold a JSON release record',
    );
    expect(() =>
      decodeReleaseSecret({ metadata: { name: 'x', namespace: 'n' }, type: HELM_RELEASE_SECRET_TYPE }),
    ).toThrow('has no data.release');
  });
});

describe('decodeReleaseHooks', () => {
  it("returns the record's hooks as Helm stored them: rendered manifest, events, weight, delete policies", () => {
    const manifest = 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: web-migrate\n';
    const hooks = decodeReleaseHooks(
      releaseSecret('web', 2, 'deployed', {
        hooks: [
          {
            name: 'web-migrate',
            kind: 'Job',
            path: 'tiny/templates/migration.yaml',
            manifest,
            events: ['pre-upgrade'],
            last_run: { started_at: '', completed_at: '', phase: '' },
            weight: -1,
            delete_policies: ['before-hook-creation', 'hook-succeeded'],
          },
          { name: 'sa', kind: 'ServiceAccount', events: ['pre-install'] },
          'garbage',
        ],
      }),
    );
    expect(hooks).toEqual([
      {
        name: 'web-migrate',
        kind: 'Job',
        path: 'tiny/templates/migration.yaml',
        manifest,
        events: ['pre-upgrade'],
        weight: -1,
        deletePolicies: ['before-hook-creation', 'hook-succeeded'],
      },
      {
        name: 'sa',
        kind: 'ServiceAccount',
        path: '',
        manifest: '',
        events: ['pre-install'],
        weight: 0,
        deletePolicies: [],
      },
    ]);
  });

  it('a record without hooks has none; a broken record says which Secret', () => {
    expect(decodeReleaseHooks(releaseSecret('web', 1, 'deployed'))).toEqual([]);
    const broken = releaseSecret('web', 1, 'deployed');
    broken.data = {};
    expect(() => decodeReleaseHooks(broken)).toThrow(
      'Helm release Secret apps/sh.helm.release.v1.web.v1 has no data.release',
    );
  });
});

describe('latestRelease', () => {
  it('picks the highest revision of the named release only', async () => {
    const secrets = [
      releaseSecret('web', 1, 'superseded'),
      releaseSecret('web', 10, 'deployed', { chartVersion: '2.0.0' }),
      releaseSecret('web', 9, 'superseded'),
      releaseSecret('other', 99, 'failed'),
      { metadata: { name: 'token', labels: { name: 'web', owner: 'helm', version: '100' } }, type: 'Opaque' },
    ];
    const { record, problems } = await latestRelease(secrets, 'web');
    expect(problems).toEqual([]);
    expect(record).toMatchObject({ revision: 10, chartVersion: '2.0.0' }); // numeric, not lexical, order
  });

  it('falls back to the previous revision when the newest record is unreadable, and reports it', async () => {
    const broken = { ...releaseSecret('web', 3, 'deployed'), data: {} };
    const { record, problems } = await latestRelease([releaseSecret('web', 2, 'deployed'), broken], 'web');
    expect(record?.revision).toBe(2);
    expect(problems).toHaveLength(1);
  });

  it('returns nothing when the release has no record', async () => {
    expect((await latestRelease([releaseSecret('other', 1, 'deployed')], 'web')).record).toBeUndefined();
  });

  it('reads metadata-only candidates through `read`, newest first, skipping records that are gone', async () => {
    const full = [releaseSecret('web', 1, 'deployed'), releaseSecret('web', 3, 'deployed')];
    const metas = [...full, releaseSecret('web', 4, 'deployed')].map(({ metadata }) => ({ metadata }));
    const asked: string[] = [];
    const { record } = await latestRelease(metas, 'web', (m) => {
      asked.push(m.metadata?.name ?? '');
      const secret = full.find((f) => f.metadata?.name === m.metadata?.name);
      return secret && decodeReleaseSecret(secret);
    });
    expect(record?.revision).toBe(3);
    expect(asked).toEqual(['sh.helm.release.v1.web.v4', 'sh.helm.release.v1.web.v3']);
  });

  it('refuses to decode a Secret of another type', () => {
    expect(() => decodeReleaseSecret({ ...releaseSecret('web', 1, 'deployed'), type: 'Opaque' })).toThrow(
      /not a Helm release record/,
    );
  });
});

describe('readyFromRelease', () => {
  const rec = (status: string) => decodeReleaseSecret(releaseSecret('web', 4, status));
  it.each([
    ['deployed', 'True', 'ReleaseDeployed'],
    ['failed', 'False', 'ReleaseFailed'],
    ['pending-install', 'False', 'ReleasePending'],
    ['pending-upgrade', 'False', 'ReleasePending'],
    ['pending-rollback', 'False', 'ReleasePending'],
    ['uninstalling', 'False', 'ReleasePending'],
    ['uninstalled', 'False', 'ReleaseNotFound'],
  ])('maps %s to Ready=%s/%s', (status, ready, reason) => {
    expect(readyFromRelease('web', 'apps', rec(status))).toMatchObject({ status: ready, reason });
  });

  it('reports a missing release with what to do', () => {
    const s = readyFromRelease('web', 'apps', undefined);
    expect(s).toMatchObject({ status: 'False', reason: 'ReleaseNotFound' });
    expect(s.message).toContain('install the chart or fix spec.release');
  });
});

describe('a record that inflates without bound (decompression bomb)', () => {
  /** A release Secret whose gzip inflates to `bytes` of JSON: tiny compressed. */
  function bomb(bytes: number): SecretLike {
    const head = '{"name":"web","namespace":"apps","version":1,"info":{"status":"deployed"},"manifest":"';
    const json = Buffer.concat([
      Buffer.from(head),
      Buffer.alloc(bytes - head.length - 2, 'a'),
      Buffer.from('"}'),
    ]);
    const helmEncoded = gzipSync(json).toString('base64');
    return {
      metadata: {
        name: 'sh.helm.release.v1.web.v1',
        namespace: 'apps',
        labels: { owner: 'helm', name: 'web', version: '1', status: 'deployed' },
      },
      type: HELM_RELEASE_SECRET_TYPE,
      data: { release: Buffer.from(helmEncoded).toString('base64') },
    };
  }

  it('is refused past MAX_RELEASE_RECORD_BYTES with a message naming the Secret and the limit', () => {
    const secret = bomb(MAX_RELEASE_RECORD_BYTES + 1024);
    expect(secret.data?.release?.length).toBeLessThan(256 * 1024);
    expect(() => decodeReleaseSecret(secret)).toThrow(
      /^Helm release Secret apps\/sh\.helm\.release\.v1\.web\.v1 inflates to more than 32 MiB/,
    );
    expect(() => decodeReleaseHooks(secret)).toThrow(/inflates to more than 32 MiB/);
  });

  it('still reads a large record under the limit', () => {
    expect(decodeReleaseSecret(bomb(MAX_RELEASE_RECORD_BYTES - 1024)).revision).toBe(1);
  });

  it('says so when the payload is not gzip although it starts like it', () => {
    const broken: SecretLike = {
      ...releaseSecret('web', 1, 'deployed'),
      data: {
        release: Buffer.from(Buffer.from([0x1f, 0x8b, 1, 2, 3]).toString('base64')).toString('base64'),
      },
    };
    expect(() => decodeReleaseSecret(broken)).toThrow(/is not valid gzip/);
  });
});
