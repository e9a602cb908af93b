import { describe, expect, it } from 'vitest';
import { FakeClock, realClock, sleep } from './clock.ts';

const T0 = Date.UTC(2025, 0, 1);

describe('FakeClock', () => {
  it('stands still until advanced', () => {
    const c = new FakeClock(T0);
    expect(c.now().getTime()).toBe(T0);
    c.advance(1500);
    expect(c.now().getTime()).toBe(T0 + 1500);
    c.advanceTo(new Date(T0 + 5000));
    expect(c.now().getTime()).toBe(T0 + 5000);
  });

  it('fires due timers in due order (ties in creation order), each seeing its own due time', () => {
    const c = new FakeClock(T0);
    const log: string[] = [];
    const note = (name: string) => () => log.push(`${name}@${c.now().getTime() - T0}`);
    c.setTimer(300, note('c'));
    c.setTimer(new Date(T0 + 100), note('a'));
    c.setTimer(300, note('d'));
    c.setTimer(200, note('b'));
    c.setTimer(1000, note('later'));
    expect(c.advance(300)).toBe(4);
    expect(log).toEqual(['a@100', 'b@200', 'c@300', 'd@300']);
    expect(c.pending()).toBe(1);
    expect(c.nextDue()).toEqual(new Date(T0 + 1000));
  });

  it('fires timers set by firing timers when they fall due within the same advance', () => {
    const c = new FakeClock(T0);
    const log: number[] = [];
    const tick = () => {
      log.push(c.now().getTime() - T0);
      if (log.length < 10) c.setTimer(100, tick);
    };
    c.setTimer(100, tick);
    c.advance(350);
    expect(log).toEqual([100, 200, 300]);
    expect(c.now().getTime()).toBe(T0 + 350);
  });

  it('cancelled timers never fire; cancel is idempotent', () => {
    const c = new FakeClock(T0);
    let fired = false;
    const t = c.setTimer(10, () => {
      fired = true;
    });
    t.cancel();
    t.cancel();
    c.advance(100);
    expect(fired).toBe(false);
    expect(c.pending()).toBe(0);
  });

  it('a timer for the past or for now fires at the next advance, even advance(0)', () => {
    const c = new FakeClock(T0);
    let n = 0;
    c.setTimer(new Date(T0 - 5000), () => n++);
    c.setTimer(-10, () => n++);
    expect(n).toBe(0);
    expect(c.advance(0)).toBe(2);
  });

  it('refuses to go backwards', () => {
    const c = new FakeClock(T0);
    expect(() => c.advance(-1)).toThrow(RangeError);
    expect(() => c.advanceTo(T0 - 1)).toThrow(RangeError);
  });

  it('advanceAsync lets promise work started by a timer schedule its follow-up in time', async () => {
    const c = new FakeClock(T0);
    const log: number[] = [];
    const step = async () => {
      await Promise.resolve();
      log.push(c.now().getTime() - T0);
      c.setTimer(100, () => void step());
    };
    c.setTimer(100, () => void step());
    await c.advanceAsync(300);
    expect(log).toEqual([100, 200, 300]);
  });
});

describe('sleep', () => {
  it('resolves when the clock reaches the delay', async () => {
    const c = new FakeClock(T0);
    let done = false;
    const p = sleep(c, 1000).then(() => {
      done = true;
    });
    await c.advanceAsync(999);
    expect(done).toBe(false);
    await c.advanceAsync(1);
    await p;
    expect(done).toBe(true);
  });

  it('rejects on abort and leaves no timer behind', async () => {
    const c = new FakeClock(T0);
    const ac = new AbortController();
    const p = sleep(c, 1000, ac.signal);
    ac.abort(new Error('shutting down'));
    await expect(p).rejects.toThrow('shutting down');
    expect(c.pending()).toBe(0);
    await expect(sleep(c, 5, ac.signal)).rejects.toThrow('shutting down');
  });
});

describe('realClock', () => {
  it('fires absolute and relative timers; cancelled ones stay silent', async () => {
    const log: string[] = [];
    const cancelled = realClock.setTimer(1, () => log.push('cancelled'));
    cancelled.cancel();
    await new Promise<void>((resolve) => {
      const note = (what: string) => () => {
        log.push(what);
        if (log.length === 2) resolve();
      };
      realClock.setTimer(new Date(Date.now() + 5), note('absolute'));
      realClock.setTimer(5, note('relative'));
    });
    expect(log.sort()).toEqual(['absolute', 'relative']);
  });

  it('a delay beyond setTimeout’s 32-bit limit does not fire at once', async () => {
    let fired = false;
    const far = realClock.setTimer(2 ** 31 + 10_000, () => {
      fired = true;
    });
    const farDate = realClock.setTimer(new Date(Date.now() + 40 * 24 * 3_600_000), () => {
      fired = true;
    });
    await new Promise<void>((resolve) => realClock.setTimer(30, resolve));
    expect(fired).toBe(false);
    far.cancel();
    farDate.cancel();
  });
});
