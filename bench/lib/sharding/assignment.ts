// Which replica owns which namespace: the three ways of hashing keys onto members the ADR compares
// (docs/adr/0051-sharding-across-replicas.md), and the two numbers that tell them apart — how even the
// load is, and how many keys move when a member joins or leaves. Pure: keys and members are strings.

export type Scheme = 'modulo' | 'ring' | 'rendezvous' | 'bounded-rendezvous';
export const SCHEMES: readonly Scheme[] = ['modulo', 'ring', 'rendezvous', 'bounded-rendezvous'];

/**
 * FNV-1a over the UTF-16 code units, then murmur3's finalizer: FNV alone spreads similar names
 * (`ns-1`, `ns-2`) poorly over the high bits, and both the ring and rendezvous compare whole hashes.
 */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A consistent-hash ring: each member at `virtualNodes` points, a key goes to the next point clockwise. */
export interface Ring {
  points: readonly number[];
  owners: readonly string[];
}

export function buildRing(members: readonly string[], virtualNodes: number): Ring {
  const entries = members.flatMap((m) =>
    Array.from({ length: virtualNodes }, (_, i) => [hash32(`${m}#${i}`), m] as const),
  );
  // Ties (two points on one hash) break by member name so the ring does not depend on input order.
  entries.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return { points: entries.map((e) => e[0]), owners: entries.map((e) => e[1]) };
}

function ringOwner(ring: Ring, key: string): string {
  const h = hash32(key);
  let lo = 0;
  let hi = ring.points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ring.points[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return ring.owners[lo === ring.points.length ? 0 : lo]!;
}

/** Highest random weight: every member scores the key; ranked best first (ties by name). */
function rendezvousRanking(members: readonly string[], key: string): string[] {
  const scored = members.map((m) => [hash32(`${m}\u0000${key}`), m] as const);
  scored.sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return scored.map((e) => e[1]);
}

/**
 * Rendezvous with a cap of ⌈keys / members⌉ per member (consistent hashing with bounded loads): keys in
 * their hash order, each to the best-ranked member that still has room. For a few keys (shards), where
 * plain rendezvous leaves one member with many more than another.
 */
function boundedRendezvous(keys: readonly string[], members: readonly string[]): Map<string, string> {
  const cap = Math.ceil(keys.length / members.length);
  const load = new Map<string, number>(members.map((m) => [m, 0]));
  const out = new Map<string, string>();
  const ordered = [...keys].sort((a, b) => hash32(a) - hash32(b) || (a < b ? -1 : 1));
  for (const k of ordered) {
    const m = rendezvousRanking(members, k).find((c) => load.get(c)! < cap)!;
    load.set(m, load.get(m)! + 1);
    out.set(k, m);
  }
  return new Map(keys.map((k) => [k, out.get(k)!]));
}

export interface AssignOptions {
  /** Points per member on the ring (default 100). */
  virtualNodes?: number;
}

/**
 * Every key's owner among `members`. Modulo uses the members' sorted order, as a StatefulSet's ordinals
 * would: the key's hash modulo the member count.
 */
export function assign(
  scheme: Scheme,
  keys: readonly string[],
  members: readonly string[],
  opts: AssignOptions = {},
): Map<string, string> {
  if (members.length === 0) throw new Error('assign: no members to assign keys to');
  const out = new Map<string, string>();
  if (scheme === 'modulo') {
    const sorted = [...members].sort();
    for (const k of keys) out.set(k, sorted[hash32(k) % sorted.length]!);
  } else if (scheme === 'ring') {
    const ring = buildRing(members, opts.virtualNodes ?? 100);
    for (const k of keys) out.set(k, ringOwner(ring, k));
  } else if (scheme === 'rendezvous') {
    for (const k of keys) out.set(k, rendezvousRanking(members, k)[0]!);
  } else {
    return boundedRendezvous(keys, members);
  }
  return out;
}

/** The most keys any member owns ÷ the mean (1 is perfectly even). */
export function imbalance(owners: ReadonlyMap<string, string>, members: readonly string[]): number {
  const counts = new Map<string, number>(members.map((m) => [m, 0]));
  for (const m of owners.values()) counts.set(m, (counts.get(m) ?? 0) + 1);
  const max = Math.max(...counts.values());
  return max / (owners.size / members.length);
}

/** The keys whose owner differs between two assignments. */
export function moved(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] {
  return [...before.keys()].filter((k) => before.get(k) !== after.get(k));
}
