// The operator as a separate OS process (`node operator/src/main.ts`), as it runs in its Pod: killed
// with SIGKILL (no graceful shutdown, the Lease is not released) and started again by the test.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, ROOT } from '../../../hack/lib/controlplane.ts';

export interface OperatorSettings {
  kubeconfigPath: string;
  namespace: string;
  /** Each process writes its output to `<logDir>/<label>.log`. */
  logDir: string;
  helmImage: string;
}

/** Every process started by this module, so a failing test never leaves one behind. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class OperatorProcess {
  readonly child: ChildProcess;
  readonly metricsPort: number;
  readonly logPath: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #killedByUs = false;

  private constructor(child: ChildProcess, metricsPort: number, log: WriteStream, logPath: string) {
    this.child = child;
    this.metricsPort = metricsPort;
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
    const [metricsPort, probePort] = [await freePort(), await freePort()];
    const logPath = join(s.logDir, `${label.replaceAll(' ', '-')}.log`);
    const log = createWriteStream(logPath);
    log.write(`===== ${label} (${new Date().toISOString()}) =====\n`);
    const child = spawn(process.execPath, ['operator/src/main.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        KUBECONFIG: s.kubeconfigPath,
        OPERATOR_NAMESPACE: s.namespace,
        LEADER_ELECT: 'true',
        // A killed leader's lease runs out after 6 s instead of 15 s: 20 kills wait 3 minutes less.
        LEASE_DURATION: '6s',
        RENEW_DEADLINE: '4s',
        RETRY_PERIOD: '1s',
        METRICS_PORT: String(metricsPort),
        PROBE_PORT: String(probePort),
        // No certificates there: the webhook is not served (admission is not what this test is about).
        WEBHOOK_CERT_DIR: '/nonexistent/vworkspace-crash-test',
        RELATED_IMAGE_HELM: s.helmImage,
        LOG_LEVEL: 'info',
      },
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    return new OperatorProcess(child, metricsPort, log, logPath);
  }

  /** Whether it exited on its own (a crash), as opposed to by our signal. */
  get crashed(): boolean {
    return !this.#killedByUs && (this.child.exitCode !== null || this.child.signalCode !== null);
  }

  /** Resolves once this process reports leader_election_master_status 1; throws if it exits first. */
  async waitLeader(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(
          `operator exited (code ${this.child.exitCode}, signal ${this.child.signalCode}) before leading`,
        );
      try {
        const res = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, {
          signal: AbortSignal.timeout(2000),
        });
        const text = await res.text();
        if (/^leader_election_master_status\{[^}]*\} 1$/m.test(text)) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`operator did not become leader within ${timeoutMs} ms`);
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
    const done = await Promise.race([this.exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (!done) await this.kill();
  }
}

export function tail(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
