// The file-based catalog's blobs, pure: any blob as opm renders it, and the package and channel blobs. opm renders each version's olm.bundle; the
// upgrade graph (which entry replaces which, what each skips) is ours: adding a version to a channel
// makes it replace the channel's current head and skip every earlier version of the same major, so
// every installed version reaches the newest in one step and `replaces` keeps the chain OLM walks.
import YAML from 'yaml';

/** Any file-based catalog blob, as `opm render` writes it: the fields the image and mirror code read. */
export interface FbcBlob {
  schema?: string;
  name?: string;
  package?: string;
  image?: string;
  relatedImages?: { name?: string; image: string }[];
  entries?: { name: string; replaces?: string; skips?: string[]; skipRange?: string }[];
}

/** `opm render -o yaml` output: one blob per document. */
export function parseFbc(yaml: string): FbcBlob[] {
  return YAML.parseAllDocuments(yaml)
    .map((d) => d.toJS() as FbcBlob | null)
    .filter((b): b is FbcBlob => b !== null);
}

export interface ChannelEntry {
  name: string;
  replaces?: string;
  skips?: string[];
  skipRange?: string;
}

export interface Channel {
  schema: 'olm.channel';
  package: string;
  name: string;
  entries: ChannelEntry[];
}

export interface PackageBlob {
  schema: 'olm.package';
  name: string;
  defaultChannel: string;
  description: string;
  icon: { base64data: string; mediatype: string };
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

export function parseVersion(v: string): [number, number, number] {
  const m = SEMVER.exec(v);
  if (!m) throw new Error(`${JSON.stringify(v)} is not a release version (x.y.z)`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

export function bundleName(pkg: string, version: string): string {
  return `${pkg}.v${version}`;
}

export function versionOf(pkg: string, name: string): string {
  const prefix = `${pkg}.v`;
  if (!name.startsWith(prefix)) throw new Error(`bundle ${name} is not of package ${pkg}`);
  return name.slice(prefix.length);
}

/** Entries that nothing in the channel replaces or skips: exactly one for a valid channel. */
export function heads(channel: Channel): ChannelEntry[] {
  const superseded = new Set<string>();
  for (const e of channel.entries) {
    if (e.replaces) superseded.add(e.replaces);
    for (const s of e.skips ?? []) superseded.add(s);
  }
  return channel.entries.filter((e) => !superseded.has(e.name));
}

/**
 * The channel with `version` added as its new head. Adding a version that is already there returns the
 * channel unchanged (released entries are immutable); adding one older than the head is refused, as
 * OLM would never offer it.
 */
export function addVersion(channel: Channel, version: string): Channel {
  const name = bundleName(channel.package, version);
  if (channel.entries.some((e) => e.name === name)) return channel;
  const hs = heads(channel);
  if (hs.length > 1)
    throw new Error(`channel ${channel.name} has ${hs.length} heads: ${hs.map((h) => h.name).join(', ')}`);
  const head = hs[0];
  const entry: ChannelEntry = { name };
  if (head) {
    const headVersion = versionOf(channel.package, head.name);
    if (compareVersions(version, headVersion) <= 0)
      throw new Error(`${version} is not newer than ${channel.name}'s head ${headVersion}`);
    entry.replaces = head.name;
  }
  const [major] = parseVersion(version);
  entry.skipRange = `>=${major}.0.0 <${version}`;
  return { ...channel, entries: [...channel.entries, entry] };
}

export function emptyChannel(pkg: string, name: string): Channel {
  return { schema: 'olm.channel', package: pkg, name, entries: [] };
}
