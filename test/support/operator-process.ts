// The operator as a separate OS process (`node operator/src/main.ts`), as it runs in its Pod: the
// crash-safety test kills it with SIGKILL (no graceful shutdown, the Lease is not released) and starts
// it again; the e2e tests run one per Pod of the Deployment OLM created, with that Deployment's
// environment and the ServiceAccount token OLM's RBAC applies to.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { operatorNodeArgs } from '@vworkspace/operator';
import { ROOT } from '../../hack/lib/controlplane.ts';
import { loggedField } from '../../hack/lib/operator-log.ts';

export interface OperatorSettings {
  kubeconfigPath: string;
  namespace: string;
  /** Each process writes its output to `<logDir>/<label>.log`. */
  logDir: string;
  /** RELATED_IMAGE_HELM, unless `env` sets it. */
  helmImage?: string;
  /** Further settings over the defaults (e.g. a Deployment's env, WEBHOOK_HOST, WEBHOOK_CERT_DIR). */
  env?: Record<string, string>;
  /** Start this instead of `node operator/src/main.ts` in the checkout (the image test: its entrypoint). */
  launch?: { command: string; args: string[] };
}

/** Every process started by this module, so a failing test never leaves one behind. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class OperatorProcess {
  readonly child: ChildProcess;
  readonly logPath: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #killedByUs = false;
  #ports: { metrics: number; probes: number } | undefined;
  #webhookPort: number | undefined;

  private constructor(child: ChildProcess, log: WriteStream, logPath: string) {
    this.child = child;
    this.logPath = logPath;
    live.add(child);
    this.exited = new Promise((ok) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        log.end();
        ok({ code, signal });
      }),
    );
  }

  static async start(s: OperatorSettings, label: string): Promise<OperatorProcess> {
    const logPath = join(s.logDir, `${label.replaceAll(' ', '-')}.log`);
    const log = createWriteStream(logPath);
    log.write(`===== ${label} (${new Date().toISOString()}) =====\n`);
    const child = spawn(s.launch?.command ?? process.execPath, s.launch?.args ?? operatorNodeArgs(), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        KUBECONFIG: s.kubeconfigPath,
        OPERATOR_NAMESPACE: s.namespace,
        LEADER_ELECT: 'true',
        // Port 0: the process binds what the kernel gives and logs it (learned below). A port picked
        // here and bound later could be taken in between by anything on this busy machine.
        METRICS_PORT: '0',
        PROBE_PORT: '0',
        // No certificates there: the webhook is not served unless `env` names a directory with them.
        WEBHOOK_CERT_DIR: '/nonexistent/vworkspace-operator-process',
        ...(s.helmImage ? { RELATED_IMAGE_HELM: s.helmImage } : {}),
        LOG_LEVEL: 'info',
        ...s.env,
      },
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    return new OperatorProcess(child, log, logPath);
  }

  /** The metrics port the process bound (known once it logged "manager starting"). */
  get metricsPort(): number {
    return this.#bound().metrics;
  }

  /** The probe port the process bound (known once it logged "manager starting"). */
  get probePort(): number {
    return this.#bound().probes;
  }

  /** The webhook's port as the process logged it once serving (WEBHOOK_PORT=0 lets it choose). */
  get webhookPort(): number | undefined {
    this.#webhookPort ??= loggedFieldOf<number>(this.logPath, 'admission webhook serving', 'port');
    return this.#webhookPort;
  }

  /** Whether it has logged its bound ports yet: a poller that starts with the process asks first. */
  get portsBound(): boolean {
    this.#ports ??= loggedFieldOf(this.logPath, 'manager starting', 'ports');
    return this.#ports !== undefined;
  }

  #bound(): { metrics: number; probes: number } {
    this.#ports ??= loggedFieldOf(this.logPath, 'manager starting', 'ports');
    if (!this.#ports)
      throw new Error(`operator ${this.logPath} has not bound its ports yet (await waitReady)`);
    return this.#ports;
  }

  /** Whether it exited on its own (a crash), as opposed to by our signal. */
  get crashed(): boolean {
    return !this.#killedByUs && (this.child.exitCode !== null || this.child.signalCode !== null);
  }

  #exitedError(what: string): Error | undefined {
    if (this.child.exitCode === null && this.child.signalCode === null) return undefined;
    return new Error(
      `operator exited (code ${this.child.exitCode}, signal ${this.child.signalCode}) before ${what}; log ${this.logPath}:\n${tail(this.logPath, 30)}`,
    );
  }

  /** Resolves once /readyz answers 200 (informers synced, webhook serving); throws if it exits first. */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // The last answer (or why there was none): which check failed, when it never gets ready.
    let last = 'ports not logged yet';
    while (Date.now() < deadline) {
      const exited = this.#exitedError('ready');
      if (exited) throw exited;
      this.#ports ??= loggedFieldOf(this.logPath, 'manager starting', 'ports');
      const res = this.#ports
        ? await fetch(`http://127.0.0.1:${this.#ports.probes}/readyz?verbose`, {
            signal: AbortSignal.timeout(2000),
          }).catch((err: unknown) => {
            last = `no answer: ${err instanceof Error ? err.message : String(err)}`;
            return undefined;
          })
        : undefined;
      if (res?.ok) return;
      if (res) last = `${res.status}: ${(await res.text().catch(() => '')).trim()}`;
      await sleep(200);
    }
    throw new Error(
      `operator not ready within ${timeoutMs} ms (last /readyz: ${last}); log ${this.logPath}:\n${tail(this.logPath, 30)}`,
    );
  }

  /** Whether this process reports leader_election_master_status 1 now. */
  async isLeader(): Promise<boolean> {
    try {
      // Before it logged its ports it is not leading either: #bound() throws, caught below.
      const res = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, {
        signal: AbortSignal.timeout(2000),
      });
      return /^leader_election_master_status\{[^}]*\} 1$/m.test(await res.text());
    } catch {
      return false; // not listening yet
    }
  }

  /** Resolves once this process reports leader_election_master_status 1; throws if it exits first. */
  waitLeader(timeoutMs: number): Promise<void> {
    return this.#waitLeading(true, timeoutMs);
  }

  /** Resolves once this process no longer reports itself leader (another holder has the Lease). */
  waitFollower(timeoutMs: number): Promise<void> {
    return this.#waitLeading(false, timeoutMs);
  }

  async #waitLeading(leading: boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const exited = this.#exitedError(leading ? 'leading' : 'following');
      if (exited) throw exited;
      if ((await this.isLeader()) === leading) return;
      await sleep(100);
    }
    throw new Error(
      `operator did not ${leading ? 'become leader' : 'lose the Lease'} within ${timeoutMs} ms`,
    );
  }

  async kill(): Promise<void> {
    this.#killedByUs = true;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Graceful stop (SIGTERM, as the kubelet does), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.#killedByUs = true;
    this.child.kill('SIGTERM');
    // The grace timer is cancelled once the process is gone: left pending, it kept the caller's process
    // alive up to graceMs after its work was done (a bench holding the shared lock for 2 more minutes).
    const grace = new AbortController();
    const done = await Promise.race([
      this.exited.then(() => true),
      sleep(graceMs, undefined, { signal: grace.signal }).then(
        () => false,
        () => true,
      ),
    ]);
    grace.abort();
    if (!done) await this.kill();
  }
}

/** A field of the first JSON log line with this message, if the log has one yet. */
function loggedFieldOf<T>(path: string, msg: string, field: string): T | undefined {
  try {
    return loggedField<T>(readFileSync(path, 'utf8'), msg, field);
  } catch {
    return undefined; // no log yet
  }
}

export function tail(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
