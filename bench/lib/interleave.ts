// The order in which the admission scenario sends its settings' requests: one of each per block, each
// block shuffled, so drift in the shared machine falls on every setting alike and no setting always
// follows the same one. Pure.
import { seeded } from './sharding/random.ts';

/** `n` picks of `kinds`: blocks holding each kind once, each block in its own order (the same for a seed). */
export function interleaved<T>(kinds: readonly T[], n: number, seed = 1): T[] {
  const random = seeded(seed);
  const order: T[] = [];
  while (order.length < n) {
    const block = [...kinds];
    for (let i = block.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [block[i], block[j]] = [block[j] as T, block[i] as T];
    }
    order.push(...block);
  }
  return order.slice(0, n);
}
