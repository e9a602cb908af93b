// The one polling helper of the tests, the demo and the tooling (test/support/eventually.ts re-exports
// it): waits for a condition with a generous limit (this 2-core box is shared and slow; a timing
// assertion would be a defect), and says what it waited for and the last error when it gives up.
import { setTimeout as sleep } from 'node:timers/promises';

const stoppers = new Set<() => string | undefined>();

/**
 * Makes every wait give up at once, with `reason`'s message, while it returns one: a real node whose
 * kubelet evicts every pod (hack/lib/real-node.ts) turns a long silent timeout into its cause. Returns
 * the function that removes it.
 */
export function failWaitsWhile(reason: () => string | undefined): () => void {
  stoppers.add(reason);
  return () => {
    stoppers.delete(reason);
  };
}

function stopped(): string | undefined {
  for (const reason of stoppers) {
    const message = reason();
    if (message) return message;
  }
  return undefined;
}

/** Polls `check` until it returns a truthy value (returned); a throw counts as "not yet". */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = undefined;
    } catch (err) {
      last = err;
    }
    const stop = stopped();
    if (stop) throw new Error(`gave up waiting for ${what}: ${stop}`);
    if (Date.now() > deadline) {
      const why = last instanceof Error ? last.message : last === undefined ? '' : String(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why ? `: ${why}` : ''}`);
    }
    await sleep(intervalMs);
  }
}
