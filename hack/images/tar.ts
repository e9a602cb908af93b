// Deterministic tar archives for image layers, and a reader for the ones crane exports. Pure: the
// entries come in as data, the bytes go out; nothing here reads the disk or the clock.
//
// A layer built twice from the same entries is byte-identical: entries are sorted by path, parent
// directories are added when missing, and every header carries the same mtime, uid/gid 0 (owner
// names empty) and the mode the entry asks for. Paths longer than the ustar name field go into a PAX
// extended header (`path=`, `linkpath=`), the way Go's archive/tar writes them.

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

const BLOCK = 512;

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

function octal(value: number, width: number): string {
  // width includes the terminating NUL
  const s = value.toString(8);
  if (s.length > width - 1) throw new Error(`tar: ${value} does not fit in ${width - 1} octal digits`);
  return `${s.padStart(width - 1, '0')}\0`;
}

function putString(buf: Buffer, offset: number, width: number, value: string): void {
  const bytes = Buffer.from(value);
  if (bytes.length > width) throw new Error(`tar: ${JSON.stringify(value)} is longer than ${width} bytes`);
  bytes.copy(buf, offset);
}

function header(
  name: string,
  typeflag: string,
  size: number,
  mode: number,
  opts: TarOptions,
  linkname = '',
  uid = 0,
  gid = 0,
): Buffer {
  const h = Buffer.alloc(BLOCK);
  putString(h, 0, 100, name);
  putString(h, 100, 8, octal(mode, 8));
  putString(h, 108, 8, octal(uid, 8));
  putString(h, 116, 8, octal(gid, 8));
  putString(h, 124, 12, octal(size, 12));
  putString(h, 136, 12, octal(opts.mtime, 12));
  h.fill(0x20, 148, 156); // checksum counts as spaces while it is computed
  putString(h, 156, 1, typeflag);
  putString(h, 157, 100, linkname);
  putString(h, 257, 6, 'ustar\0');
  putString(h, 263, 2, '00');
  let sum = 0;
  for (const byte of h) sum += byte;
  putString(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** One PAX record: "<len> <key>=<value>\n", where <len> counts the whole record including itself. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLen = Buffer.byteLength(body);
  let len = bodyLen + String(bodyLen).length;
  if (String(len).length + bodyLen !== len) len = bodyLen + String(len).length;
  return `${len}${body}`;
}

function fitsUstar(s: string, width: number): boolean {
  // ASCII only, so every reader agrees on it
  return Buffer.byteLength(s) <= width && /^[\x20-\x7e]*$/.test(s);
}

/** The tar bytes of the entries (canonicalized first), ending with the two zero blocks. */
export function tarChunks(entries: readonly TarEntry[], opts: TarOptions): Buffer[] {
  const out: Buffer[] = [];
  for (const e of canonicalEntries(entries)) {
    const name = e.type === 'dir' ? `${e.path}/` : e.path;
    const link = e.linkname ?? '';
    const records: string[] = [];
    if (!fitsUstar(name, 100)) records.push(paxRecord('path', name));
    if (!fitsUstar(link, 100)) records.push(paxRecord('linkpath', link));
    if (records.length > 0) {
      const pax = Buffer.from(records.join(''));
      const paxName = `PaxHeaders/${name.slice(-80).replace(/[^\x20-\x7e]/g, '_')}`;
      out.push(header(paxName, 'x', pax.length, 0o644, opts), pax, padding(pax.length));
    }
    const shortName = fitsUstar(name, 100) ? name : name.replace(/[^\x20-\x7e]/g, '_').slice(-100);
    const shortLink = fitsUstar(link, 100) ? link : '';
    const uid = e.uid ?? 0;
    const gid = e.gid ?? 0;
    if (e.type === 'file') {
      const data = Buffer.from(e.data!.buffer, e.data!.byteOffset, e.data!.byteLength);
      out.push(header(shortName, '0', data.length, e.mode, opts, '', uid, gid), data, padding(data.length));
    } else if (e.type === 'dir') {
      out.push(header(shortName, '5', 0, e.mode, opts, '', uid, gid));
    } else {
      out.push(header(shortName, '2', 0, e.mode, opts, shortLink, uid, gid));
    }
  }
  out.push(Buffer.alloc(BLOCK * 2));
  return out;
}

export function tarBytes(entries: readonly TarEntry[], opts: TarOptions): Buffer {
  return Buffer.concat(tarChunks(entries, opts));
}

export interface ReadEntry {
  path: string;
  type: TarEntryType | 'hardlink' | 'other';
  mode: number;
  uid: number;
  gid: number;
  mtime: number;
  size: number;
  linkname: string;
  data: Buffer;
}

function cString(buf: Buffer, offset: number, width: number): string {
  const slice = buf.subarray(offset, offset + width);
  const end = slice.indexOf(0);
  return slice.subarray(0, end < 0 ? width : end).toString('utf8');
}

function readOctal(buf: Buffer, offset: number, width: number): number {
  const s = cString(buf, offset, width).trim();
  return s === '' ? 0 : Number.parseInt(s, 8);
}

function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < data.length) {
    const space = data.indexOf(0x20, i);
    if (space < 0) break;
    const len = Number(data.subarray(i, space).toString());
    if (!Number.isInteger(len) || len <= 0) break;
    const record = data.subarray(space + 1, i + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    i += len;
  }
  return out;
}

/**
 * Every entry of a tar archive (ustar with PAX or GNU long names, as Go's archive/tar and GNU tar
 * write them). Paths are normalized: no leading `./` or `/`, no trailing `/`.
 */
export function readTar(buf: Buffer): ReadEntry[] {
  const entries: ReadEntry[] = [];
  let offset = 0;
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  let longLink: string | undefined;
  while (offset + BLOCK <= buf.length) {
    const h = buf.subarray(offset, offset + BLOCK);
    if (h.every((b) => b === 0)) break;
    const size = readOctal(h, 124, 12);
    const typeflag = String.fromCharCode(h[156] ?? 0);
    const data = buf.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + size + padding(size).length;
    if (typeflag === 'x') {
      pax = { ...pax, ...parsePax(data) };
      continue;
    }
    if (typeflag === 'g') continue;
    if (typeflag === 'L') {
      longName = cString(data, 0, data.length);
      continue;
    }
    if (typeflag === 'K') {
      longLink = cString(data, 0, data.length);
      continue;
    }
    const prefix = cString(h, 345, 155);
    const ustarName = prefix ? `${prefix}/${cString(h, 0, 100)}` : cString(h, 0, 100);
    const rawPath = pax.path ?? longName ?? ustarName;
    const linkname = pax.linkpath ?? longLink ?? cString(h, 157, 100);
    pax = {};
    longName = undefined;
    longLink = undefined;
    const path = rawPath.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
    if (path === '' || path === '.') continue;
    const type: ReadEntry['type'] =
      typeflag === '0' || typeflag === '\0' || typeflag === '7'
        ? 'file'
        : typeflag === '5'
          ? 'dir'
          : typeflag === '2'
            ? 'symlink'
            : typeflag === '1'
              ? 'hardlink'
              : 'other';
    entries.push({
      path,
      type,
      mode: readOctal(h, 100, 8),
      uid: readOctal(h, 108, 8),
      gid: readOctal(h, 116, 8),
      mtime: readOctal(h, 136, 12),
      size,
      linkname,
      data: Buffer.from(data),
    });
  }
  return entries;
}
