// The Manager runs everything in one process, in controller-runtime's order:
// - the metrics (8080) and probe (8081) servers, informers and runnables that do not need
//   leadership (the admission webhook) run on EVERY replica, so any replica can serve admission
//   and report readiness;
// - controllers and leader-only runnables run only while this replica holds the Lease;
// - readiness = every registered informer has synced;
// - graceful shutdown (SIGTERM): stop leader work first (controllers drain: no new keys, queued
//   and in-flight reconciles finish, bounded by the grace period), THEN release the Lease (so a
//   successor never overlaps our last reconciles), then stop the webhook and informers, then
//   close the servers;
// - losing the Lease is NOT fatal (docs/adr/0010-lease-loss-keeps-serving.md): controllers and leader
//   runnables stop at once without draining (another replica may lead already), while the webhook,
//   probes, metrics and informers keep running; the replica campaigns again and, once it leads,
//   starts its controllers with fresh queues. controller-runtime exits instead, which with
//   failurePolicy Fail takes admission down with the process.

import { type Clock, realClock, sleep } from './clock.ts';
import { Controller, type ControllerOptions } from './controller.ts';
import type { EventLoopMonitor } from './event-loop.ts';
import { type HttpServerHandle, ProbeChecks, startMetricsServer, startProbeServer } from './health.ts';
import type { InformerFactory } from './informer-factory.ts';
import type { KubeClient } from './kube-client.ts';
import { KubeLeaseLock, LeaderElector, type LeaseLock } from './leader-election.ts';
import { type Logger, silentLogger } from './logger.ts';
import { RuntimeMetrics } from './metrics.ts';

export interface Runnable {
  name: string;
  /** false: runs on every replica (webhook, HTTP servers). true: only while leading. */
  needLeaderElection: boolean;
  /** Runs until `signal` aborts and resolves once fully stopped. A rejection stops the manager. */
  start(signal: AbortSignal): Promise<void>;
}

/** The leader-election Lease's name unless LeaderElectionOptions.name says otherwise. */
export const DEFAULT_LEASE_NAME = 'vworkspace-operator';

export interface LeaderElectionOptions {
  /** Namespace and name of the Lease (default name DEFAULT_LEASE_NAME). */
  namespace: string;
  name?: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Default: a KubeLeaseLock through the manager's client. */
  lock?: LeaseLock;
}

export interface ManagerOptions {
  /** Needed for leader election unless `leaderElection.lock` is given. */
  client?: KubeClient;
  /** false or unset: this replica always leads (local runs, tests). */
  leaderElection?: LeaderElectionOptions | false;
  /** Port of /metrics (default 8080; 0 = any free port; false = no server). */
  metricsPort?: number | false;
  /** Port of /healthz and /readyz (default 8081; 0 = any; false = none). */
  probePort?: number | false;
  /** Address of both servers (default every interface); metricsHost / probeHost set one each. */
  bindHost?: string;
  metricsHost?: string;
  probeHost?: string;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  clock?: Clock;
  /** Upper bound for each shutdown phase (default 30 s, controller-runtime's default). */
  gracefulShutdownTimeoutMs?: number;
  /** Reported (and gating readiness) as the `event-loop` check of /readyz; started and stopped here. */
  eventLoop?: EventLoopMonitor;
  /** The process's shared informers, which controllers built with controllerFor (builder.ts) read. */
  cache?: InformerFactory;
}

/** What the manager needs of an informer (any Informer<T> fits). */
export interface ManagedInformer {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
  hasSynced(): boolean;
}

interface SignalTarget {
  on(event: string, fn: () => void): unknown;
  off(event: string, fn: () => void): unknown;
}

export class Manager {
  readonly metrics: RuntimeMetrics;
  readonly checks = new ProbeChecks();
  readonly log: Logger;
  readonly #opts: ManagerOptions;
  readonly #clock: Clock;
  readonly #informers: ManagedInformer[] = [];
  readonly #controllers: Controller[] = [];
  readonly #runnables: Runnable[] = [];
  // Replaced at the end of each leadership term.
  #leaderWork = new AbortController();
  #leaderTasks: Promise<void>[] = [];
  readonly #leaderElection = new AbortController();
  readonly #everyReplica = new AbortController();
  readonly #replicaTasks: Promise<void>[] = [];
  #elector: LeaderElector | undefined;
  #electorRun: Promise<void> | undefined;
  #servers: HttpServerHandle[] = [];
  #metricsPort: number | undefined;
  #probePort: number | undefined;
  #started = false;
  #leading = false;
  #stopping = false;
  #shutdown: Promise<void> | undefined;
  #finish: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  #resolveElected!: () => void;
  readonly elected: Promise<void>;

  constructor(opts: ManagerOptions = {}) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.log = opts.logger ?? silentLogger;
    this.metrics = opts.metrics ?? new RuntimeMetrics();
    this.checks.addHealthCheck('ping', () => true);
    const loop = opts.eventLoop;
    if (loop) this.checks.addReadyCheck('event-loop', () => loop.check());
    this.elected = new Promise((resolve) => {
      this.#resolveElected = resolve;
    });
  }

  /** The shared informer cache (ManagerOptions.cache). */
  get cache(): InformerFactory {
    if (!this.#opts.cache) throw new Error('the manager has no cache: pass ManagerOptions.cache');
    return this.#opts.cache;
  }

  /** Started by the manager on every replica; readiness waits for its first sync. */
  addInformer(informer: ManagedInformer): void {
    // Controllers share informers (InformerFactory): each may register the same one.
    if (this.#informers.includes(informer)) return;
    this.#informers.push(informer);
    this.checks.addReadyCheck(`informer-${informer.name}`, () => informer.hasSynced());
  }

  /** Runs only while leading. Prefer newController(), which wires in the manager's metrics and logger. */
  addController(controller: Controller): void {
    this.#controllers.push(controller);
  }

  /** A Controller using this manager's metrics, logger and clock, already added. */
  newController(opts: ControllerOptions): Controller {
    const c = new Controller({ metrics: this.metrics, logger: this.log, clock: this.#clock, ...opts });
    this.addController(c);
    return c;
  }

  add(runnable: Runnable): void {
    this.#runnables.push(runnable);
  }

  isLeader(): boolean {
    return this.#leading;
  }

  get ports(): { metrics?: number; probes?: number } {
    return {
      ...(this.#metricsPort !== undefined ? { metrics: this.#metricsPort } : {}),
      ...(this.#probePort !== undefined ? { probes: this.#probePort } : {}),
    };
  }

  /**
   * Starts everything; resolves after stop() has shut everything down, rejects (after shutting
   * down) when a runnable or a controller fails. A lost Lease is not a failure (see the header).
   */
  async start(): Promise<void> {
    if (this.#started) throw new Error('manager already started');
    this.#started = true;
    const done = new Promise<void>((resolve, reject) => {
      this.#finish = { resolve, reject };
    });
    const le = this.#opts.leaderElection;
    const leaseName = le ? (le.name ?? DEFAULT_LEASE_NAME) : '';
    let lock: LeaseLock | undefined;
    if (le) {
      lock = le.lock;
      if (!lock) {
        if (!this.#opts.client) throw new Error('leader election needs a client or a lock');
        lock = new KubeLeaseLock(this.#opts.client, le.namespace, leaseName);
      }
    }
    const host = this.#opts.bindHost ?? '0.0.0.0';
    try {
      if (this.#opts.metricsPort !== false) {
        const s = await startMetricsServer(
          this.metrics.registry,
          this.#opts.metricsPort ?? 8080,
          this.#opts.metricsHost ?? host,
        );
        this.#servers.push(s);
        this.#metricsPort = s.port;
      }
      if (this.#opts.probePort !== false) {
        const s = await startProbeServer(
          this.checks,
          this.#opts.probePort ?? 8081,
          this.#opts.probeHost ?? host,
        );
        this.#servers.push(s);
        this.#probePort = s.port;
      }
    } catch (err) {
      await Promise.all(this.#servers.map((s) => s.close()));
      throw err;
    }
    this.log.info({ ports: this.ports }, 'manager starting');
    this.#opts.eventLoop?.start();

    for (const inf of this.#informers) inf.start();
    for (const r of this.#runnables.filter((x) => !x.needLeaderElection)) {
      this.#replicaTasks.push(this.#run(r, this.#everyReplica.signal));
    }

    if (le && lock) {
      this.#elector = new LeaderElector({
        lock,
        ...(le.identity ? { identity: le.identity } : {}),
        ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
        ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
        ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
        clock: this.#clock,
        logger: this.log,
        onLeadingChange: this.metrics.leaderMetric(leaseName),
        onStartedLeading: () => this.#startLeaderWork(),
        onStoppedLeading: () => {
          this.#leading = false;
        },
      });
      this.#electorRun = this.#lead(this.#elector, this.#leaderElection.signal);
    } else {
      this.#startLeaderWork();
    }
    return done;
  }

  /** Graceful shutdown (see the header comment for the order). Idempotent. */
  async stop(): Promise<void> {
    await this.#shutdownOnce();
    this.#finish?.resolve();
  }

  /**
   * SIGTERM/SIGINT → stop(); a second signal exits at once (as controller-runtime does).
   * Returns a function that removes the handlers.
   */
  installSignalHandlers(
    target: SignalTarget = process,
    exit: (code: number) => void = (c) => process.exit(c),
  ): () => void {
    let count = 0;
    const handler = () => {
      count++;
      if (count > 1) {
        this.log.warn('second termination signal: exiting now');
        exit(1);
        return;
      }
      this.log.info('termination signal: shutting down gracefully');
      void this.stop();
    };
    target.on('SIGTERM', handler);
    target.on('SIGINT', handler);
    return () => {
      target.off('SIGTERM', handler);
      target.off('SIGINT', handler);
    };
  }

  #startLeaderWork(): void {
    if (this.#stopping) return;
    this.#leading = true;
    this.#resolveElected();
    this.log.info({ controllers: this.#controllers.map((c) => c.name) }, 'leading: starting controllers');
    for (const c of this.#controllers) {
      this.#leaderTasks.push(
        c
          .start()
          .catch((err: unknown) => this.#fail(new Error(`controller ${c.name} failed: ${String(err)}`))),
      );
    }
    for (const r of this.#runnables.filter((x) => x.needLeaderElection)) {
      this.#leaderTasks.push(this.#run(r, this.#leaderWork.signal));
    }
  }

  /**
   * Campaigns and leads; after a lost Lease stops the leader work and campaigns again, until `signal`
   * aborts (shutdown, which releases the Lease inside run()).
   */
  async #lead(elector: LeaderElector, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await elector.run(signal);
      if (signal.aborted || this.#stopping) return;
      this.log.warn(
        'leader lease lost: controllers stopped without draining; webhook, probes and informers keep running; campaigning again',
      );
      await this.#stopLeaderWork(false);
    }
  }

  /** Ends a leadership term: controllers stop (draining or not), then the leader runnables. */
  async #stopLeaderWork(drain: boolean): Promise<void> {
    const timeoutMs = this.#opts.gracefulShutdownTimeoutMs ?? 30_000;
    this.#leaderWork.abort();
    await Promise.all(this.#controllers.map((c) => c.stop({ drain, timeoutMs })));
    await this.#within(Promise.all(this.#leaderTasks), 'leader runnables');
    this.#leaderWork = new AbortController();
    this.#leaderTasks = [];
  }

  #run(r: Runnable, signal: AbortSignal): Promise<void> {
    return r.start(signal).then(
      () => {
        if (!signal.aborted) this.#fail(new Error(`runnable ${r.name} stopped on its own`));
      },
      (err: unknown) => this.#fail(new Error(`runnable ${r.name} failed: ${String(err)}`)),
    );
  }

  #fail(err: Error): void {
    if (this.#stopping) return;
    this.log.error({ err: err.message }, 'manager stopping after a failure');
    void this.#shutdownOnce().then(() => this.#finish?.reject(err));
  }

  async #within(p: Promise<unknown>, what: string): Promise<void> {
    const ms = this.#opts.gracefulShutdownTimeoutMs ?? 30_000;
    const timer = new AbortController();
    const r = await Promise.race([
      p.then(() => 'done' as const),
      sleep(this.#clock, ms, timer.signal).then(() => 'timeout' as const),
    ]);
    timer.abort();
    if (r === 'timeout') this.log.warn({ what, timeoutMs: ms }, 'shutdown step timed out');
  }

  #shutdownOnce(): Promise<void> {
    this.#shutdown ??= this.#doShutdown();
    return this.#shutdown;
  }

  async #doShutdown(): Promise<void> {
    this.#stopping = true;
    // 1. Leader work. Draining keeps the last reconciles inside our lease.
    await this.#stopLeaderWork(true);
    // 2. Give up the Lease (release happens inside run() when its signal aborts).
    this.#leaderElection.abort();
    if (this.#electorRun) await this.#within(this.#electorRun, 'lease release');
    this.#leading = false;
    // 3. Webhook and other every-replica work, then the caches.
    this.#everyReplica.abort();
    await this.#within(Promise.all(this.#replicaTasks), 'runnables');
    await Promise.all(this.#informers.map((i) => i.stop()));
    // 4. Last, so probes and metrics answer for as long as possible.
    await Promise.all(this.#servers.map((s) => s.close()));
    this.#opts.eventLoop?.stop();
    this.log.info('manager stopped');
  }
}
