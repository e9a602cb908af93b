import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyedMutex } from './keyed-mutex.ts';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('KeyedMutex', () => {
  it('never runs two tasks of one key at once, runs different keys together, and survives failures', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.constantFrom('a', 'b', 'c'), fail: fc.boolean(), ticks: fc.nat(3) }), {
          maxLength: 30,
        }),
        async (tasks) => {
          const mutex = new KeyedMutex();
          const active = new Map<string, number>();
          let maxSameKey = 0;
          let maxOverall = 0;
          const order: number[] = [];
          const results = await Promise.allSettled(
            tasks.map((t, i) =>
              mutex.run(t.key, async () => {
                active.set(t.key, (active.get(t.key) ?? 0) + 1);
                maxSameKey = Math.max(maxSameKey, active.get(t.key)!);
                maxOverall = Math.max(
                  maxOverall,
                  [...active.values()].reduce((a, b) => a + b, 0),
                );
                for (let k = 0; k < t.ticks; k++) await tick();
                active.set(t.key, active.get(t.key)! - 1);
                order.push(i);
                if (t.fail) throw new Error(`task ${i}`);
                return i;
              }),
            ),
          );
          expect(maxSameKey).toBeLessThanOrEqual(1);
          // Per key, tasks run in the order they were asked for.
          for (const key of ['a', 'b', 'c']) {
            const asked = tasks.flatMap((t, i) => (t.key === key ? [i] : []));
            expect(order.filter((i) => tasks[i]!.key === key)).toEqual(asked);
          }
          results.forEach((r, i) => {
            if (tasks[i]!.fail) expect(r.status).toBe('rejected');
            else expect(r).toEqual({ status: 'fulfilled', value: i });
          });
          expect(mutex.size).toBe(0);
          const keys = new Set(tasks.filter((t) => t.ticks > 0).map((t) => t.key));
          if (keys.size > 1 && tasks.every((t) => t.ticks > 0)) expect(maxOverall).toBeGreaterThan(1);
        },
      ),
    );
  });
});
