// One operator image, two recipes: the `Dockerfile` (docker build, on a machine with a daemon) and
// operator-image.ts (make images, here). The Dockerfile's final stage is read the way BuildKit reads it
// and applied to the distroless base's config; the result must be the daemonless image's config, its
// COPYs must be the daemonless image's layers (same destinations, same files), and the daemonless
// image's first layer may hold only what stands in for the distroless base (listed below with the
// reason for each). A change to one recipe without the other fails here. docs/adr/0045.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readRepoFile } from '../bundle.ts';
import { canonicalEntries, type TarEntry } from './archive.ts';
import { applyStage, type ContainerConfig, type Copy, dockerignore, parseDockerfile } from './dockerfile.ts';
import { imageConfig } from './oci.ts';
import { operatorPlan } from './operator-image.ts';

/**
 * gcr.io/distroless/nodejs24-debian12:nonroot's config, which cannot be pulled here: as distroless
 * builds it (static/static.bzl: PATH, SSL_CERT_FILE, user 65532, workdir /home/nonroot;
 * nodejs/nodejs.bzl: entrypoint /nodejs/bin/node; no labels, the annotations go in the manifest).
 */
const DISTROLESS_NODEJS_NONROOT: ContainerConfig = {
  User: '65532',
  WorkingDir: '/home/nonroot',
  Entrypoint: ['/nodejs/bin/node'],
  Env: [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
  ],
};

/** Labels only the daemonless build writes. */
const DAEMONLESS_ONLY_LABELS: Record<string, string> = {
  'org.opencontainers.image.created':
    "the source date the daemonless build stamps (packaging/releases.yaml); docker build dates the config's `created` itself",
  'io.vworkspace.image.runtime-libraries':
    'the Debian packages the shared libraries were copied from; distroless records its packages in /var/lib/dpkg/status.d',
};

/** Every path of the daemonless image's base layer, and what it stands in for. */
const BASE_STAND_IN: { path: RegExp; why: string }[] = [
  { path: /^nodejs\/bin\/node$/, why: "the base's Node 24, where distroless has it (the ENTRYPOINT)" },
  {
    path: /^lib\/x86_64-linux-gnu\/[^/]+$/,
    why: "what node links against (ldd: glibc, libstdc++, libgcc_s), distroless's cc packages, copied from the build machine",
  },
  {
    path: /^lib64\/ld-linux-x86-64\.so\.2$/,
    why: "the program interpreter node names, a symlink to glibc's loader",
  },
  { path: /^usr\/share\/doc\/[^/]+\/copyright$/, why: 'the licences of those Debian packages' },
  { path: /^etc\/(passwd|group)$/, why: "distroless's users and groups (root, nobody, nonroot 65532)" },
  { path: /^etc\/nsswitch\.conf$/, why: 'hosts: files dns, for getaddrinfo' },
  { path: /^etc\/ssl\/certs\/ca-certificates\.crt$/, why: "the CA bundle the base's SSL_CERT_FILE names" },
  { path: /^tmp$/, why: '/tmp, 1777' },
  { path: /^home\/nonroot$/, why: "nonroot's home, 0700, owned by 65532" },
];

/** What the distroless base has and the stand-in leaves out, and why the operator does not need it. */
const NOT_IN_STAND_IN: { path: string; why: string }[] = [
  { path: 'etc/os-release', why: 'names the distribution for scanners; the stand-in is no distribution' },
  {
    path: 'var/lib/dpkg/status.d',
    why: 'package records for scanners; the runtime-libraries label says the same',
  },
  {
    path: 'usr/share/zoneinfo',
    why: 'tzdata: Node carries its own time zone data (ICU); the operator logs UTC',
  },
  {
    path: 'usr/lib/x86_64-linux-gnu/libssl.so.3',
    why: 'Node links OpenSSL statically (ldd lists no libssl)',
  },
  {
    path: 'usr/lib/x86_64-linux-gnu/libgomp.so.1',
    why: 'distroless cc ships it; node does not link it (ldd)',
  },
  { path: 'root', why: "root's home: the image never runs as root" },
];

const text = readRepoFile('Dockerfile')!;
const stages = parseDockerfile(text);
const final = stages.at(-1)!;
const version = '0.1.0';
const created = '2026-11-22T00:00:00Z';
const plan = operatorPlan(ROOT, version, created);
const docker = applyStage(final, DISTROLESS_NODEJS_NONROOT, { VERSION: version });

/** Files and symlinks of some layer entries (directories are implied by them in both recipes). */
function leaves(entries: readonly TarEntry[]): string[] {
  return canonicalEntries(entries)
    .filter((e) => e.type !== 'dir')
    .map((e) => e.path)
    .sort();
}

/**
 * The build-context files a COPY takes (.dockerignore applied), at their image paths: a directory's
 * contents go into the destination, a file goes in under its name when the destination is a directory.
 */
function contextCopy(copy: Copy): string[] {
  const ignored = dockerignore(readRepoFile('.dockerignore') ?? '');
  const dest = copy.dest.slice(1);
  const out: string[] = [];
  for (const source of copy.sources.map((s) => posix.normalize(s).replace(/\/$/, ''))) {
    const walk = (rel: string) => {
      if (statSync(join(ROOT, rel)).isDirectory()) {
        for (const n of readdirSync(join(ROOT, rel))) walk(posix.join(rel, n));
      } else if (!ignored(rel)) {
        const inside = posix.relative(source, rel);
        out.push(
          inside !== ''
            ? posix.join(dest, inside)
            : copy.intoDir
              ? posix.join(dest, posix.basename(rel))
              : dest,
        );
      }
    };
    walk(source);
  }
  return out.sort();
}

/**
 * What the deps stage's `npm ci --omit=dev` leaves in node_modules: every production package of the
 * lock (npm's own list), npm's hidden lockfile, the .bin links unless --no-bin-links; then its `rm -rf`.
 * Package-level: the files of a package are what npm extracts from the same tarball either way.
 */
function npmCiPackages(): string[] {
  const deps = stages.find((s) => s.name === 'deps');
  if (!deps) throw new Error('the Dockerfile has no `deps` stage');
  const [run, ...more] = applyStage(deps, {}).runs;
  if (!run || more.length > 0) throw new Error('the deps stage must have one RUN (npm ci …)');
  const commands = run.args.split('&&').map((c) => c.replace(/\s+/g, ' ').trim());
  const ci = commands.find((c) => c.startsWith('npm ci'));
  if (!ci?.includes('--omit=dev'))
    throw new Error(`the deps stage runs ${run.args}: modelled is npm ci --omit=dev`);
  const removed = commands
    .filter((c) => c.startsWith('rm -rf '))
    .flatMap((c) => c.slice('rm -rf '.length).split(' '));
  if (commands.length !== 1 + commands.filter((c) => c.startsWith('rm -rf ')).length)
    throw new Error(`the deps stage runs ${run.args}: modelled are npm ci and rm -rf`);
  const ls = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' });
  if (ls.status !== 0) throw new Error(`npm ls --omit=dev failed: ${ls.stderr}`);
  const installed = [
    ...ls.stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => relative(ROOT, l.trim()))
      .filter((p) => p.startsWith('node_modules/')),
    'node_modules/.package-lock.json',
    ...(ci.includes('--no-bin-links') ? [] : ['node_modules/.bin']),
  ];
  const gone = (p: string) => removed.some((r) => p === r || p.startsWith(`${r}/`));
  return [...new Set(installed.filter((p) => !gone(p)))].sort();
}

/** The package directories (and hidden entries) of a node_modules layer, relative to the working dir. */
function layerPackages(entries: readonly TarEntry[], workdir: string): string[] {
  const canonical = canonicalEntries(entries);
  const paths = new Set(canonical.map((e) => e.path));
  const links = new Set(canonical.filter((e) => e.type === 'symlink').map((e) => e.path));
  // a package directory, or npm's link to a workspace package
  const isPackage = (p: string) =>
    /(^|\/)node_modules\/(@[^/]+\/)?[^/@.][^/]*$/.test(p) && (paths.has(`${p}/package.json`) || links.has(p));
  const isHidden = (p: string) => /^node_modules\/\.[^/]+$/.test(posix.relative(workdir, p));
  return [...paths]
    .filter((p) => isPackage(p) || isHidden(p))
    .map((p) => posix.relative(workdir, p))
    .sort();
}

describe('the daemonless operator image is the Dockerfile image', () => {
  it('has the config the Dockerfile gives on top of the distroless base', () => {
    const ours = imageConfig([], plan.spec).config as ContainerConfig;
    const labels = Object.fromEntries(
      Object.entries(ours.Labels ?? {}).filter(([k]) => !(k in DAEMONLESS_ONLY_LABELS)),
    );
    expect(Object.keys(ours.Labels ?? {})).toEqual(
      expect.arrayContaining(Object.keys(DAEMONLESS_ONLY_LABELS)),
    );
    expect({ ...ours, Labels: labels }).toEqual(docker.config);
    // what the comparison rests on, stated once more on its own
    expect(docker.config).toMatchObject({
      User: '65532:65532',
      WorkingDir: '/app',
      Entrypoint: ['/nodejs/bin/node', expect.any(String), expect.any(String), 'operator/src/main.ts'],
    });
  });

  it('has one layer per COPY of the final stage, in order, with the files that COPY brings', () => {
    const appLayers = plan.layers.slice(1);
    expect(appLayers).toHaveLength(docker.copies.length);
    const workdir = docker.config.WorkingDir!.slice(1);
    docker.copies.forEach((copy, i) => {
      const layer = appLayers[i]!;
      const dest = copy.dest.slice(1);
      for (const p of leaves(layer.entries)) expect(p.startsWith(`${dest}/`) || p === dest, p).toBe(true);
      if (copy.from === undefined) {
        expect(leaves(layer.entries), `COPY at Dockerfile line ${copy.line}`).toEqual(contextCopy(copy));
      } else {
        const deps = stages.find((s) => s.name === copy.from)!;
        const depsWorkdir = applyStage(deps, {}).config.WorkingDir ?? '/';
        expect(copy.sources).toEqual([posix.join(depsWorkdir, 'node_modules')]);
        expect(copy.dest).toBe(posix.join(docker.config.WorkingDir!, 'node_modules'));
        expect(layerPackages(layer.entries, workdir)).toEqual(npmCiPackages());
      }
    });
  });

  it('carries the operator package and none of the tooling (hack/ or the link to it)', () => {
    const paths = plan.layers.slice(1).flatMap((l) => canonicalEntries(l.entries));
    const at = (p: string) => paths.find((e) => e.path === p);
    expect(
      paths.filter((e) => /^app\/(hack(\/|$)|node_modules\/@vworkspace\/tooling$)/.test(e.path)),
    ).toEqual([]);
    expect(at('app/operator/package.json')?.type).toBe('file');
    expect(at('app/node_modules/@vworkspace/operator')).toMatchObject({
      type: 'symlink',
      linkname: '../../operator',
    });
  });

  it('has a base layer that only stands in for distroless, and gives what the config relies on', () => {
    const base = canonicalEntries(plan.layers[0]!.entries);
    const unexplained = base
      .filter((e) => e.type !== 'dir' || !base.some((o) => o.path.startsWith(`${e.path}/`)))
      .filter((e) => !BASE_STAND_IN.some((s) => s.path.test(e.path)))
      .map((e) => e.path);
    expect(unexplained).toEqual([]);
    const at = (p: string) => base.find((e) => e.path === p);
    const entrypoint = docker.config.Entrypoint![0]!.slice(1);
    expect(at(entrypoint)).toMatchObject({ type: 'file', mode: 0o755 });
    const certs = docker.config.Env!.find((kv) => kv.startsWith('SSL_CERT_FILE='))!.split('=')[1]!;
    expect(at(certs.slice(1))?.type).toBe('file');
    const uid = docker.config.User!.split(':')[0];
    expect(Buffer.from(at('etc/passwd')!.data!).toString()).toMatch(
      new RegExp(`^nonroot:x:${uid}:${uid}:`, 'm'),
    );
    expect(at('home/nonroot')).toMatchObject({ uid: Number(uid), mode: 0o700 });
    expect(at('tmp')?.mode).toBe(0o1777);
    const all = new Set(plan.layers.flatMap((l) => canonicalEntries(l.entries).map((e) => e.path)));
    expect(NOT_IN_STAND_IN.map((n) => n.path).filter((p) => all.has(p))).toEqual([]);
  });
});
