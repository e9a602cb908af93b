// The catalog template (catalog/template.yaml) and its edges: generated parts are fresh, the upgrade graph
// has one head per channel at the current version, each CSV carries its version's edges, every bundle is
// an image by digest, and the template renders (offline, from the bundle directories its images hold)
// to a catalog `opm validate` accepts with olm.csv.metadata and no olm.bundle.object.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pinnedImages, readRepoFile, TEMPLATE_PATH } from './bundle.ts';
import { expectedTemplate, packageBlob, renameRegistry, templateText, withVersion } from './catalog.ts';
import {
  committedTemplate,
  RELEASE_REGISTRY,
  refForVersion,
  renderCatalogFor,
  versionBundle,
  withImages,
} from './images/build.ts';
import { addVersion, type Channel, emptyChannel, heads, parseFbc } from './packaging/fbc.ts';

import { CHANNELS, DEFAULT_CHANNEL } from './packaging/manifests.ts';
import { communityCatalogs, openshiftVersionsAnnotation } from './packaging/openshift.ts';
import { edgesFor, parseTemplate, templateVersions } from './packaging/template.ts';
import { logFindings, toolPath } from './packaging/tools.ts';

const PKG = 'vworkspace-operator';
const version = (JSON.parse(readRepoFile('package.json')!) as { version: string }).version;
const template = committedTemplate();
const channels = template.channels;

/** A channel built by adding `versions` in order. */
function channelOf(...versions: string[]): Channel {
  return versions.reduce((c, v) => addVersion(c, v), emptyChannel(PKG, 'stable-v0'));
}

describe('edge generator', () => {
  it('makes each new version replace the head and skip every earlier version of its major', () => {
    const c = channelOf('0.0.9', '0.1.0', '0.2.0');
    expect(c.entries).toEqual([
      { name: 'vworkspace-operator.v0.0.9', skipRange: '>=0.0.0 <0.0.9' },
      {
        name: 'vworkspace-operator.v0.1.0',
        replaces: 'vworkspace-operator.v0.0.9',
        skipRange: '>=0.0.0 <0.1.0',
      },
      {
        name: 'vworkspace-operator.v0.2.0',
        replaces: 'vworkspace-operator.v0.1.0',
        skipRange: '>=0.0.0 <0.2.0',
      },
    ]);
    expect(heads(c).map((e) => e.name)).toEqual(['vworkspace-operator.v0.2.0']);
    expect(addVersion(c, '1.0.0').entries.at(-1)).toEqual({
      name: 'vworkspace-operator.v1.0.0',
      replaces: 'vworkspace-operator.v0.2.0',
      skipRange: '>=1.0.0 <1.0.0',
    });
  });

  it('keeps released entries as they are and refuses versions older than the head', () => {
    const c = channelOf('0.0.9', '0.1.0');
    expect(addVersion(c, '0.0.9')).toBe(c);
    expect(() => addVersion(c, '0.0.10')).toThrow(/not newer than stable-v0's head 0.1.0/);
    expect(() => addVersion(c, 'v0.2')).toThrow(/not a release version/);
  });

  it('refuses to extend a channel that already has two heads', () => {
    const broken: Channel = {
      ...emptyChannel(PKG, 'stable-v0'),
      entries: [{ name: 'vworkspace-operator.v0.0.9' }, { name: 'vworkspace-operator.v0.1.0' }],
    };
    expect(() => addVersion(broken, '0.2.0')).toThrow(/has 2 heads/);
  });
});

describe('catalog/template.yaml in git', () => {
  it('is what the sources make it: package from packaging/, bundle digests from the pins (npm run bundle)', () => {
    expect(template.package).toEqual(packageBlob());
    expect(readRepoFile(TEMPLATE_PATH)).toBe(templateText(expectedTemplate(template)));
  });

  it('has the channels of the bundle annotations, the default among them', () => {
    expect(channels.map((c) => c.name).sort()).toEqual([...CHANNELS].sort());
    expect(template.package.defaultChannel).toBe(DEFAULT_CHANNEL);
  });

  it('heads every channel with the current version and keeps a previous version for the upgrade edge', () => {
    for (const c of channels) {
      expect(heads(c).map((e) => e.name)).toEqual([`${PKG}.v${version}`]);
      expect(c.entries.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('names one bundle image by digest per version, and a different one for each', () => {
    const versions = templateVersions(template);
    const images = versions.map((v) => refForVersion(template, v));
    for (const ref of images)
      expect(ref).toMatch(/^quay\.io\/vworkspace\/vworkspace-operator-bundle@sha256:[a-f0-9]{64}$/);
    expect(new Set(images).size).toBe(versions.length);
    expect(template.bundles.every((b) => Object.keys(b).sort().join() === 'image,schema')).toBe(true);
  });

  it('gives each version the same edges in every channel, so its CSV can carry them', () => {
    expect(edgesFor(channels, PKG, '0.1.0')).toEqual({
      replaces: `${PKG}.v0.0.9`,
      skipRange: '>=0.0.0 <0.1.0',
    });
    const split = channels.map((c) =>
      c.name === 'candidate-v0' ? { ...c, entries: c.entries.map((e) => ({ name: e.name })) } : c,
    );
    expect(() => edgesFor(split, PKG, '0.1.0')).toThrow(/different upgrade edges/);
  });

  it('adds a version as the new head of the named channels', () => {
    const next = withVersion(template, '0.2.0', ['candidate-v0']);
    const candidate = next.channels.find((c) => c.name === 'candidate-v0')!;
    expect(heads(candidate).map((e) => e.name)).toEqual([`${PKG}.v0.2.0`]);
    expect(next.channels.find((c) => c.name === 'stable-v0')).toEqual(
      channels.find((c) => c.name === 'stable-v0'),
    );
  });

  it('keeps the template parseable and refuses a bundle that is not a digest reference', () => {
    expect(parseTemplate(readRepoFile(TEMPLATE_PATH)!)).toEqual(template);
    expect(() =>
      parseTemplate(
        readRepoFile(TEMPLATE_PATH)!.replace(
          /image: quay\.io\/vworkspace\/vworkspace-operator-bundle@sha256:\w+/,
          'image: quay.io/x/b:v1',
        ),
      ),
    ).toThrow(/not a digest reference/);
  });
});

describe('rendering', () => {
  /** The committed template rendered offline, from the bundle directories of its pinned images. */
  function renderPinned(t = template): { dir: string; fbc: ReturnType<typeof parseFbc> } {
    const dir = mkdtempSync(join(tmpdir(), 'vws-catalog-'));
    try {
      const bundleDirs: Record<string, string> = {};
      const refs: Record<string, string> = {};
      for (const v of templateVersions(t)) {
        bundleDirs[v] = join(dir, `bundle-${v}`);
        refs[v] = versionBundle(RELEASE_REGISTRY, v, pinnedImages(v), bundleDirs[v]).ref;
      }
      const configs = join(dir, 'configs');
      renderCatalogFor(configs, withImages(t, refs), bundleDirs);
      return { dir, fbc: parseFbc(readFileSync(join(configs, PKG, 'catalog.yaml'), 'utf8')) };
    } catch (err) {
      // A render that throws (the two-heads test expects it) leaves no directory behind.
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  it('renders to a catalog opm validates, bundles by image with olm.csv.metadata and no olm.bundle.object', () => {
    const { dir, fbc } = renderPinned();
    try {
      const bundles = fbc.filter((b) => b.schema === 'olm.bundle') as (ReturnType<typeof parseFbc>[number] & {
        properties: { type: string }[];
      })[];
      expect(bundles.map((b) => b.image)).toEqual(
        templateVersions(template).map((v) => refForVersion(template, v)),
      );
      for (const b of bundles) {
        expect(b.properties.map((p) => p.type)).toContain('olm.csv.metadata');
        expect(b.properties.map((p) => p.type)).not.toContain('olm.bundle.object');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails opm validate when a channel has two heads', () => {
    const broken = {
      ...template,
      channels: channels.map((c) => ({ ...c, entries: c.entries.map((e) => ({ name: e.name })) })),
    };
    expect(() => renderPinned(broken)).toThrow(/multiple channel heads/);
  });

  it('renames registries in rendered text both ways', () => {
    const text = `image: ${RELEASE_REGISTRY}/vworkspace-operator-bundle@sha256:${'a'.repeat(64)}`;
    const via = renameRegistry(text, RELEASE_REGISTRY, '127.0.0.1:5000/vworkspace');
    expect(via).toBe(`image: 127.0.0.1:5000/vworkspace/vworkspace-operator-bundle@sha256:${'a'.repeat(64)}`);
    expect(renameRegistry(via, '127.0.0.1:5000/vworkspace', RELEASE_REGISTRY)).toBe(text);
  });
});

describe('OpenShift releases from minKubeVersion', () => {
  it('maps Kubernetes 1.30 to OpenShift 4.17 and later', () => {
    expect(openshiftVersionsAnnotation('1.30.0')).toBe('v4.17');
    expect(communityCatalogs('1.30.0')).toEqual(['v4.17', 'v4.18', 'v4.19', 'v4.20']);
    expect(openshiftVersionsAnnotation('1.25')).toBe('v4.12');
    expect(() => communityCatalogs('1.99.0')).toThrow(/no known OpenShift release/);
    expect(() => openshiftVersionsAnnotation('latest')).toThrow(/not a version/);
  });
});

describe('tools', () => {
  it('fail with how to build the tools when they are missing, never skip', () => {
    expect(() => toolPath(join(tmpdir(), 'no-such-checkout'), 'opm')).toThrow(/run `make tools`/);
  });

  it('find warning lines in tool logs', () => {
    expect(
      logFindings('time="x" level=info msg="ok"\ntime="x" level=warning msg="careful"\nWARN something'),
    ).toEqual([
      { level: 'warning', message: 'time="x" level=warning msg="careful"' },
      { level: 'warning', message: 'WARN something' },
    ]);
  });
});
