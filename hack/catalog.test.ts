// The file-based catalog: `opm validate` passes with nothing logged, the upgrade graph has one head per
// channel at the current version, the current version's olm.bundle is what `opm render bundle/` gives
// today, and the edge generator (hack/packaging/fbc.ts) builds replaces/skipRange chains.
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ROOT, readRepoFile } from './bundle.ts';
import {
  bundlePath,
  CATALOG_DIR,
  CHANNELS_PATH,
  PACKAGE_PATH,
  parseChannels,
  renderBundle,
  renderChannels,
  renderPackage,
} from './catalog.ts';
import { addVersion, type Channel, emptyChannel, heads } from './packaging/fbc.ts';
import { CHANNELS, DEFAULT_CHANNEL } from './packaging/manifests.ts';
import { logFindings, opmValidateFindings, runTool, toolPath } from './packaging/tools.ts';

const PKG = 'vworkspace-operator';
const version = (JSON.parse(readRepoFile('package.json')!) as { version: string }).version;
const channels = parseChannels(readRepoFile(CHANNELS_PATH));

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

describe('catalog/ in git', () => {
  it('has one olm.package whose default channel exists, generated from packaging/', () => {
    expect(readRepoFile(PACKAGE_PATH)).toBe(renderPackage());
    expect(channels.map((c) => c.name).sort()).toEqual([...CHANNELS].sort());
    expect(channels.some((c) => c.name === DEFAULT_CHANNEL)).toBe(true);
  });

  it('has channels.yaml in the generator format', () => {
    expect(readRepoFile(CHANNELS_PATH)).toBe(renderChannels(channels));
  });

  it('heads every channel with the current version and keeps a previous version for the upgrade edge', () => {
    for (const c of channels) {
      expect(heads(c).map((e) => e.name)).toEqual([`${PKG}.v${version}`]);
      expect(c.entries.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('has an olm.bundle file for every channel entry, and no other', () => {
    const names = new Set(channels.flatMap((c) => c.entries.map((e) => e.name)));
    const files = readdirSync(join(ROOT, CATALOG_DIR, 'bundles')).sort();
    expect(files).toEqual([...names].map((n) => `${n}.yaml`).sort());
    for (const n of names) {
      const doc = YAML.parse(readRepoFile(`${CATALOG_DIR}/bundles/${n}.yaml`)!.replace(/^---\n/, ''));
      expect(doc).toMatchObject({ schema: 'olm.bundle', package: PKG, name: n });
      // Empty image: OLM installs from the embedded objects, no bundle unpack Job.
      expect(doc.image).toBe('');
      expect(doc.properties.some((p: { type: string }) => p.type === 'olm.bundle.object')).toBe(true);
    }
  });

  it("holds the current version's olm.bundle as `opm render bundle/` renders it today (else: npm run bundle)", () => {
    expect(readRepoFile(bundlePath(version))).toBe(renderBundle('bundle'));
  });
});

describe('opm validate', () => {
  const validate = (dir: string) => opmValidateFindings(runTool(ROOT, 'opm', ['validate', dir]));

  it('passes catalog/ with nothing logged', () => {
    expect(validate('catalog')).toEqual([]);
  });

  it('fails a catalog whose channel has two heads', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-catalog-'));
    try {
      cpSync(join(ROOT, 'catalog'), dir, { recursive: true });
      const broken = channels.map((c) => ({ ...c, entries: c.entries.map((e) => ({ name: e.name })) }));
      writeFileSync(join(dir, PKG, 'channels.yaml'), renderChannels(broken));
      const findings = validate(dir);
      expect(findings.map((f) => f.message).join('\n')).toMatch(/multiple channel heads/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails with how to build the tools when they are missing, never skips', () => {
    expect(() => toolPath(join(tmpdir(), 'no-such-checkout'), 'opm')).toThrow(/run `make tools`/);
  });

  it('finds warning lines in tool logs', () => {
    expect(
      logFindings('time="x" level=info msg="ok"\ntime="x" level=warning msg="careful"\nWARN something'),
    ).toEqual([
      { level: 'warning', message: 'time="x" level=warning msg="careful"' },
      { level: 'warning', message: 'WARN something' },
    ]);
  });
});
