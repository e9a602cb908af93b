import { describe, expect, it } from 'vitest';
import { EventLoopMonitor } from './event-loop.ts';

describe('EventLoopMonitor', () => {
  it('reports the longest timer delay of the window, fails readiness on a long one, and forgets it later', () => {
    let now = 0;
    const m = new EventLoopMonitor({
      intervalMs: 100,
      windowMs: 10_000,
      unreadyAfterMs: 5_000,
      now: () => now,
    });
    m.start();
    m.stop();
    for (let i = 0; i < 5; i++) {
      now += 103;
      m.sample();
    }
    expect(m.check()).toEqual({ ok: true, detail: 'longest delay 3 ms in the last 10 s' });
    // One task held the thread for 6 s: the next tick comes 6 s late.
    now += 6_100;
    m.sample();
    expect(m.check()).toEqual({ ok: false, detail: 'longest delay 6000 ms in the last 10 s' });
    for (let i = 0; i < 101; i++) {
      now += 100;
      m.sample();
    }
    expect(m.check().ok).toBe(true);
    expect(m.maxDelayMs()).toBe(0);
  });
});
