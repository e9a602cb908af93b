import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock, flushMicrotasks } from './clock.ts';
import { ItemExponentialFailureRateLimiter } from './rate-limiter.ts';
import { type QueueMetrics, WorkQueue } from './workqueue.ts';

function newQueue(clock = new FakeClock(), metrics?: QueueMetrics) {
  return new WorkQueue<string>({
    name: 'test',
    clock,
    rateLimiter: new ItemExponentialFailureRateLimiter<string>(5, 1_000_000),
    ...(metrics ? { metrics } : {}),
  });
}

async function take(q: WorkQueue<string>): Promise<string> {
  const item = await q.get();
  if (item.shutdown) throw new Error('queue shut down');
  return item.key;
}

/** Resolves to the value, or 'pending' if the promise has not settled after the microtasks ran. */
async function peek<T>(p: Promise<T>): Promise<T | 'pending'> {
  let settled: { v: T } | undefined;
  void p.then((v) => {
    settled = { v };
  });
  await flushMicrotasks();
  return settled ? settled.v : 'pending';
}

describe('WorkQueue basics', () => {
  it('hands keys out in FIFO order and deduplicates waiting keys', async () => {
    const q = newQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(await take(q)).toBe('a');
    expect(await take(q)).toBe('b');
    expect(q.len()).toBe(0);
  });

  it('never gives a key to a second worker while it is processed, and runs it again after done', async () => {
    const q = newQueue();
    q.add('a');
    expect(await take(q)).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0);
    const second = q.get();
    expect(await peek(second)).toBe('pending');
    q.done('a');
    expect(await second).toEqual({ key: 'a', shutdown: false });
    q.done('a');
    expect(q.len()).toBe(0);
  });

  it('a waiting get is woken by an add', async () => {
    const q = newQueue();
    const p = q.get();
    expect(await peek(p)).toBe('pending');
    q.add('x');
    expect(await p).toEqual({ key: 'x', shutdown: false });
  });

  it('addAfter delays and keeps the earliest deadline', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('a', 1000);
    q.addAfter('a', 500);
    q.addAfter('a', 2000);
    expect(q.delayedCount()).toBe(1);
    expect(q.dueAt('a')).toBe(clock.now() + 500);
    expect(q.dueAt('b')).toBeUndefined();
    await clock.advance(499);
    expect(q.len()).toBe(0);
    await clock.advance(1);
    expect(q.len()).toBe(1);
    expect(q.dueAt('a')).toBeUndefined();
    await clock.advance(5000);
    expect(q.len()).toBe(1);
  });

  it('addAfter with a non-positive delay adds at once', () => {
    const q = newQueue();
    q.addAfter('a', 0);
    expect(q.len()).toBe(1);
  });

  it('backoff doubles per failure from 5 ms, caps at 1000 s and resets on forget', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    const observed: number[] = [];
    for (let i = 0; i < 30; i++) {
      q.addRateLimited('k');
      // Find the delay by advancing to the timer's due time.
      const due = clock.nextDue()!;
      observed.push(due - clock.now());
      await clock.advance(due - clock.now());
      expect(await take(q)).toBe('k');
      q.done('k');
    }
    expect(observed.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    expect(observed.at(-1)).toBe(1_000_000);
    expect(q.numRequeues('k')).toBe(30);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
    q.addRateLimited('k');
    expect(clock.nextDue()! - clock.now()).toBe(5);
  });

  it('ignores adds after shutdown and drops delayed keys', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('later', 100);
    q.shutDown();
    q.add('a');
    q.addRateLimited('b');
    await clock.advance(1000);
    expect(q.len()).toBe(0);
    expect(clock.pending).toBe(0);
    expect(await q.get()).toEqual({ shutdown: true });
  });

  it('shutdown hands out what is queued, then tells every waiter to stop', async () => {
    const q = newQueue();
    const idle = q.get();
    q.add('a');
    expect(await idle).toEqual({ key: 'a', shutdown: false });
    q.add('b');
    const waiting = q.get();
    expect(await waiting).toEqual({ key: 'b', shutdown: false });
    const idle2 = q.get();
    q.add('c');
    q.shutDown();
    expect(await idle2).toEqual({ key: 'c', shutdown: false });
    expect(await q.get()).toEqual({ shutdown: true });
  });

  it('shutDownWithDrain waits for in-flight work, including a re-add made before shutdown', async () => {
    const q = newQueue();
    q.add('a');
    const key = await take(q);
    q.add('a'); // re-added while processing: must still run once more
    const drained = q.shutDownWithDrain();
    expect(await peek(drained)).toBe('pending');
    q.done(key);
    expect(await peek(drained)).toBe('pending');
    expect(await take(q)).toBe('a');
    q.done('a');
    expect(await peek(drained)).toBeUndefined();
  });

  it('shutDown with dropQueued discards waiting keys and re-adds; in-flight work still finishes', async () => {
    const q = newQueue();
    q.add('a');
    q.add('b');
    const key = await take(q);
    q.add('a');
    const drained = q.shutDownWithDrain({ dropQueued: true });
    expect(q.len()).toBe(0);
    expect(await peek(drained)).toBe('pending');
    q.done(key);
    expect(await peek(drained)).toBeUndefined();
    expect(await q.get()).toEqual({ shutdown: true });
  });

  it('reports metrics: adds, depth, retries and durations', async () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    const m: QueueMetrics = {
      add: () => calls.push('add'),
      depth: (n) => calls.push(`depth=${n}`),
      retry: () => calls.push('retry'),
      queueDuration: (s) => calls.push(`queue=${s}`),
      workDuration: (s) => calls.push(`work=${s}`),
    };
    const q = newQueue(clock, m);
    q.add('a');
    q.add('a');
    await clock.advance(2000);
    await take(q);
    await clock.advance(500);
    q.done('a');
    q.addRateLimited('a');
    expect(calls).toEqual(['add', 'depth=1', 'depth=0', 'queue=2', 'work=0.5', 'retry']);
  });
});

describe('WorkQueue.runWorkers', () => {
  it('runs keys on N workers, never one key twice at once, and drains on shutdown', async () => {
    const q = newQueue();
    const active = new Set<string>();
    let maxConcurrent = 0;
    const processed: string[] = [];
    const gates: (() => void)[] = [];
    const run = q.runWorkers(3, async (key) => {
      expect(active.has(key)).toBe(false);
      active.add(key);
      maxConcurrent = Math.max(maxConcurrent, active.size);
      await new Promise<void>((r) => gates.push(r));
      active.delete(key);
      processed.push(key);
    });
    for (const k of ['a', 'b', 'c', 'd', 'a']) q.add(k);
    await flushMicrotasks();
    expect(active.size).toBe(3);
    const drained = q.shutDownWithDrain();
    while (gates.length > 0) {
      gates.shift()!();
      await flushMicrotasks();
    }
    await drained;
    await run;
    expect(maxConcurrent).toBe(3);
    // 'a' was re-added while a worker held it, so it runs a second time after the first run.
    expect(processed.sort()).toEqual(['a', 'a', 'b', 'c', 'd']);
  });

  it('a throwing handler gets its key retried with backoff, not lost', async () => {
    const clock = new FakeClock();
    const q = newQueue(clock);
    let calls = 0;
    const run = q.runWorkers(1, async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    });
    q.add('a');
    await flushMicrotasks();
    expect(calls).toBe(1);
    expect(q.numRequeues('a')).toBe(1);
    await clock.advance(5);
    expect(calls).toBe(2);
    q.shutDown();
    await run;
  });
});

// Model-based property test: a random interleaving of add / get / done / shutdown against a model
// of what must hold. `owed` = keys added since they were last handed out (an add not yet covered by
// a processing start). The queue must hold exactly the owed keys that are not being processed.
type Op =
  | { t: 'add'; k: string }
  | { t: 'get' }
  | { t: 'done'; i: number }
  | { t: 'after'; k: string; ms: number }
  | { t: 'tick'; ms: number }
  | { t: 'shutdown' };

const keyArb = fc.constantFrom('a', 'b', 'c', 'd');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: keyArb.map((k) => ({ t: 'add' as const, k })) },
  { weight: 4, arbitrary: fc.constant({ t: 'get' as const }) },
  { weight: 4, arbitrary: fc.nat(10).map((i) => ({ t: 'done' as const, i })) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('after' as const),
      k: keyArb,
      ms: fc.integer({ min: 1, max: 50 }),
    }),
  },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 60 }).map((ms) => ({ t: 'tick' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ t: 'shutdown' as const }) },
);

describe('WorkQueue properties', () => {
  it('dedup, per-key exclusivity, re-add-while-processing, and no key lost', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 80 }), async (ops) => {
        const clock = new FakeClock();
        const q = newQueue(clock);
        const owed = new Set<string>();
        const held: string[] = [];
        // Delayed adds: key -> earliest due time (the queue keeps the earliest deadline).
        const delayed = new Map<string, number>();
        let shut = false;

        const check = () => {
          const waiting = [...owed].filter((k) => !held.includes(k));
          expect(q.len()).toBe(waiting.length);
        };
        const handOut = (k: string) => {
          expect(held).not.toContain(k);
          held.push(k);
          owed.delete(k);
        };
        const fireDelayed = () => {
          for (const [k, at] of delayed) {
            if (at <= clock.now()) {
              delayed.delete(k);
              owed.add(k);
            }
          }
        };

        for (const op of ops) {
          switch (op.t) {
            case 'add':
              q.add(op.k);
              if (!shut) owed.add(op.k);
              break;
            case 'get':
              if (q.len() > 0) handOut(await take(q));
              break;
            case 'done': {
              const k = held[op.i % Math.max(1, held.length)];
              if (k !== undefined) {
                held.splice(held.indexOf(k), 1);
                q.done(k);
              }
              break;
            }
            case 'after':
              q.addAfter(op.k, op.ms);
              if (!shut) {
                const at = clock.now() + op.ms;
                delayed.set(op.k, Math.min(delayed.get(op.k) ?? at, at));
              }
              break;
            case 'tick':
              await clock.advance(op.ms);
              fireDelayed();
              break;
            case 'shutdown':
              q.shutDown();
              shut = true;
              delayed.clear();
              break;
          }
          check();
        }

        // Drain: finish everything in flight, then take and finish what is left.
        q.shutDown();
        while (held.length > 0) q.done(held.pop()!);
        for (;;) {
          const item = await q.get();
          if (item.shutdown) break;
          handOut(item.key);
          held.pop();
          q.done(item.key);
        }
        expect([...owed]).toEqual([]);
        expect(q.len()).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('concurrent workers never process one key twice at once and every add is followed by a run', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(keyArb, fc.nat(5)), { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(6), { minLength: 1, maxLength: 20 }),
        async (workers, adds, delays) => {
          const q = newQueue();
          const active = new Set<string>();
          const lastAdd = new Map<string, number>();
          const lastStart = new Map<string, number>();
          let step = 0;
          let call = 0;
          const run = q.runWorkers(workers, async (key) => {
            expect(active.has(key)).toBe(false);
            expect(active.size).toBeLessThan(workers + 1);
            active.add(key);
            lastStart.set(key, ++step);
            const spin = delays[call++ % delays.length]!;
            for (let i = 0; i < spin; i++) await Promise.resolve();
            active.delete(key);
          });
          for (const [k, pause] of adds) {
            q.add(k);
            lastAdd.set(k, ++step);
            for (let i = 0; i < pause; i++) await Promise.resolve();
          }
          await q.shutDownWithDrain();
          await run;
          for (const [k, addedAt] of lastAdd) {
            expect(lastStart.get(k) ?? 0).toBeGreaterThan(addedAt);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('backoff grows monotonically up to the cap and restarts at the base after forget', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 60 }), (succeeded) => {
        const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
        let failures = 0;
        let previous = 0;
        for (const ok of succeeded) {
          if (ok) {
            limiter.forget('k');
            failures = 0;
            previous = 0;
            continue;
          }
          const d = limiter.when('k');
          expect(d).toBe(Math.min(5 * 2 ** failures, 1_000_000));
          expect(d).toBeGreaterThanOrEqual(previous);
          previous = d;
          failures++;
          expect(limiter.numRequeues('k')).toBe(failures);
        }
      }),
    );
  });
});
