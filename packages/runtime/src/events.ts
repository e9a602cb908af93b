// An Event recorder on events.k8s.io/v1 (the same storage `kubectl describe` and `kubectl get
// events` read through core/v1). Like client-go's tools/events: reportingController
// `vworkspace-operator`, reportingInstance per replica, and a repeated identical event (same
// object, type, reason, action, note) within the dedup window becomes a series: the existing
// Event's series.count is bumped instead of creating a new Event.
//
// Recording never throws and never blocks a reconcile on the API server's mood: failures are
// logged. Notes must not contain secrets; they are truncated to the API's 1 KiB limit.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { TrailOptions } from './activity.ts';
import { type Clock, realClock } from './clock.ts';
import { isNotFound, type KubeClient, resourcePath } from './kube-client.ts';
import { type Logger, silentLogger } from './logger.ts';
import { formatMicroTime } from './normalize.ts';

export type EventType = 'Normal' | 'Warning';

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
}

export interface EventOptions {
  /** What the controller did (default "Reconcile"). */
  action?: string;
  related?: KubernetesObject | ObjectReference;
}

export interface EventRecorderOptions {
  client: KubeClient;
  reportingController?: string;
  /** Default `<reportingController>-<POD_NAME or hostname>`. */
  reportingInstance?: string;
  clock?: Clock;
  logger?: Logger;
  /** Identical events within this window join one series (default 10 min). */
  dedupWindowMs?: number;
  /** Series remembered at most (oldest forgotten first). */
  cacheSize?: number;
  /**
   * Write in the background: event() resolves at once, so a reconcile never waits for its Events
   * (client-go's broadcaster is asynchronous too). At most `maxPending` writes wait; more are dropped
   * and logged, as client-go drops events when its queue is full.
   */
  background?: boolean;
  maxPending?: number;
  /**
   * Background writes in flight at once (default 1). client-go's broadcaster writes one Event at a
   * time, so a burst's Events trail the burst instead of taking the API server from its work: with
   * every write in flight at once, Events were the largest share of what the API server answered
   * while a burst of Operations got their children (bench operations; docs/performance.md).
   */
  concurrency?: number;
  /**
   * Background writes report on work: each waits for a lull of the foreground activity, at most
   * `maxMs` after it was recorded (activity.ts; docs/adr/0062-bookkeeping-trails-a-burst.md).
   */
  trail?: TrailOptions;
}

const NOTE_LIMIT = 1024;
/** How often a trailing write looks at the backlog again while it waits. */
const BACKLOG_CHECK_MS = 250;
const FIELD_LIMIT = 128;

interface Series {
  namespace: string;
  name: string;
  count: number;
  lastSeen: number;
  /** Writes for one series are serialised so counts arrive in order. */
  chain: Promise<void>;
}

export function referenceOf(o: KubernetesObject | ObjectReference): ObjectReference {
  const meta = 'metadata' in o && o.metadata ? o.metadata : undefined;
  const src = meta ? { apiVersion: o.apiVersion, kind: o.kind, ...meta } : (o as ObjectReference);
  const ref: ObjectReference = {};
  if (src.apiVersion) ref.apiVersion = src.apiVersion;
  if (src.kind) ref.kind = src.kind;
  if (src.name) ref.name = src.name;
  if (src.namespace) ref.namespace = src.namespace;
  if (src.uid) ref.uid = src.uid;
  return ref;
}

function truncateBytes(s: string, limit: number): string {
  const b = Buffer.from(s, 'utf8');
  if (b.length <= limit) return s;
  // Cut on a character boundary: decode a prefix and drop a possibly broken last character.
  return `${b
    .subarray(0, limit - 3)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}...`;
}

export class EventRecorder {
  readonly #client: KubeClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #window: number;
  readonly #cacheSize: number;
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly #series = new Map<string, Series>();
  #seq = 0;
  readonly #background: boolean;
  readonly #maxPending: number;
  #pending = 0;
  #dropped = 0;
  readonly #concurrency: number;
  #inFlight = 0;
  /** Writes waiting for a slot, in the order they were recorded. */
  readonly #waiting: (() => void)[] = [];
  readonly #trail: TrailOptions | undefined;

  constructor(opts: EventRecorderOptions) {
    this.#client = opts.client;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.logger ?? silentLogger;
    this.#window = opts.dedupWindowMs ?? 10 * 60_000;
    this.#cacheSize = opts.cacheSize ?? 4096;
    this.#background = opts.background ?? false;
    this.#maxPending = opts.maxPending ?? 1000;
    this.#concurrency = Math.max(1, opts.concurrency ?? 1);
    this.#trail = opts.trail;
    this.reportingController = opts.reportingController ?? 'vworkspace-operator';
    this.reportingInstance = truncateBytes(
      opts.reportingInstance ??
        `${this.reportingController}-${process.env.POD_NAME ?? process.env.HOSTNAME ?? 'local'}`,
      FIELD_LIMIT,
    );
  }

  /**
   * Records an event about `regarding`. Resolves when written (or failed and logged), or at once in
   * background mode; never rejects.
   */
  event(
    regarding: KubernetesObject | ObjectReference,
    type: EventType,
    reason: string,
    note: string,
    opts: EventOptions = {},
  ): Promise<void> {
    if (!this.#background) return this.#record(regarding, type, reason, note, opts);
    if (this.#pending >= this.#maxPending) {
      if (this.#dropped++ % 100 === 0)
        this.#log.warn({ reason, dropped: this.#dropped }, 'too many events waiting to be written; dropping');
      return Promise.resolve();
    }
    this.#pending++;
    void this.#record(regarding, type, reason, note, opts).finally(() => this.#pending--);
    return Promise.resolve();
  }

  /** Background writes still waiting or in flight (tests, shutdown). */
  get pending(): number {
    return this.#pending;
  }

  #record(
    regarding: KubernetesObject | ObjectReference,
    type: EventType,
    reason: string,
    note: string,
    opts: EventOptions,
  ): Promise<void> {
    const ref = referenceOf(regarding);
    if (!ref.name) {
      this.#log.error({ reason }, 'event without a regarding object name dropped');
      return Promise.resolve();
    }
    const action = truncateBytes(opts.action ?? 'Reconcile', FIELD_LIMIT);
    const related = opts.related ? referenceOf(opts.related) : undefined;
    const body = {
      type,
      reason: truncateBytes(reason, FIELD_LIMIT),
      note: truncateBytes(note, NOTE_LIMIT),
      action,
    };
    const key = JSON.stringify([ref, related ?? null, body]);
    const now = this.#clock.now();

    const existing = this.#series.get(key);
    if (existing && now - existing.lastSeen < this.#window) {
      existing.count++;
      existing.lastSeen = now;
      // Re-insert: Map order doubles as LRU order.
      this.#series.delete(key);
      this.#series.set(key, existing);
      existing.chain = existing.chain.then(() => this.#bump(existing, now, ref, related, body));
      return existing.chain;
    }

    const namespace = ref.namespace || 'default';
    const series: Series = {
      namespace,
      name: this.#name(ref.name, now),
      count: 1,
      lastSeen: now,
      chain: Promise.resolve(),
    };
    this.#series.delete(key);
    this.#series.set(key, series);
    while (this.#series.size > this.#cacheSize) {
      const oldest = this.#series.keys().next().value;
      if (oldest === undefined) break;
      this.#series.delete(oldest);
    }
    series.chain = this.#create(series, now, ref, related, body);
    return series.chain;
  }

  /** Runs one API write, in background mode only when one of the `concurrency` slots is free. */
  async #write<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.#background) return fn();
    const recorded = this.#clock.now();
    if (this.#inFlight < this.#concurrency) this.#inFlight++;
    else await new Promise<void>((take) => this.#waiting.push(take));
    try {
      if (this.#trail) await this.#trailing(recorded + this.#trail.maxMs);
      return await fn();
    } finally {
      // Hand the slot straight to the next write, so the count never dips and lets a newcomer jump in.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#inFlight--;
    }
  }

  /**
   * Waits for a lull of the foreground, until `deadline` — but only while the backlog is under half the
   * queue: past that the writes go at once, so a long burst never drops more Events than it would without
   * trailing (every Event of a burst of 2,000 Operations waited, and 1,800 were dropped).
   */
  async #trailing(deadline: number): Promise<void> {
    const activity = this.#trail?.activity;
    if (!activity) return;
    for (;;) {
      const now = this.#clock.now();
      if (now >= deadline || now >= activity.quietFrom() || this.#pending >= this.#maxPending / 2) return;
      await activity.lull(Math.min(deadline, now + BACKLOG_CHECK_MS));
    }
  }

  /** `<name>.<hex nanoseconds>` like client-go, unique within this process. */
  #name(base: string, now: number): string {
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.#seq++ % 1_000_000);
    return `${base}.${nanos.toString(16)}`;
  }

  async #create(
    s: Series,
    now: number,
    regarding: ObjectReference,
    related: ObjectReference | undefined,
    body: { type: string; reason: string; note: string; action: string },
  ): Promise<void> {
    try {
      await this.#write(() =>
        this.#client.request({
          method: 'POST',
          path: resourcePath({
            group: 'events.k8s.io',
            version: 'v1',
            plural: 'events',
            namespace: s.namespace,
          }),
          body: {
            apiVersion: 'events.k8s.io/v1',
            kind: 'Event',
            metadata: { name: s.name, namespace: s.namespace },
            eventTime: formatMicroTime(now),
            reportingController: this.reportingController,
            reportingInstance: this.reportingInstance,
            regarding,
            ...(related ? { related } : {}),
            ...body,
          },
        }),
      );
    } catch (err) {
      this.#log.warn({ err: String(err), reason: body.reason, regarding }, 'recording an event failed');
    }
  }

  async #bump(
    s: Series,
    now: number,
    regarding: ObjectReference,
    related: ObjectReference | undefined,
    body: { type: string; reason: string; note: string; action: string },
  ): Promise<void> {
    try {
      await this.#write(() =>
        this.#client.request({
          method: 'PATCH',
          path: resourcePath(
            { group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: s.namespace },
            s.name,
          ),
          body: { series: { count: s.count, lastObservedTime: formatMicroTime(now) } },
          contentType: 'application/merge-patch+json',
        }),
      );
    } catch (err) {
      if (isNotFound(err)) {
        // Expired (events have a TTL) or deleted: start a new Event for the series.
        s.name = this.#name(regarding.name ?? 'event', now);
        s.count = 1;
        await this.#create(s, now, regarding, related, body);
        return;
      }
      this.#log.warn({ err: String(err), reason: body.reason, regarding }, 'updating an event series failed');
    }
  }
}
