import { describe, expect, it } from 'vitest';
import type { TarEntry } from '../archive.ts';
import { ENTRY_SH, moverEntries, resticTag } from './volsync.ts';

const tree: TarEntry[] = [
  { path: 'bin/bash', type: 'file', mode: 0o755, data: new Uint8Array([1]) },
  { path: 'usr/bin/ls', type: 'file', mode: 0o755, data: new Uint8Array([2]) },
  { path: ENTRY_SH, type: 'file', mode: 0o755, data: new Uint8Array([3]) },
];

describe('VolSync images', () => {
  it('the mover tag names both versions', () => {
    expect(resticTag('v0.14.0', 'v0.18.0')).toBe('v0.14.0-restic-v0.18.0');
  });

  it('the mover: the tree, restic at upstream’s path, busybox applets only where the tree has nothing', () => {
    const entries = moverEntries(tree, new Uint8Array([9]), new Uint8Array([8]), [
      'bash',
      'grep',
      'ls',
      'awk',
    ]);
    const paths = entries.map((e) => e.path);
    expect(paths).toContain('usr/local/bin/restic');
    expect(paths).toContain('bin/grep');
    expect(paths).toContain('bin/awk');
    // GNU ls stays in usr/bin (first on PATH); busybox's ls link sits in bin; bash is never busybox's.
    expect(paths).toContain('bin/ls');
    expect(entries.filter((e) => e.path === 'bin/bash')).toEqual([tree[0]]);
  });

  it('refuses a tree without entry.sh or bash', () => {
    expect(() => moverEntries(tree.slice(0, 2), new Uint8Array(), new Uint8Array(), [])).toThrow(/entry\.sh/);
    expect(() => moverEntries(tree.slice(1), new Uint8Array(), new Uint8Array(), [])).toThrow(/bash/);
  });
});
