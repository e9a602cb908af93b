// A bench stopped by Ctrl-C or `kill` must not leave its operator running. Node's default for SIGINT and
// SIGTERM ends the process without its 'exit' handlers, and the one that kills the operators a run
// started (test/support/operator-process.ts) is such a handler; exiting on the signal runs it.

/** The exit code of a process ended by `signal`, as a shell reports it (128 + the signal's number). */
const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/** From now on SIGINT and SIGTERM exit the process (running its 'exit' handlers) with 130 and 143. */
export function exitOnStopSignals(): void {
  for (const [signal, code] of Object.entries(EXIT_CODES)) process.once(signal, () => process.exit(code));
}
