// The production journey's application image (test/e2e/production/, docs/production.md): PostgreSQL from
// Debian's packages, assembled daemonless and reproducibly like the node's and engines' images
// (hack/images/node-images.ts) from what `hack/build-tools.sh postgres` unpacked into bin/postgres/:
//
//   <registry>/postgres:<POSTGRESQL_DEB_VERSION as a tag>
//     /usr/lib/postgresql/<major>/bin   postgres, initdb, pg_ctl, pg_controldata, psql, pgbench, pg_isready
//     /usr/lib/postgresql/<major>/lib, /usr/share/postgresql/<major>, /usr/share/zoneinfo, the libraries
//     /bin                              busybox's applets (the entrypoint's and the hooks' shell)
//     /usr/local/bin/postgres-entrypoint   initdb on the first start, then the server (entrypoint.sh)
//     /vworkspace/hooks/{quiesce,unquiesce} the ops.vworkspace.io/quiesce: exec convention: CHECKPOINT
//
// User 65532 (nonroot): the chart's pod runs as it, with fsGroup so the volume is writable.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../bundle.ts';
import type { TarEntry } from '../archive.ts';
import type { BuiltImage } from '../build.ts';
import { NONROOT, treeEntries, userlandEntries } from '../contents.ts';
import { applets, busyboxEntries, debianTag, engineLayerCache, image, pinned } from '../node-images.ts';

export const POSTGRES_ENTRYPOINT = '/usr/local/bin/postgres-entrypoint';
const SCRIPTS = join(ROOT, 'hack/images/apps/postgres');

/** The PostgreSQL major version of a Debian version (`15.20-0+deb12u1` → `15`). Pure. */
export function postgresMajor(debVersion: string): string {
  const m = /^(?:\d+:)?(\d+)\./.exec(debVersion);
  if (!m) throw new Error(`not a PostgreSQL Debian version: ${debVersion}`);
  return m[1]!;
}

/** Where the programs live in the image, first on PATH. Pure. */
export function postgresPath(major: string): string {
  return `/usr/lib/postgresql/${major}/bin:/usr/local/bin:/bin`;
}

/**
 * The image's files: the unpacked tree (its entries relative to the image root), busybox's applets in
 * /bin for every name the tree does not hold, the entrypoint and the two hooks, the userland. Pure.
 */
export function postgresEntries(
  tree: readonly TarEntry[],
  busybox: Uint8Array,
  applets: readonly string[],
  scripts: { entrypoint: Uint8Array; quiesce: Uint8Array; unquiesce: Uint8Array },
  major: string,
): TarEntry[] {
  const taken = new Set(tree.map((e) => e.path));
  for (const p of [`usr/lib/postgresql/${major}/bin/postgres`, `usr/lib/postgresql/${major}/bin/psql`])
    if (!taken.has(p)) throw new Error(`bin/postgres has no ${p} (hack/build-tools.sh postgres)`);
  const script = (path: string, data: Uint8Array): TarEntry => ({ path, type: 'file', mode: 0o755, data });
  return [
    ...tree,
    ...busyboxEntries(busybox, applets).filter((e) => !taken.has(e.path)),
    script(POSTGRES_ENTRYPOINT.slice(1), scripts.entrypoint),
    script('vworkspace/hooks/quiesce', scripts.quiesce),
    script('vworkspace/hooks/unquiesce', scripts.unquiesce),
    { path: 'var/run/postgresql', type: 'dir', mode: 0o775, uid: NONROOT, gid: NONROOT },
    ...userlandEntries(),
  ];
}

export function postgresImage(registry: string, epoch?: string): BuiltImage {
  const bin = (n: string) => join(ROOT, 'bin', n);
  if (!existsSync(bin('postgres')))
    throw new Error(`${bin('postgres')} is missing: run \`hack/build-tools.sh postgres\``);
  const version = pinned('POSTGRESQL_DEB_VERSION');
  const major = postgresMajor(version);
  const tree = treeEntries(bin('postgres'), '.')
    .slice(1)
    .map((e) => ({ ...e, path: e.path.replace(/^\.\//, '') }));
  const read = (n: string) => readFileSync(join(SCRIPTS, n));
  return image(
    registry,
    'postgres',
    debianTag(version),
    postgresEntries(
      tree,
      readFileSync(bin('busybox')),
      applets(bin('busybox')),
      { entrypoint: read('entrypoint.sh'), quiesce: read('quiesce.sh'), unquiesce: read('unquiesce.sh') },
      major,
    ),
    {
      user: `${NONROOT}:${NONROOT}`,
      entrypoint: [POSTGRES_ENTRYPOINT],
      env: [`PATH=${postgresPath(major)}`, 'PGDATA=/var/lib/postgresql/data/pgdata'],
      exposedPorts: ['5432/tcp'],
      labels: {
        'org.opencontainers.image.version': version,
        'org.opencontainers.image.title': `PostgreSQL ${major} (Debian's postgresql-${major} ${version})`,
      },
    },
    epoch,
    engineLayerCache(),
  );
}
