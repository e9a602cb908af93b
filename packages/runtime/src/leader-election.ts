// Lease-based leader election with client-go's algorithm (k8s.io/client-go/tools/leaderelection):
// - acquire and renew are compare-and-swap writes: replace the Lease with the resourceVersion we
//   read; a 409 means another replica wrote first and we lost the race;
// - a lease held by someone else counts as expired only when its record has not changed for
//   leaseDurationSeconds of OUR clock since WE observed the change. Remote renewTime is never
//   compared with the local clock, so clock skew between nodes cannot create two leaders;
// - a leader that cannot renew within renewDeadline steps down; renewDeadline < leaseDuration
//   means it stops before anyone else may take over;
// - on shutdown the leader releases the Lease (clears holderIdentity) so a successor takes over
//   at its next retry instead of waiting out the lease;
// - a leader renews optimistically: one compare-and-swap with the resourceVersion of its own last
//   write, no read first; only when that fails does it read the Lease and decide again (client-go's
//   "fast path", since v0.30), so renewing costs the API server one request, not two.

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Clock, realClock, sleep } from './clock.ts';
import { isAlreadyExists, isConflict, isNotFound, type KubeClient, resourcePath } from './kube-client.ts';
import { type Logger, silentLogger } from './logger.ts';
import { formatMicroTime } from './normalize.ts';

/** The Lease spec fields, with the Lease's own names (coordination.k8s.io/v1 LeaseSpec). */
export interface LeaderElectionRecord {
  /** '' when released. */
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

export interface LockRead {
  record: LeaderElectionRecord;
  resourceVersion: string;
}

/** The resource lock: a Lease on the API server, or an in-memory CAS store in tests. */
export interface LeaseLock {
  describe(): string;
  /** undefined when the lock object does not exist. */
  get(signal?: AbortSignal): Promise<LockRead | undefined>;
  /** Throws (409 AlreadyExists) when it exists already. Resolves with the new resourceVersion. */
  create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<string>;
  /**
   * Compare-and-swap on `resourceVersion`; throws 409 Conflict when it changed meanwhile. Resolves with
   * the new resourceVersion.
   */
  update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<string>;
}

export interface LeaderElectionConfig {
  lock: LeaseLock;
  /** Unique per replica; default `<hostname>_<uuid>` like controller-runtime. */
  identity?: string;
  /** Defaults from client-go: 15 s, 10 s, 2 s. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Clear the holder on shutdown so a successor takes over at once (default true). */
  releaseOnCancel?: boolean;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
  /** Called when this replica starts leading; `signal` aborts when it stops. */
  onStartedLeading?: (signal: AbortSignal) => void;
  /** Called when this replica stops leading (lost the lease or shut down). */
  onStoppedLeading?: () => void;
  /** Called when the observed holder changes (including to this replica). */
  onNewLeader?: (identity: string) => void;
  /** leader_election_master_status hook (see metrics.ts). */
  onLeadingChange?: (leading: boolean) => void;
}

/** client-go's JitterFactor for the acquire loop: wait retryPeriod × [1, 2.2). */
const JITTER_FACTOR = 1.2;

export function defaultIdentity(): string {
  return `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
}

type Attempt = 'ok' | 'held' | 'failed';

/** The holder's next record: renewed now, its acquireTime and transitions kept. */
function renewal(fresh: LeaderElectionRecord, held: LeaderElectionRecord): LeaderElectionRecord {
  return {
    ...fresh,
    acquireTime: held.acquireTime ?? fresh.acquireTime,
    leaseTransitions: held.leaseTransitions,
  };
}

export class LeaderElector {
  readonly identity: string;
  readonly #lock: LeaseLock;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #leaseMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  readonly #cfg: LeaderElectionConfig;

  #observedRaw = '';
  #observedRecord: LeaderElectionRecord | undefined;
  #observedTime = 0;
  /** The resourceVersion of the record last read or written ('' when unknown): the fast path's CAS token. */
  #observedRv = '';
  #leading = false;
  #reportedLeader = '';

  constructor(cfg: LeaderElectionConfig) {
    this.#cfg = cfg;
    this.#lock = cfg.lock;
    this.identity = cfg.identity ?? defaultIdentity();
    this.#clock = cfg.clock ?? realClock;
    this.#random = cfg.random ?? Math.random;
    this.#leaseMs = cfg.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = cfg.renewDeadlineMs ?? 10_000;
    this.#retryMs = cfg.retryPeriodMs ?? 2_000;
    this.#log = (cfg.logger ?? silentLogger).child({ lease: cfg.lock.describe(), identity: this.identity });
    if (!(this.#leaseMs > this.#renewDeadlineMs))
      throw new Error('leaseDuration must be greater than renewDeadline');
    if (!(this.#renewDeadlineMs > this.#retryMs * JITTER_FACTOR)) {
      throw new Error('renewDeadline must be greater than retryPeriod × 1.2');
    }
  }

  /** True between onStartedLeading and onStoppedLeading. */
  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder this replica last observed ('' when none). */
  getLeader(): string {
    return this.#observedRecord?.holderIdentity ?? '';
  }

  /**
   * Campaigns until leader, leads until the lease is lost or `signal` aborts, then returns
   * (releasing the lease first when aborted). Run it again to campaign again.
   */
  async run(signal: AbortSignal): Promise<void> {
    // When the successful write was SENT: others observed it later, so counting our renew
    // deadline from here keeps it inside their lease window whatever the request latency.
    let lastRenew = 0;
    while (!signal.aborted) {
      lastRenew = this.#clock.now();
      const attempt = await this.#tryAcquireOrRenew(signal);
      if (attempt === 'ok') break;
      await sleep(this.#clock, this.#retryMs * (1 + JITTER_FACTOR * this.#random()), signal);
    }
    if (signal.aborted) return;

    const leading = new AbortController();
    this.#setLeading(true);
    this.#log.info('started leading');
    this.#safely(() => this.#cfg.onStartedLeading?.(leading.signal));

    let lost = false;
    while (!signal.aborted) {
      const planned = this.#clock.now() + this.#retryMs;
      await sleep(this.#clock, this.#retryMs, signal);
      if (signal.aborted) break;
      const started = this.#clock.now();
      let deadline = lastRenew + this.#renewDeadlineMs;
      const stalledMs = started - planned;
      if (started >= deadline && stalledMs >= this.#retryMs) {
        // The process did not run (a blocked event loop, a paused VM): the deadline passed without a
        // chance to renew. Try once anyway: the write is a compare-and-swap that succeeds only if the
        // Lease still holds our last renewal (nobody wrote it since, so nobody else has led); if someone
        // took over, we read their holder or lose the swap, and step down as before.
        this.#log.warn({ stalledMs }, 'event loop stalled past the renew deadline; renewing late');
        deadline = started + this.#retryMs;
      }
      const attempt = await this.#withDeadline(deadline, signal, (s) => this.#tryAcquireOrRenew(s));
      if (attempt === 'ok') {
        lastRenew = started;
        continue;
      }
      if (attempt === 'held' || this.#clock.now() >= deadline) {
        lost = true;
        break;
      }
    }

    this.#setLeading(false);
    leading.abort();
    // Who holds it now tells a planned takeover (another replica, a person) from a renewal that timed out.
    const holder = this.getLeader();
    this.#log.info(
      {
        lost,
        ...(lost
          ? { holder: holder === this.identity ? '(still us: renewal timed out)' : holder || '(none)' }
          : {}),
      },
      lost ? 'leader lease lost' : 'stopped leading',
    );
    this.#safely(() => this.#cfg.onStoppedLeading?.());
    if (!lost && (this.#cfg.releaseOnCancel ?? true)) await this.#release();
  }

  async #withDeadline(
    deadline: number,
    outer: AbortSignal,
    fn: (s: AbortSignal) => Promise<Attempt>,
  ): Promise<Attempt> {
    const ac = new AbortController();
    const onOuter = () => ac.abort();
    outer.addEventListener('abort', onOuter, { once: true });
    const timer = this.#clock.setTimeout(() => ac.abort(), Math.max(0, deadline - this.#clock.now()));
    const aborted = new Promise<Attempt>((resolve) => {
      if (ac.signal.aborted) resolve('failed');
      ac.signal.addEventListener('abort', () => resolve('failed'), { once: true });
    });
    try {
      // A lock call that ignores its signal still cannot keep us "leading" past the deadline.
      return await Promise.race([fn(ac.signal), aborted]);
    } finally {
      this.#clock.clearTimeout(timer);
      outer.removeEventListener('abort', onOuter);
    }
  }

  /** The observed record changed less than its own leaseDurationSeconds ago, by our clock. */
  #valid(record: LeaderElectionRecord, now: number): boolean {
    return this.#observedTime + record.leaseDurationSeconds * 1000 > now;
  }

  #isLeaderRecord(): boolean {
    return this.#observedRecord?.holderIdentity === this.identity;
  }

  #observe(read: LockRead): void {
    this.#observedRv = read.resourceVersion;
    const raw = JSON.stringify([
      read.record.holderIdentity,
      read.record.leaseDurationSeconds,
      read.record.acquireTime ?? '',
      read.record.renewTime ?? '',
      read.record.leaseTransitions,
    ]);
    if (raw !== this.#observedRaw) {
      this.#observedRaw = raw;
      this.#observedRecord = read.record;
      this.#observedTime = this.#clock.now();
      const holder = read.record.holderIdentity;
      if (holder && holder !== this.#reportedLeader) {
        this.#reportedLeader = holder;
        this.#safely(() => this.#cfg.onNewLeader?.(holder));
      }
    }
  }

  async #tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const now = this.#clock.now();
    const durationSeconds = Math.ceil(this.#leaseMs / 1000);
    const fresh: LeaderElectionRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: formatMicroTime(now),
      renewTime: formatMicroTime(now),
      leaseTransitions: 0,
    };
    // Fast path: still the holder by our own observation, and we know the version we wrote last.
    if (this.#isLeaderRecord() && this.#observedRv && this.#observedRecord) {
      if (this.#valid(this.#observedRecord, now)) {
        const next = renewal(fresh, this.#observedRecord);
        try {
          const rv = await this.#lock.update(next, this.#observedRv, signal);
          this.#observe({ record: next, resourceVersion: rv });
          return 'ok';
        } catch (err) {
          // Someone wrote since (409), or the request failed: read and decide, as client-go does.
          this.#log.debug({ err: String(err) }, 'optimistic lease renewal failed; reading the lease');
          if (signal.aborted) return 'failed';
        }
      }
    }
    let read: LockRead | undefined;
    try {
      read = await this.#lock.get(signal);
    } catch (err) {
      this.#log.warn({ err: String(err) }, 'reading the lease failed');
      return 'failed';
    }
    if (!read) {
      try {
        const rv = await this.#lock.create(fresh, signal);
        this.#observe({ record: fresh, resourceVersion: rv });
        return 'ok';
      } catch (err) {
        if (!isAlreadyExists(err)) this.#log.warn({ err: String(err) }, 'creating the lease failed');
        return 'failed';
      }
    }

    this.#observe(read);
    const old = read.record;
    if (old.holderIdentity && this.#valid(old, now) && !this.#isLeaderRecord()) return 'held';

    const next: LeaderElectionRecord = this.#isLeaderRecord()
      ? renewal(fresh, old)
      : { ...fresh, leaseTransitions: old.leaseTransitions + 1 };
    let rv: string;
    try {
      rv = await this.#lock.update(next, read.resourceVersion, signal);
    } catch (err) {
      if (!isConflict(err)) this.#log.warn({ err: String(err) }, 'updating the lease failed');
      return 'failed';
    }
    this.#observe({ record: next, resourceVersion: rv });
    return 'ok';
  }

  /** client-go's release: holder cleared, leaseDurationSeconds 1, transitions kept. */
  async #release(): Promise<void> {
    if (!this.#isLeaderRecord() || !this.#observedRecord) return;
    const now = formatMicroTime(this.#clock.now());
    const released: LeaderElectionRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: this.#observedRecord.leaseTransitions,
    };
    try {
      // Read first: our last write's resourceVersion is what the CAS must match.
      const read = await this.#lock.get();
      if (!read || read.record.holderIdentity !== this.identity) return;
      await this.#lock.update(released, read.resourceVersion);
      this.#observe({ record: released, resourceVersion: '' });
      this.#log.info('released the lease');
    } catch (err) {
      this.#log.warn({ err: String(err) }, 'releasing the lease failed');
    }
  }

  #setLeading(v: boolean): void {
    this.#leading = v;
    this.#safely(() => this.#cfg.onLeadingChange?.(v));
  }

  #safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error({ err }, 'leader election callback threw');
    }
  }
}

// ---- the Lease lock -----------------------------------------------------------------------------

export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [k: string]: unknown;
  };
}

/** A coordination.k8s.io/v1 Lease as the lock. */
export class KubeLeaseLock implements LeaseLock {
  readonly namespace: string;
  readonly name: string;
  readonly #client: KubeClient;
  readonly #timeoutMs: number;
  #last: LeaseObject | undefined;

  /** `requestTimeoutMs` bounds each call (default 5 s, well under renewDeadline). */
  constructor(client: KubeClient, namespace: string, name: string, requestTimeoutMs = 5_000) {
    this.#client = client;
    this.namespace = namespace;
    this.name = name;
    this.#timeoutMs = requestTimeoutMs;
  }

  describe(): string {
    return `${this.namespace}/${this.name}`;
  }

  #path(name?: string): string {
    return resourcePath(
      { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: this.namespace },
      name,
    );
  }

  async get(signal?: AbortSignal): Promise<LockRead | undefined> {
    let lease: LeaseObject;
    try {
      lease = await this.#client.request<LeaseObject>({
        method: 'GET',
        path: this.#path(this.name),
        timeoutMs: this.#timeoutMs,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    this.#last = lease;
    const s = lease.spec ?? {};
    return {
      record: {
        holderIdentity: s.holderIdentity ?? '',
        leaseDurationSeconds: s.leaseDurationSeconds ?? 0,
        ...(s.acquireTime ? { acquireTime: s.acquireTime } : {}),
        ...(s.renewTime ? { renewTime: s.renewTime } : {}),
        leaseTransitions: s.leaseTransitions ?? 0,
      },
      resourceVersion: lease.metadata?.resourceVersion ?? '',
    };
  }

  async create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<string> {
    this.#last = await this.#client.request<LeaseObject>({
      method: 'POST',
      path: this.#path(),
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.name, namespace: this.namespace },
        spec: record,
      },
      timeoutMs: this.#timeoutMs,
      ...(signal ? { signal } : {}),
    });
    return this.#last?.metadata?.resourceVersion ?? '';
  }

  async update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<string> {
    const base = this.#last ?? {};
    this.#last = await this.#client.request<LeaseObject>({
      method: 'PUT',
      path: this.#path(this.name),
      body: {
        ...base,
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { ...base.metadata, name: this.name, namespace: this.namespace, resourceVersion },
        spec: { ...base.spec, ...record },
      },
      timeoutMs: this.#timeoutMs,
      ...(signal ? { signal } : {}),
    });
    return this.#last?.metadata?.resourceVersion ?? '';
  }
}
