// A seeded pseudo-random source for the sharding simulation: the same seed gives the same run on any
// machine, so a table or a failing test can be reproduced from its seed alone. Pure.

/** mulberry32: 32-bit state, uniform in [0, 1); enough for a simulation, not for anything secret. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform in [lo, hi). */
export function between(random: () => number, lo: number, hi: number): number {
  return lo + (hi - lo) * random();
}
