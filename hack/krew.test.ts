// The krew plugin: a reproducible archive whose kubectl-vws runs on Node 24 after `tar -xzf` (as krew
// unpacks it), and a manifest with that archive's sha256.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './bundle.ts';
import { archiveFiles, archiveName, bundlePlugin, krewManifest, tarGz } from './krew.ts';

const NODE = join(ROOT, 'node_modules/.bin');

describe('the krew plugin', { timeout: 60_000 }, () => {
  it('packs the bundled plugin reproducibly; unpacked with tar it runs with Node 24, also through a symlink', async () => {
    const script = await bundlePlugin();
    const archive = tarGz(archiveFiles(script));
    expect(tarGz(archiveFiles(await bundlePlugin()))).toEqual(archive);
    const dir = mkdtempSync(join(tmpdir(), 'vws-krew-'));
    try {
      writeFileSync(join(dir, archiveName('0.1.0')), archive);
      const list = spawnSync('tar', ['-tvzf', archiveName('0.1.0')], { cwd: dir, encoding: 'utf8' });
      expect(list.status).toBe(0);
      expect(list.stdout).toMatch(/^-rwxr-xr-x .* kubectl-vws$/m);
      expect(spawnSync('tar', ['-xzf', archiveName('0.1.0')], { cwd: dir }).status).toBe(0);
      // krew links ~/.krew/bin/kubectl-vws to the unpacked file.
      symlinkSync(join(dir, 'kubectl-vws'), join(dir, 'linked'));
      for (const bin of ['kubectl-vws', 'linked']) {
        const r = spawnSync(join(dir, bin), ['--help'], {
          encoding: 'utf8',
          env: { ...process.env, PATH: `${NODE}:${process.env.PATH}` },
        });
        expect({ code: r.status, err: r.stderr }).toEqual({ code: 0, err: '' });
        expect(r.stdout).toMatch(/^kubectl vws — run, approve, cancel and follow/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has a krew manifest naming the release archive and its sha256', () => {
    const sha = createHash('sha256').update('x').digest('hex');
    const m = krewManifest('0.1.0', sha) as {
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
        selector: { matchExpressions: [{ key: 'os', operator: 'In', values: ['linux', 'darwin'] }] },
        uri: 'https://github.com/vworkspace/vworkspace-operator/releases/download/v0.1.0/kubectl-vws-v0.1.0.tar.gz',
        sha256: sha,
        bin: 'kubectl-vws',
      },
    ]);
    expect(String(m.spec.shortDescription).length).toBeLessThanOrEqual(50);
  });
});
