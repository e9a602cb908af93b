import { describe, expect, it } from 'vitest';
import { EventQueue } from './events.ts';
import { CLIENT_GO_DEFAULTS, type HandoverConfig, simulateHandover } from './handover.ts';
import { handover } from './measure.ts';

// Each case runs hundreds of simulated minutes; generous timeouts for a busy machine, no timing asserted.
const SLOW = 120_000;
const base: HandoverConfig = CLIENT_GO_DEFAULTS;

describe('EventQueue', () => {
  it('runs events by virtual time, equal times first come first served, and never goes back', () => {
    const q = new EventQueue();
    const seen: string[] = [];
    q.schedule(20, () => seen.push('b'));
    q.schedule(10, () => {
      seen.push('a');
      q.schedule(5, () => seen.push(`late@${q.now}`));
    });
    q.schedule(20, () => seen.push('c'));
    q.schedule(99, () => seen.push('after'));
    q.runUntil(50);
    expect(seen).toEqual(['a', 'late@10', 'b', 'c']);
    expect(q.now).toBe(50);
  });
});

describe('simulateHandover', () => {
  it('is a function of its seed', () => {
    const cfg = { ...base, loss: 'pause' as const, fencing: 'none' as const };
    expect(simulateHandover(cfg, 42)).toEqual(simulateHandover(cfg, 42));
  });

  it(
    'with token fencing, no write lands after a later term began in 1,000 seeded runs with pauses',
    () => {
      const fenced = handover(base, 'pause', 'token', 1000);
      expect(fenced.takeovers).toBeGreaterThan(500);
      expect(fenced.doubleRunRuns).toBe(0);
      expect(fenced.staleWrites).toBe(0);
    },
    SLOW,
  );

  it(
    'without fencing, a paused holder that wakes after a takeover writes as if it still led',
    () => {
      const unfenced = handover(base, 'pause', 'none', 200);
      expect(unfenced.takeovers).toBeGreaterThan(0);
      expect(unfenced.doubleRunRuns).toBeGreaterThan(unfenced.takeovers / 2);
    },
    SLOW,
  );

  it(
    'checking the renew deadline before each write leaves only writes caught by the pause on their way out',
    () => {
      const none = handover(base, 'pause', 'none', 300);
      const checked = handover(base, 'pause', 'renew-deadline', 300);
      expect(checked.takeovers).toBe(none.takeovers);
      expect(checked.doubleRunRuns * 10).toBeLessThan(none.doubleRunRuns);
      // Without a send delay nothing is in hand when the pause begins, and the check alone suffices.
      const instant = handover({ ...base, sendDelayMs: [0, 0] }, 'pause', 'renew-deadline', 300);
      expect(instant.doubleRunRuns).toBe(0);
    },
    SLOW,
  );

  it(
    'never hands over sooner than leaseDuration of the successor’s clock after the last renewal',
    () => {
      for (const loss of ['crash', 'pause', 'renewals-fail'] as const) {
        const row = handover(base, loss, 'token', 300);
        expect(row.takeovers).toBeGreaterThan(0);
        expect(row.minSinceRenewalMs).toBeGreaterThanOrEqual(base.leaseDurationMs / (1 + base.clockDrift));
      }
    },
    SLOW,
  );

  it(
    'a graceful release hands over within a few retry periods and, drained first, without a double run',
    () => {
      const row = handover(base, 'release', 'none', 300);
      expect(row.takeovers).toBe(300);
      expect(row.p99Ms).toBeLessThan(base.leaseDurationMs);
      expect(row.doubleRunRuns).toBe(0);
    },
    SLOW,
  );

  it(
    'a crashed holder writes nothing more, fenced or not',
    () => {
      expect(handover(base, 'crash', 'none', 300).doubleRunRuns).toBe(0);
    },
    SLOW,
  );

  it(
    'the margin leaseDuration − renewDeadline absorbs clock drift up to its ratio, and no further',
    () => {
      // The holder stops after renewDeadline of a clock running at 1 − d, the successor starts after
      // leaseDuration of one running at 1 + d: safe while 10 (1 + d) < 15 (1 − d), i.e. d < 0.2.
      const within = handover({ ...base, clockDrift: 0.15 }, 'renewals-fail', 'renew-deadline', 300);
      const beyond = handover({ ...base, clockDrift: 0.4 }, 'renewals-fail', 'renew-deadline', 300);
      const token = handover({ ...base, clockDrift: 0.4 }, 'renewals-fail', 'token', 300);
      expect(within.doubleRunRuns).toBe(0);
      expect(beyond.doubleRunRuns).toBeGreaterThan(0);
      expect(token.doubleRunRuns).toBe(0);
    },
    SLOW,
  );
});
