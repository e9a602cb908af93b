// The engines' tools (hack/build-tools.sh engines: Velero, MinIO, Argo, VolSync, the CSI sidecars, ...)
// may still be building when the real node's journeys start: on a cold machine hack/test.sh builds them
// in the background while the node's own journeys run, and names the file the build's exit code lands in
// (VWS_ENGINES_BUILD_RC, written once the build ended) and its log (VWS_ENGINES_BUILD_LOG). The journeys
// that need those tools wait here first (ADR 0048). Without VWS_ENGINES_BUILD_RC the tools are whatever
// bin/ holds, as after `make tools`.
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BuildToWaitFor {
  /** The file holding the build's exit code, written when it ended. */
  rcFile: string;
  /** Its log, whose tail a failure shows. */
  logFile?: string;
  /** A progress line now and then while waiting. */
  log?: (line: string) => void;
  pollMs?: number;
  /** How often to say that it still waits. */
  sayEveryMs?: number;
}

/** How long a caller may let the wait run: a cold build of the engines' tools, with room to spare. */
export const ENGINES_BUILD_WAIT_MS = 90 * 60_000;

/** Resolves once the build ended with 0; rejects with its exit code and its log's last lines otherwise. */
export async function waitForBuild(b: BuildToWaitFor): Promise<void> {
  const started = Date.now();
  let said = started;
  while (!existsSync(b.rcFile)) {
    if (Date.now() - said >= (b.sayEveryMs ?? 60_000)) {
      said = Date.now();
      b.log?.(
        `waiting for the engines' tools (hack/build-tools.sh engines, in the background) for ${Math.round((said - started) / 1000)} s ...`,
      );
    }
    await sleep(b.pollMs ?? 2000);
  }
  const rc = readFileSync(b.rcFile, 'utf8').trim();
  if (rc === '0') {
    if (Date.now() - started > (b.pollMs ?? 2000))
      b.log?.(`the engines' tools are built (waited ${Math.round((Date.now() - started) / 1000)} s)`);
    return;
  }
  const tail =
    b.logFile && existsSync(b.logFile)
      ? readFileSync(b.logFile, 'utf8').split('\n').slice(-40).join('\n')
      : '';
  throw new Error(
    `building the engines' tools failed (exit code ${rc || 'unknown'}; log: ${b.logFile ?? 'none'}); run \`hack/build-tools.sh engines\` to see why${tail ? `\n${tail}` : ''}`,
  );
}

let waited: Promise<void> | undefined;

/** waitForBuild for the build hack/test.sh names in the environment (once per process); at once without. */
export function enginesBuilt(log?: (line: string) => void): Promise<void> {
  const rcFile = process.env.VWS_ENGINES_BUILD_RC;
  if (!rcFile) return Promise.resolve();
  waited ??= waitForBuild({
    rcFile,
    ...(process.env.VWS_ENGINES_BUILD_LOG ? { logFile: process.env.VWS_ENGINES_BUILD_LOG } : {}),
    ...(log ? { log } : {}),
  });
  return waited;
}
