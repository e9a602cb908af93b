// The krew plugin's packaging: a reproducible archive krew unpacks with tar (the executable and the
// LICENSE), and a manifest with each archive's sha256. The executable itself (Node's single executable
// application) is built and run with no Node on PATH by test/integration/cli/kubectl-vws.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { archiveFiles, archiveName, krewManifest, tarGz } from './krew.ts';

describe('the krew plugin', () => {
  it('packs the executable and the LICENSE reproducibly; tar unpacks them with their modes', () => {
    const exe = Buffer.from('#!/bin/sh\necho stand-in for the executable\n');
    const archive = tarGz(archiveFiles(exe, Buffer.from('Apache License\n')));
    expect(tarGz(archiveFiles(exe, Buffer.from('Apache License\n')))).toEqual(archive);
    const dir = mkdtempSync(join(tmpdir(), 'vws-krew-'));
    try {
      const name = archiveName('0.1.0', { os: 'linux', arch: 'amd64' });
      expect(name).toBe('kubectl-vws-v0.1.0-linux-amd64.tar.gz');
      writeFileSync(join(dir, name), archive);
      const list = spawnSync('tar', ['-tvzf', name], { cwd: dir, encoding: 'utf8' });
      expect(list.status).toBe(0);
      expect(list.stdout).toMatch(/^-rwxr-xr-x .* kubectl-vws$/m);
      expect(list.stdout).toMatch(/^-rw-r--r-- .* LICENSE$/m);
      expect(spawnSync('tar', ['-xzf', name], { cwd: dir }).status).toBe(0);
      expect(readFileSync(join(dir, 'kubectl-vws'))).toEqual(exe);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has a krew manifest naming each platform archive, its sha256, the files and the bin', () => {
    const sha = createHash('sha256').update('x').digest('hex');
    const m = krewManifest('0.1.0', [{ platform: { os: 'linux', arch: 'amd64' }, sha256: sha }]) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: Record<string, unknown> & { platforms: Record<string, unknown>[] };
    };
    expect(m).toMatchObject({
      apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
      kind: 'Plugin',
      metadata: { name: 'vws' },
      spec: { version: 'v0.1.0' },
    });
    expect(m.spec.platforms).toEqual([
      {
        selector: { matchLabels: { os: 'linux', arch: 'amd64' } },
        uri: 'https://github.com/vworkspace/vworkspace-operator/releases/download/v0.1.0/kubectl-vws-v0.1.0-linux-amd64.tar.gz',
        sha256: sha,
        files: [
          { from: 'kubectl-vws', to: '.' },
          { from: 'LICENSE', to: '.' },
        ],
        bin: 'kubectl-vws',
      },
    ]);
    expect(String(m.spec.shortDescription).length).toBeLessThanOrEqual(50);
    expect(String(m.spec.caveats)).not.toMatch(/node/i);
  });
});
