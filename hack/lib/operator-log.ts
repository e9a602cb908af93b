// Reading the operator's JSON log (pino, one object a line): where a process that started the operator
// with METRICS_PORT, PROBE_PORT and WEBHOOK_PORT 0 learns the ports it bound ("manager starting" logs
// `ports: { metrics, probes }`, "admission webhook serving" logs `port`). The demo and the tests'
// operator process (test/support/operator-process.ts) both read it.

/** A field of the first JSON log line in `text` with this message, if there is one yet. */
export function loggedField<T>(text: string, msg: string, field: string): T | undefined {
  for (const line of text.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.msg === msg && entry[field] !== undefined) return entry[field] as T;
    } catch {
      // a line of other output that mentions the message
    }
  }
  return undefined;
}
