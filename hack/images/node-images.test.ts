import { describe, expect, it } from 'vitest';
import { busyboxEntries, debianTag } from './node-images.ts';

describe('node images', () => {
  it('a Debian version becomes a tag', () => {
    expect(debianTag('1:1.35.0-4+deb12u1+b1')).toBe('1.35.0-4-deb12u1-b1');
    expect(debianTag('v1.14.7')).toBe('v1.14.7');
  });

  it('busybox with one link per applet, no link for busybox itself or odd names', () => {
    const entries = busyboxEntries(new Uint8Array([1]), ['busybox', 'sh', 'echo', '[', 'bad/name']);
    expect(entries.map((e) => [e.path, e.type, e.linkname])).toEqual([
      ['bin/busybox', 'file', undefined],
      ['bin/sh', 'symlink', 'busybox'],
      ['bin/echo', 'symlink', 'busybox'],
      ['bin/[', 'symlink', 'busybox'],
    ]);
  });
});
