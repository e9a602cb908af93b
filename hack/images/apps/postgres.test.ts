import { describe, expect, it } from 'vitest';
import type { TarEntry } from '../archive.ts';
import { POSTGRES_ENTRYPOINT, postgresEntries, postgresMajor, postgresPath } from './postgres.ts';

const file = (path: string): TarEntry => ({ path, type: 'file', mode: 0o755, data: new Uint8Array([1]) });
const tree = [
  file('usr/lib/postgresql/15/bin/postgres'),
  file('usr/lib/postgresql/15/bin/psql'),
  file('bin/cat'),
];
const scripts = {
  entrypoint: new Uint8Array([2]),
  quiesce: new Uint8Array([3]),
  unquiesce: new Uint8Array([4]),
};

describe('the PostgreSQL image', () => {
  it("takes the major version from Debian's version, epoch or not", () => {
    expect(postgresMajor('15.20-0+deb12u1')).toBe('15');
    expect(postgresMajor('1:16.4-1')).toBe('16');
    expect(() => postgresMajor('latest')).toThrow(/not a PostgreSQL Debian version/);
    expect(postgresPath('15').split(':')[0]).toBe('/usr/lib/postgresql/15/bin');
  });

  it('holds the tree, the entrypoint, the quiesce convention’s hooks, and busybox only where the tree has nothing', () => {
    const entries = postgresEntries(tree, new Uint8Array([9]), ['cat', 'sh', 'sleep'], scripts, '15');
    const paths = entries.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        POSTGRES_ENTRYPOINT.slice(1),
        'vworkspace/hooks/quiesce',
        'vworkspace/hooks/unquiesce',
        'bin/sh',
        'bin/sleep',
        'var/run/postgresql',
        'etc/passwd',
      ]),
    );
    expect(entries.filter((e) => e.path === 'bin/cat')).toEqual([tree[2]]);
    expect(entries.find((e) => e.path === 'vworkspace/hooks/quiesce')).toMatchObject({
      mode: 0o755,
      data: scripts.quiesce,
    });
  });

  it('refuses a tree without the server or psql, saying how to build it', () => {
    expect(() => postgresEntries(tree.slice(1), new Uint8Array(), [], scripts, '15')).toThrow(
      /hack\/build-tools\.sh postgres/,
    );
    expect(() => postgresEntries([tree[0]!], new Uint8Array(), [], scripts, '15')).toThrow(/psql/);
  });
});
