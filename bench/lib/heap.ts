// What a piece of work keeps on the JS heap: the heap used after a full GC, before and after it. For the
// memory probes (bench/events-memory.ts, bench/cache-memory.ts), which print numbers, not tests.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Runs `make` and returns what it made and the bytes of heap it keeps (the result and all it holds). */
export function heapKept<T>(make: () => T): { made: T; bytes: number } {
  gc();
  const before = process.memoryUsage().heapUsed;
  const made = make();
  gc();
  return { made, bytes: process.memoryUsage().heapUsed - before };
}
