import { afterEach, describe, expect, it, vi } from 'vitest';
import { Backoff } from './backoff.ts';
import { FakeClock, realClock, sleep } from './clock.ts';

describe('FakeClock', () => {
  it('fires timers in due order (ties by creation) and skips cleared ones', () => {
    const c = new FakeClock(0);
    const fired: string[] = [];
    c.setTimeout(() => fired.push('b'), 20);
    c.setTimeout(() => fired.push('a'), 10);
    const h = c.setTimeout(() => fired.push('x'), 15);
    c.setTimeout(() => fired.push('c'), 20);
    c.clearTimeout(h);
    c.advanceSync(19);
    expect(fired).toEqual(['a']);
    expect(c.now()).toBe(19);
    c.advanceSync(1);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('advance runs promise continuations between timers, so chained sleeps finish inside the window', async () => {
    const c = new FakeClock(0);
    const times: number[] = [];
    void (async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(c, 100);
        times.push(c.now());
      }
    })();
    await c.advance(300);
    expect(times).toEqual([100, 200, 300]);
  });

  it('sleep resolves early when aborted, and at once when already aborted', async () => {
    const c = new FakeClock(0);
    const ac = new AbortController();
    let done = false;
    const p = sleep(c, 1000, ac.signal).then(() => {
      done = true;
    });
    ac.abort();
    await p;
    expect(done).toBe(true);
    expect(c.pending).toBe(0);
    await sleep(c, 1000, ac.signal);
    await sleep(realClock, 1);
  });

  it('hasTimerAt tells whether a timer is due at exactly that instant', async () => {
    const c = new FakeClock(1000);
    const h = c.setTimeout(() => undefined, 500);
    expect([c.hasTimerAt(1500), c.hasTimerAt(1499), c.hasTimerAt(1501)]).toEqual([true, false, false]);
    c.clearTimeout(h);
    expect(c.hasTimerAt(1500)).toBe(false);
  });
});

describe('Backoff', () => {
  it('doubles up to the cap, applies jitter, and resets', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 500, jitter: 0.5, random: () => 1 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([150, 300, 600, 750, 750]);
    b.reset();
    expect(b.next()).toBe(150);
  });
});

describe('realClock long delays', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('does not fire a delay beyond setTimeout 32-bit range early (waits in hops)', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const thirtyDays = 30 * 24 * 3600 * 1000;
    let fired = false;
    realClock.setTimeout(() => {
      fired = true;
    }, thirtyDays);
    vi.advanceTimersByTime(2 ** 31 - 1);
    expect(fired).toBe(false);
    vi.advanceTimersByTime(thirtyDays - (2 ** 31 - 1) - 1);
    expect(fired).toBe(false);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(true);
  });

  it('cancels a long delay between hops', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let fired = false;
    const h = realClock.setTimeout(() => {
      fired = true;
    }, 2 ** 32);
    vi.advanceTimersByTime(2 ** 31);
    realClock.clearTimeout(h);
    vi.advanceTimersByTime(2 ** 32);
    expect(fired).toBe(false);
  });
});
