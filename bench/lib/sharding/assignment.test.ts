import { describe, expect, it } from 'vitest';
import { assign, hash32, imbalance, moved, SCHEMES } from './assignment.ts';
import { members, namespaces, place } from './measure.ts';

const keys = namespaces(1000, 7);

describe('assign', () => {
  it.each(SCHEMES)('%s gives every key one of the members, whatever order the members come in', (scheme) => {
    const ms = members(5);
    const a = assign(scheme, keys, ms);
    const b = assign(scheme, keys, [...ms].reverse());
    expect([...a.keys()]).toEqual(keys);
    for (const owner of a.values()) expect(ms).toContain(owner);
    expect(b).toEqual(a);
  });

  it('refuses to assign to nobody', () => {
    expect(() => assign('rendezvous', keys, [])).toThrow(/no members/);
  });

  it.each(['ring', 'rendezvous'] as const)('%s moves only the leaving member’s keys', (scheme) => {
    const ms = members(5);
    const before = assign(scheme, keys, ms);
    const gone = ms[2]!;
    const after = assign(
      scheme,
      keys,
      ms.filter((m) => m !== gone),
    );
    const m = moved(before, after);
    expect(m.length).toBeGreaterThan(0);
    expect(m.every((k) => before.get(k) === gone)).toBe(true);
    expect([...before.entries()].filter(([, o]) => o === gone).length).toBe(m.length);
  });

  it.each(['ring', 'rendezvous'] as const)('%s moves keys only to a joining member', (scheme) => {
    const ms = members(4);
    const before = assign(scheme, keys, ms);
    const after = assign(scheme, keys, [...ms, 'newcomer']);
    const m = moved(before, after);
    expect(m.length).toBeGreaterThan(0);
    expect(m.every((k) => after.get(k) === 'newcomer')).toBe(true);
  });

  it('modulo moves most keys when a member joins (the reason to avoid it)', () => {
    // A key stays only when h mod 3 = h mod 4, i.e. for 3 of every 12 hash values.
    const before = assign('modulo', keys, members(3));
    const after = assign('modulo', keys, members(4));
    expect(moved(before, after).length / keys.length).toBeGreaterThan(0.6);
  });

  it('bounded-rendezvous never gives a member more than its share rounded up', () => {
    for (const n of [2, 3, 5, 7]) {
      const shards = Array.from({ length: 32 }, (_, i) => `shard-${i}`);
      const owners = assign('bounded-rendezvous', shards, members(n));
      const counts = new Map<string, number>();
      for (const o of owners.values()) counts.set(o, (counts.get(o) ?? 0) + 1);
      expect(Math.max(...counts.values())).toBeLessThanOrEqual(Math.ceil(32 / n));
    }
  });

  it('plain rendezvous over 1,000 namespaces stays within a few standard deviations of even', () => {
    // 1,000 keys over 3 members: each count is Binomial(1000, 1/3), σ ≈ 15 around 333; 4σ is 1.18×.
    for (let seed = 1; seed <= 20; seed++) {
      const ms = members(3);
      expect(imbalance(assign('rendezvous', namespaces(1000, seed), ms), ms)).toBeLessThan(1.18);
    }
  });
});

describe('imbalance and moved', () => {
  it('divide the largest load by the mean, counting members that own nothing', () => {
    const owners = new Map([
      ['a', 'x'],
      ['b', 'x'],
      ['c', 'x'],
      ['d', 'y'],
    ]);
    expect(imbalance(owners, ['x', 'y'])).toBe(1.5);
    expect(imbalance(owners, ['x', 'y', 'z'])).toBeCloseTo(3 / (4 / 3));
  });

  it('list the keys whose owner changed', () => {
    const a = new Map([
      ['a', 'x'],
      ['b', 'y'],
    ]);
    const b = new Map([
      ['a', 'x'],
      ['b', 'x'],
    ]);
    expect(moved(a, b)).toEqual(['b']);
  });
});

describe('fixed shards', () => {
  it('keep a namespace on its shard whatever the replicas do, so only whole shards move', () => {
    const p = { scheme: 'rendezvous' as const, shards: 32 } as const;
    const shardOf = (k: string) => hash32(k) % 32;
    const before = place(p, keys, members(3));
    const after = place(p, keys, members(4));
    // Every namespace of one shard goes to the same replica, before and after.
    for (const placement of [before, after]) {
      const byShard = new Map<number, Set<string>>();
      for (const k of keys)
        byShard.set(shardOf(k), (byShard.get(shardOf(k)) ?? new Set()).add(placement.get(k)!));
      for (const owners of byShard.values()) expect(owners.size).toBe(1);
    }
  });
});
