import { describe, expect, it } from 'vitest';
import { generatedFiles, readRepoFile, staleFiles } from './generate.ts';

describe('generated files', () => {
  it('are committed up to date (run `npm run generate` when this fails)', () => {
    expect(staleFiles()).toEqual([]);
  });

  it('covers one CRD and one API page per kind', () => {
    const paths = generatedFiles(readRepoFile).map((f) => f.path);
    expect(paths).toContain('bundle/manifests/ops.vworkspace.io_operations.yaml');
    expect(paths).toContain('bundle/manifests/apps.vworkspace.io_applicationinstances.yaml');
    expect(paths).toContain('bundle/manifests/ops.vworkspace.io_cronoperations.yaml');
    expect(paths).toContain('bundle/manifests/ops.vworkspace.io_watchoperations.yaml');
    expect(paths.filter((p) => p.startsWith('docs/api/'))).toHaveLength(4);
  });

  it('names a committed CRD that differs from the generated one', () => {
    const crd = 'bundle/manifests/ops.vworkspace.io_operations.yaml';
    const edited = (path: string) =>
      path === crd ? `${readRepoFile(path)}# hand edit\n` : readRepoFile(path);
    expect(staleFiles(edited)).toEqual([crd]);
  });

  it('names a missing CRD and keeps the prose around the generated doc section', () => {
    const crd = 'bundle/manifests/ops.vworkspace.io_cronoperations.yaml';
    expect(staleFiles((path) => (path === crd ? undefined : readRepoFile(path)))).toEqual([crd]);
    const doc = generatedFiles(readRepoFile).find((f) => f.path === 'docs/api/operation.md')!;
    expect(doc.content).toBe(readRepoFile('docs/api/operation.md'));
  });
});
