import { FakeClock } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import type { AccessAttributes } from '../rbac/profiles.ts';
import { AccessCache, type AccessReviewer } from './access.ts';

/** A reviewer whose answers the test releases: counts the reviews it was asked for. */
function heldReviewer() {
  const waiting: ((allowed: boolean) => void)[] = [];
  let asked = 0;
  const reviewer: AccessReviewer = {
    allowed: () => {
      asked++;
      return new Promise<boolean>((ok) => waiting.push(ok));
    },
  };
  return {
    reviewer,
    asked: () => asked,
    answer(allowed: boolean) {
      for (const ok of waiting.splice(0)) ok(allowed);
    },
  };
}

const createJobs: AccessAttributes = { namespace: 'team', group: 'batch', resource: 'jobs', verb: 'create' };

describe('AccessCache', () => {
  it('workers that miss together share one review, and the answer is cached', async () => {
    const r = heldReviewer();
    const cache = new AccessCache(r.reviewer, { clock: new FakeClock() });
    const answers = Promise.all([
      cache.allowed(createJobs),
      cache.allowed(createJobs),
      cache.allowed(createJobs),
    ]);
    expect(r.asked()).toBe(1);
    r.answer(true);
    expect(await answers).toEqual([true, true, true]);
    expect(await cache.allowed(createJobs)).toBe(true);
    expect(r.asked()).toBe(1);
  });

  it('a grant while a review runs: later callers ask again, and the stale answer is not kept', async () => {
    const r = heldReviewer();
    const cache = new AccessCache(r.reviewer, { clock: new FakeClock() });
    const before = cache.allowed(createJobs);
    cache.invalidate('team');
    const after = cache.allowed(createJobs);
    expect(r.asked()).toBe(2);
    r.answer(false);
    expect(await before).toBe(false);
    expect(await after).toBe(false);
    // The first review started before the invalidation; only the second one's answer may be kept.
    const third = cache.allowed(createJobs);
    expect(r.asked()).toBe(2);
    expect(await third).toBe(false);
  });

  it('a failed review is not cached: the next call asks again', async () => {
    let asked = 0;
    const cache = new AccessCache(
      {
        allowed: async () => {
          asked++;
          if (asked === 1) throw new Error('connection refused');
          return true;
        },
      },
      { clock: new FakeClock() },
    );
    await expect(cache.allowed(createJobs)).rejects.toThrow('connection refused');
    expect(await cache.allowed(createJobs)).toBe(true);
    expect(asked).toBe(2);
  });

  it('expires answers after the TTL', async () => {
    const clock = new FakeClock();
    let asked = 0;
    const cache = new AccessCache(
      {
        allowed: async () => {
          asked++;
          return true;
        },
      },
      { clock, ttlMs: 1000 },
    );
    await cache.allowed(createJobs);
    await clock.advance(999);
    await cache.allowed(createJobs);
    expect(asked).toBe(1);
    await clock.advance(1);
    await cache.allowed(createJobs);
    expect(asked).toBe(2);
  });
});
