// Layers are reproducible: the same entries in any order give the same bytes, every header carries the
// fixed mtime and owner, long paths survive, and GNU tar reads what we write (node-tar writes the bytes).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalEntries, normalizePath, readTar, type TarEntry, tarBytes } from './archive.ts';
import { assembleImage, buildLayer, imageConfig, sha256 } from './oci.ts';

const MTIME = 1_795_305_600; // 2026-11-22T00:00:00Z
const file = (path: string, text: string, mode = 0o644): TarEntry => ({
  path,
  type: 'file',
  mode,
  data: Buffer.from(text),
});

describe('tar', () => {
  it('is the same bytes for the same entries in any order', () => {
    const entries = [
      file('app/package.json', '{}'),
      file('app/operator/src/main.ts', 'console.log(1)\n'),
      { path: 'tmp', type: 'dir', mode: 0o1777 } as TarEntry,
      { path: 'lib64/ld.so', type: 'symlink', mode: 0o777, linkname: '../lib/ld.so' } as TarEntry,
    ];
    const a = tarBytes(entries, { mtime: MTIME });
    const b = tarBytes([...entries].reverse(), { mtime: MTIME });
    expect(sha256(a)).toBe(sha256(b));
    expect(sha256(tarBytes(entries, { mtime: MTIME + 1 }))).not.toBe(sha256(a));
  });

  it('adds parent directories, sorts by path and fixes mtime, uid and gid', () => {
    const read = readTar(
      tarBytes([file('app/operator/src/main.ts', 'x'), file('app/a.json', '{}')], { mtime: MTIME }),
    );
    expect(read.map((e) => `${e.type} ${e.path}`)).toEqual([
      'dir app',
      'file app/a.json',
      'dir app/operator',
      'dir app/operator/src',
      'file app/operator/src/main.ts',
    ]);
    for (const e of read) expect([e.mtime, e.uid, e.gid]).toEqual([MTIME, 0, 0]);
    expect(read.find((e) => e.type === 'dir')?.mode).toBe(0o755);
  });

  it('keeps modes, owners, symlinks and long paths', () => {
    const long = `app/node_modules/${'deeply-nested-package/'.repeat(8)}index.js`;
    const read = readTar(
      tarBytes(
        [
          file(long, 'module.exports = 1;\n'),
          file('nodejs/bin/node', 'ELF', 0o755),
          { path: 'tmp', type: 'dir', mode: 0o1777 },
          { path: 'home/nonroot', type: 'dir', mode: 0o700, uid: 65532, gid: 65532 },
          { path: 'lib64/ld.so', type: 'symlink', mode: 0o777, linkname: `../${'x/'.repeat(60)}ld.so` },
        ],
        { mtime: MTIME },
      ),
    );
    const by = (p: string) => read.find((e) => e.path === p)!;
    expect(by(long).data.toString()).toBe('module.exports = 1;\n');
    expect(by('nodejs/bin/node').mode).toBe(0o755);
    expect(by('tmp').mode).toBe(0o1777);
    expect([by('home/nonroot').uid, by('home/nonroot').gid]).toEqual([65532, 65532]);
    expect(by('lib64/ld.so').linkname).toBe(`../${'x/'.repeat(60)}ld.so`);
    // the extended headers carrying the long names are not entries of their own
    expect(read.filter((e) => e.type !== 'dir').map((e) => e.path)).toEqual([
      long,
      'lib64/ld.so',
      'nodejs/bin/node',
    ]);
  });

  it('is read back by GNU tar', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-tar-test-'));
    try {
      const long = `a/${'b'.repeat(120)}/c.txt`;
      const target = `${'t'.repeat(120)}/x`;
      writeFileSync(
        join(dir, 'layer.tar'),
        tarBytes(
          [
            file(long, 'hello'),
            file('x.sh', '#!/bin/sh\n', 0o755),
            { path: 'tmp', type: 'dir', mode: 0o1777 },
            { path: 'home/nonroot', type: 'dir', mode: 0o700, uid: 65532, gid: 65532 },
            { path: 'link', type: 'symlink', mode: 0o777, linkname: target },
          ],
          { mtime: MTIME },
        ),
      );
      const r = spawnSync('tar', ['-xf', 'layer.tar'], { cwd: dir, encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(readFileSync(join(dir, long), 'utf8')).toBe('hello');
      const list = spawnSync('tar', ['--numeric-owner', '-tvf', 'layer.tar'], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, TZ: 'UTC' },
      });
      expect(list.stdout).toMatch(/-rwxr-xr-x 0\/0 +10 2026-11-22 00:00 x\.sh/);
      expect(list.stdout).toMatch(/drwxrwxrwt 0\/0 +0 2026-11-22 00:00 tmp\//);
      expect(list.stdout).toMatch(/drwx------ 65532\/65532 +0 2026-11-22 00:00 home\/nonroot\//);
      expect(list.stdout).toContain(`link -> ${target}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses duplicate paths, a file where a directory must be, and escaping paths', () => {
    expect(() => canonicalEntries([file('a', '1'), file('./a', '2')])).toThrow(/listed twice/);
    expect(() => canonicalEntries([file('a', '1'), file('a/b', '2')])).toThrow(/not a directory/);
    expect(() => normalizePath('app/../etc/passwd')).toThrow(/invalid path/);
    expect(normalizePath('/app/x/')).toBe('app/x');
  });
});

describe('oci', () => {
  it('gives the same layer and manifest digests for the same content', () => {
    const entries = [file('configs/pkg/catalog.yaml', 'schema: olm.package\n')];
    const build = () => {
      const layer = buildLayer('catalog', entries, { mtime: MTIME });
      return assembleImage([layer], { created: '2026-11-22T00:00:00Z', labels: { b: '2', a: '1' } });
    };
    const [x, y] = [build(), build()];
    expect(x.digest).toBe(y.digest);
    expect(x.layers[0]!.digest).toBe(y.layers[0]!.digest);
    expect(x.layers[0]!.diffId).not.toBe(x.layers[0]!.digest); // gzip vs tar
    expect(x.layers[0]!.gz.subarray(4, 8)).toEqual(Buffer.alloc(4)); // no timestamp in the gzip header
    const manifest = JSON.parse(x.manifest.toString()) as { config: { digest: string }; layers: unknown[] };
    expect(manifest.config.digest).toBe(x.configDigest);
    expect(manifest.layers).toHaveLength(1);
  });

  it('writes the config from the spec: user, entrypoint, labels sorted, diff_ids, history at the source date', () => {
    const layer = buildLayer('app', [file('app/x', 'x')], { mtime: MTIME });
    const cfg = imageConfig([layer], {
      created: '2026-11-22T00:00:00Z',
      user: '65532:65532',
      entrypoint: ['/nodejs/bin/node', 'operator/src/main.ts'],
      workingDir: '/app',
      labels: { z: '1', a: '2' },
    }) as { config: Record<string, unknown>; rootfs: { diff_ids: string[] }; history: { created: string }[] };
    expect(cfg.config).toMatchObject({
      User: '65532:65532',
      Entrypoint: ['/nodejs/bin/node', 'operator/src/main.ts'],
      WorkingDir: '/app',
    });
    expect(Object.keys(cfg.config.Labels as object)).toEqual(['a', 'z']);
    expect(cfg.rootfs.diff_ids).toEqual([layer.diffId]);
    expect(cfg.history[0]!.created).toBe('2026-11-22T00:00:00Z');
  });
});
