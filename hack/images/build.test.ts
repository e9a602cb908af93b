// Released versions are not rebuilt: their committed catalog entry, pointed at the published bundle
// image, must be exactly what `opm render` of that image gives (the catalog image then needs no opm pull).
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { renderBundle } from '../catalog.ts';
import { catalogVersions, publishedBundles, publishedEntry } from './build.ts';

const REF = `quay.io/vworkspace/vworkspace-operator-bundle@sha256:${'a'.repeat(64)}`;

describe('published bundles', () => {
  it('points a committed entry at its bundle image as opm render --alpha-image-ref-template does', () => {
    const committed = renderBundle('bundle');
    const expected = YAML.parse(renderBundle('bundle', REF).replace(/^---\n/, ''));
    expect(YAML.parse(publishedEntry(committed, REF).replace(/^---\n/, ''))).toEqual(expected);
  });

  it('reads packaging/published.yaml: absent is none, entries must be digests', () => {
    expect(publishedBundles(() => undefined)).toEqual({});
    expect(publishedBundles(() => `"0.1.0": ${REF}\n`)).toEqual({ '0.1.0': REF });
    expect(() => publishedBundles(() => '"0.1.0": quay.io/x:v0.1.0\n')).toThrow(/by digest/);
  });

  it('lists the catalog versions oldest first', () => {
    const versions = catalogVersions();
    expect(versions).toContain('0.1.0');
    expect([...versions].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))).toEqual(versions);
  });
});
