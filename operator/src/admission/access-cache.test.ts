import type { KubeClient } from '@vworkspace/runtime';
import { FakeClock } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import { AccessCache } from './access-cache.ts';
import { reviewAccess } from './sar.ts';

const ALLOWED = { allowed: true };

describe('AccessCache', () => {
  it('keeps an allowing answer for the TTL and forgets it after', () => {
    const clock = new FakeClock();
    const cache = new AccessCache(10, clock);
    cache.remember('k', ALLOWED);
    clock.advanceSync(9_999);
    expect(cache.get('k')).toEqual(ALLOWED);
    clock.advanceSync(1);
    expect(cache.get('k')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('never keeps a denial, and keeps nothing with a TTL of 0', () => {
    const clock = new FakeClock();
    const cache = new AccessCache(10, clock);
    cache.remember('no', { allowed: false, reason: 'RBAC: no' });
    expect(cache.get('no')).toBeUndefined();
    const off = new AccessCache(0, clock);
    off.remember('k', ALLOWED);
    expect(off.get('k')).toBeUndefined();
  });

  it('drops the oldest answer beyond its bound', () => {
    const clock = new FakeClock();
    const cache = new AccessCache(10, clock, 2);
    cache.remember('a', ALLOWED);
    cache.remember('b', ALLOWED);
    cache.remember('a', ALLOWED); // refreshed: now the newest
    cache.remember('c', ALLOWED);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([ALLOWED, undefined, ALLOWED]);
  });
});

describe('reviewAccess with a cache', () => {
  /** A client answering SubjectAccessReviews from `allow(spec)`, counting the reviews it was asked. */
  function reviewer(allow: (spec: Record<string, unknown>) => boolean) {
    const asked: Record<string, unknown>[] = [];
    const client = {
      request: async (req: { body?: { spec: Record<string, unknown> } }) => {
        const spec = req.body?.spec ?? {};
        asked.push(spec);
        return { status: { allowed: allow(spec) } };
      },
    } as unknown as KubeClient; // only request() is used by reviewAccess
    return { client, asked };
  }
  const check = { verb: 'restore', name: 'shop' };

  it('asks once for the same user and check while the answer is fresh', async () => {
    const { client, asked } = reviewer(() => true);
    const cache = new AccessCache(10, new FakeClock());
    const alice = { username: 'alice', groups: ['team-a'] };
    for (let i = 0; i < 3; i++)
      expect(await reviewAccess(client, alice, 'shop', check, cache)).toEqual({ ok: true, value: ALLOWED });
    expect(asked).toHaveLength(1);
  });

  it('asks again for another user, group set, namespace or object, and after every denial', async () => {
    const { client, asked } = reviewer((spec) => spec.user === 'alice');
    const cache = new AccessCache(10, new FakeClock());
    await reviewAccess(client, { username: 'alice', groups: ['team-a'] }, 'shop', check, cache);
    await reviewAccess(client, { username: 'alice', groups: ['team-b'] }, 'shop', check, cache);
    await reviewAccess(client, { username: 'alice', groups: ['team-a'] }, 'wiki', check, cache);
    await reviewAccess(
      client,
      { username: 'alice', groups: ['team-a'] },
      'shop',
      { ...check, name: 'blog' },
      cache,
    );
    const bob = { username: 'bob' };
    expect((await reviewAccess(client, bob, 'shop', check, cache)).ok).toBe(true);
    await reviewAccess(client, bob, 'shop', check, cache);
    expect(asked).toHaveLength(6);
  });
});
