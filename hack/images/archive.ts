// Image layers as tar archives, written and read by node-tar (npm's `tar`, docs/adr/0045): this file
// only decides WHAT goes in a layer and in which order; the tar format (ustar headers, PAX records for
// long paths, padding, the end-of-archive blocks) is the library's.
//
// A layer built twice from the same entries is byte-identical: entries are sorted by path, parent
// directories are added when missing, every header carries the same mtime (node-tar's `mtime` option),
// uid/gid 0 unless the entry says otherwise, no owner names, and the mode the entry asks for.
// node-tar is used synchronously (PackSync, Parser.end): the image builders are plain functions that
// the release, bundle and test code call without awaiting.
import { Header, PackSync, Parser, ReadEntry } from 'tar';

export type TarEntryType = 'file' | 'dir' | 'symlink';

export interface TarEntry {
  /** Relative to the image root, no leading `/` or `./`, no trailing `/` (e.g. `app/package.json`). */
  path: string;
  type: TarEntryType;
  /** Permission bits (and the sticky bit for /tmp): 0o644, 0o755, 0o1777. */
  mode: number;
  /** File content (files only). */
  data?: Uint8Array;
  /** Symlink target (symlinks only). */
  linkname?: string;
  uid?: number;
  gid?: number;
}

export interface TarOptions {
  /** Seconds since the epoch written into every header (SOURCE_DATE_EPOCH). */
  mtime: number;
}

export function normalizePath(path: string): string {
  const p = path.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
  if (p === '' || p.split('/').some((s) => s === '' || s === '.' || s === '..'))
    throw new Error(`tar: invalid path ${JSON.stringify(path)}`);
  return p;
}

/** Byte order of the UTF-8 paths: the order the layer lists them in. */
function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The entries sorted by path, with every missing parent directory added (mode 0755, root-owned) and
 * duplicates refused (two entries for one path would make the layer depend on the input order).
 */
export function canonicalEntries(entries: readonly TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const e of entries) {
    const path = normalizePath(e.path);
    if (byPath.has(path)) throw new Error(`tar: ${path} is listed twice`);
    if (e.type === 'file' && !e.data) throw new Error(`tar: file ${path} has no data`);
    if (e.type === 'symlink' && !e.linkname) throw new Error(`tar: symlink ${path} has no target`);
    byPath.set(path, { ...e, path });
  }
  for (const path of [...byPath.keys()]) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      const existing = byPath.get(parent);
      if (existing && existing.type !== 'dir') throw new Error(`tar: ${parent} is not a directory`);
      if (!existing) byPath.set(parent, { path: parent, type: 'dir', mode: 0o755 });
    }
  }
  return [...byPath.values()].sort((a, b) => comparePaths(a.path, b.path));
}

const HEADER_TYPE = { file: 'File', dir: 'Directory', symlink: 'SymbolicLink' } as const;

/**
 * node-tar takes an entry that is not on the disk as a ReadEntry (what its parser emits): a header and
 * the body written into it.
 */
function readEntryOf(e: TarEntry): ReadEntry {
  const data =
    e.type === 'file' ? Buffer.from(e.data!.buffer, e.data!.byteOffset, e.data!.byteLength) : undefined;
  const entry = new ReadEntry(
    new Header({
      path: e.type === 'dir' ? `${e.path}/` : e.path,
      type: HEADER_TYPE[e.type],
      mode: e.mode,
      uid: e.uid ?? 0,
      gid: e.gid ?? 0,
      size: data?.length ?? 0,
      ...(e.linkname ? { linkpath: e.linkname } : {}),
    }),
  );
  if (data && data.length > 0) entry.write(data);
  entry.end();
  return entry;
}

/** The tar bytes of the entries (canonicalized first), ending with the two zero blocks. */
export function tarBytes(entries: readonly TarEntry[], opts: TarOptions): Buffer {
  const chunks: Buffer[] = [];
  const pack = new PackSync({ mtime: new Date(opts.mtime * 1000), strict: true });
  pack.on('data', (c: Buffer) => chunks.push(c));
  for (const e of canonicalEntries(entries)) pack.add(readEntryOf(e));
  pack.end();
  return Buffer.concat(chunks);
}

export interface TarMember {
  path: string;
  type: TarEntryType | 'hardlink' | 'other';
  mode: number;
  uid: number;
  gid: number;
  /** Seconds since the epoch. */
  mtime: number;
  size: number;
  linkname: string;
  data: Buffer;
}

const MEMBER_TYPE: Record<string, TarMember['type']> = {
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  Directory: 'dir',
  SymbolicLink: 'symlink',
  Link: 'hardlink',
};

/**
 * Every entry of a tar archive (what `crane export` writes, and our layers). Paths are normalized: no
 * leading `./` or `/`, no trailing `/`.
 */
export function readTar(buf: Buffer): TarMember[] {
  const members: TarMember[] = [];
  let ended = false;
  const parser = new Parser({
    strict: true,
    onReadEntry: (e) => {
      const path = e.path.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
      const chunks: Buffer[] = [];
      e.on('data', (c: Buffer) => chunks.push(c));
      e.on('end', () => {
        if (path === '' || path === '.') return;
        members.push({
          path,
          type: MEMBER_TYPE[e.type] ?? 'other',
          mode: e.mode ?? 0,
          uid: e.uid ?? 0,
          gid: e.gid ?? 0,
          mtime: e.mtime ? Math.floor(e.mtime.getTime() / 1000) : 0,
          size: e.size,
          linkname: e.linkpath ?? '',
          data: Buffer.concat(chunks),
        });
      });
    },
  });
  parser.on('end', () => {
    ended = true;
  });
  // Parser.end with the whole archive parses it synchronously (what node-tar's own `list({ sync })` does).
  parser.end(buf);
  if (!ended) throw new Error('tar: the archive was not read to its end');
  return members;
}
