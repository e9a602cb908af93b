// Long-running helper processes of the test harnesses (etcd, kube-apiserver, OLM's operators, opm
// serve), each under hack/lib/reaper.sh so it dies with this process: a crashed or SIGKILLed test run
// never leaves one behind. Output goes to a log file that stays readable after the process ends.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const REAPER = join(resolve(import.meta.dirname, '../..'), 'hack/lib/reaper.sh');

export interface Proc {
  name: string;
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
}

/** Starts `bin args` under the reaper, stdout and stderr appended to `logPath`. */
export function startProcess(
  name: string,
  bin: string,
  args: string[],
  logPath: string,
  env?: NodeJS.ProcessEnv,
): Proc {
  const log = createWriteStream(logPath, { flags: 'a' });
  const child = spawn(REAPER, [String(process.pid), bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(env ? { env } : {}),
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  child.on('error', (err) => log.write(`[harness] ${name} failed to start: ${err.message}\n`));
  return { name, child, logPath, exited };
}

/**
 * A guard: a process that runs the shell command `onStop` when it is stopped, or when this process
 * dies first (the reaper stops it then). For cleanup that must survive a crashed test run, e.g.
 * deleting a kwok cluster whose processes kwokctl started outside the reaper.
 */
export function startGuard(name: string, onStop: string, logPath: string, env: NodeJS.ProcessEnv = {}): Proc {
  return startProcess(
    name,
    'sh',
    // The command writes to the log file itself: the pipes to this process break when it dies.
    ['-c', `trap 'eval "$GUARD_ON_STOP" >>"$GUARD_LOG" 2>&1; exit 0' TERM; while :; do sleep 1; done`],
    logPath,
    { ...process.env, ...env, GUARD_ON_STOP: onStop, GUARD_LOG: logPath },
  );
}

export function running(p: Proc): boolean {
  return p.child.exitCode === null && p.child.signalCode === null;
}

/** SIGTERM (forwarded by the reaper), SIGKILL after `graceMs`. */
export async function stopProcess(p: Proc | undefined, graceMs = 10_000): Promise<void> {
  if (!p || !running(p)) return;
  p.child.kill('SIGTERM');
  const done = await Promise.race([p.exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (!done) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
}

export function tailFile(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
