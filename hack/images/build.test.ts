// The catalog template's image-only bundles pair with its unpublished versions in order; a build
// substitutes the images it made for them, and a published version's rendered entry stays as it is.
import { describe, expect, it } from 'vitest';
import type { CatalogTemplate } from '../packaging/template.ts';
import {
  catalogVersions,
  committedTemplate,
  openVersions,
  publishedBundles,
  refForVersion,
  withImages,
} from './build.ts';
import { platformIndex } from './oci.ts';

const REF = (c: string) => `quay.io/vworkspace/vworkspace-operator-bundle@sha256:${c.repeat(64)}`;

describe('template images', () => {
  const t = committedTemplate();

  it('pairs image-only bundles with the unpublished versions, oldest first', () => {
    const built = withImages(t, { '0.0.9': REF('a'), '0.1.0': REF('b') });
    expect(refForVersion(built, '0.0.9')).toBe(REF('a'));
    expect(refForVersion(built, '0.1.0')).toBe(REF('b'));
    expect(withImages(built, {})).toEqual(built);
  });

  it('keeps a published version rendered and pairs the rest', () => {
    const rendered = {
      schema: 'olm.bundle' as const,
      name: 'vworkspace-operator.v0.0.9',
      image: REF('c'),
      properties: [{ type: 'olm.package', value: { packageName: 'vworkspace-operator', version: '0.0.9' } }],
    };
    const published: CatalogTemplate = {
      ...t,
      bundles: [rendered, { schema: 'olm.bundle', image: REF('d') }],
    };
    expect(openVersions(published)).toEqual(['0.1.0']);
    expect(refForVersion(published, '0.0.9')).toBe(REF('c'));
    expect(withImages(published, { '0.1.0': REF('e') }).bundles).toEqual([
      rendered,
      { schema: 'olm.bundle', image: REF('e') },
    ]);
  });

  it('refuses a template whose images and versions do not pair', () => {
    const short: CatalogTemplate = { ...t, bundles: t.bundles.slice(1) };
    expect(() => refForVersion(short, '0.1.0')).toThrow(/1 bundle images for 2 versions/);
  });

  it('reads packaging/published.yaml: absent is none, entries must be digests', () => {
    expect(publishedBundles(() => undefined)).toEqual({});
    expect(publishedBundles(() => `"0.1.0": ${REF('a')}\n`)).toEqual({ '0.1.0': REF('a') });
    expect(() => publishedBundles(() => '"0.1.0": quay.io/x:v0.1.0\n')).toThrow(/by digest/);
  });

  it('lists the catalog versions oldest first', () => {
    expect(catalogVersions()).toEqual(['0.0.9', '0.1.0']);
  });
});

describe('platform index', () => {
  it('names the image manifest and its platform; its digest is what the CSV references', () => {
    const manifest = Buffer.from('{"schemaVersion":2}');
    const image = {
      layers: [],
      config: Buffer.from('{}'),
      configDigest: 'sha256:x',
      manifest,
      digest: 'sha256:m',
    };
    const idx = platformIndex(image, { os: 'linux', architecture: 'amd64' });
    expect(JSON.parse(idx.index.toString())).toEqual({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: 'sha256:m',
          size: manifest.length,
          platform: { architecture: 'amd64', os: 'linux' },
        },
      ],
    });
    expect(idx.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
  });
});
