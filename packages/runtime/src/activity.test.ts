import { describe, expect, it } from 'vitest';
import { Activity } from './activity.ts';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { Trailing } from './trailing.ts';

describe('Activity', () => {
  it('is quiet from the start, and quietMs after the last touch', () => {
    const clock = new FakeClock();
    const a = new Activity({ quietMs: 1_000, clock });
    expect(a.quietFrom()).toBeLessThanOrEqual(clock.now());
    a.touch();
    expect(a.quietFrom()).toBe(clock.now() + 1_000);
  });

  it('lull waits for quiet, is pushed back by each touch, and ends at the deadline at the latest', async () => {
    const clock = new FakeClock();
    const a = new Activity({ quietMs: 1_000, clock });
    const start = clock.now();
    let ended: number | undefined;
    a.touch();
    void a.lull(start + 5_000).then(() => {
      ended = clock.now();
    });
    await clock.advance(900);
    a.touch(); // quiet from start + 1,900 now
    await clock.advance(999);
    expect(ended).toBeUndefined();
    await clock.advance(1);
    expect(ended).toBe(start + 1_900);

    // Touched all along: the deadline ends the wait.
    let capped: number | undefined;
    const t0 = clock.now();
    a.touch();
    void a.lull(t0 + 3_000).then(() => {
      capped = clock.now();
    });
    for (let i = 0; i < 10 && capped === undefined; i++) {
      await clock.advance(500);
      a.touch();
    }
    expect(capped).toBe(t0 + 3_000);
  });

  it('lull returns at once when quiet, or when the signal aborts', async () => {
    const clock = new FakeClock();
    const a = new Activity({ quietMs: 1_000, clock });
    await a.lull(clock.now() + 60_000); // never touched: quiet
    a.touch();
    const abort = new AbortController();
    let done = false;
    void a.lull(clock.now() + 60_000, abort.signal).then(() => {
      done = true;
    });
    await flushMicrotasks();
    expect(done).toBe(false);
    abort.abort();
    await flushMicrotasks();
    expect(done).toBe(true);
  });
});

describe('Trailing', () => {
  function setup(batchMs = 100, maxMs = 10_000) {
    const clock = new FakeClock();
    const activity = new Activity({ quietMs: 1_000, clock });
    const released: [string, number][] = [];
    const t = new Trailing<string>(batchMs, { activity, maxMs }, (k) => released.push([k, clock.now()]));
    return { clock, activity, released, t, start: clock.now() };
  }

  it('without activity, releases each key batchMs after it was first added, once', async () => {
    const { clock, released, t, start } = setup();
    t.add('a');
    await clock.advance(50);
    t.add('a');
    t.add('b');
    await clock.advance(49);
    expect(released).toEqual([]);
    await clock.advance(1);
    expect(released).toEqual([['a', start + 100]]);
    await clock.advance(50);
    expect(released).toEqual([
      ['a', start + 100],
      ['b', start + 150],
    ]);
    expect(t.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('holds keys while the activity is busy and releases them together in the lull', async () => {
    const { clock, activity, released, t, start } = setup();
    activity.touch();
    t.add('a');
    for (let i = 0; i < 5; i++) {
      await clock.advance(400);
      activity.touch();
      t.add(`k${i}`);
    }
    // Last touch at start + 2,000: quiet from start + 3,000.
    expect(released).toEqual([]);
    await clock.advance(999);
    expect(released).toEqual([]);
    await clock.advance(1);
    expect(released.map(([k]) => k)).toEqual(['a', 'k0', 'k1', 'k2', 'k3', 'k4']);
    expect(new Set(released.map(([, at]) => at))).toEqual(new Set([start + 3_000]));
  });

  it('releases a key maxMs after it was first added even if the activity never stops', async () => {
    const { clock, activity, released, t, start } = setup(100, 3_000);
    activity.touch();
    t.add('old');
    for (let i = 0; i < 4; i++) {
      await clock.advance(500);
      activity.touch();
    }
    t.add('young');
    for (let i = 0; i < 8; i++) {
      await clock.advance(500);
      activity.touch();
    }
    expect(released).toEqual([
      ['old', start + 3_000],
      ['young', start + 5_000],
    ]);
  });

  it('clear drops the waiting keys and the timer', async () => {
    const { clock, released, t } = setup();
    t.add('a');
    t.clear();
    expect(clock.pending).toBe(0);
    await clock.advance(60_000);
    expect(released).toEqual([]);
  });
});
