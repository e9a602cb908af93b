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
import { Fifo } from './fifo.ts';
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
  /** Writes for one series are serialised so counts arrive in order (foreground). */
  chain: Promise<void>;
  /** A background bump of this series waits in the queue: repeats meanwhile join it, taking no place. */
  bumpQueued: boolean;
  /** The background write of this series in flight, which the next one waits for. */
  writing?: Promise<void> | undefined;
}

type Body = { type: string; reason: string; note: string; action: string };

/**
 * One background write waiting for its turn: plain data, not a suspended call, so a long queue costs
 * what it records (docs/performance.md).
 */
interface Write {
  series: Series;
  regarding: ObjectReference;
  related: ObjectReference | undefined;
  body: Body;
  recorded: number;
  bump: boolean;
}

const settled = Promise.resolve();

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
  #workers = 0;
  /** Writes waiting for a worker, in the order they were recorded. */
  readonly #queue = new Fifo<Write>();
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
    const ref = referenceOf(regarding);
    if (!ref.name) {
      this.#log.error({ reason }, 'event without a regarding object name dropped');
      return settled;
    }
    const related = opts.related ? referenceOf(opts.related) : undefined;
    const body: Body = {
      type,
      reason: truncateBytes(reason, FIELD_LIMIT),
      note: truncateBytes(note, NOTE_LIMIT),
      action: truncateBytes(opts.action ?? 'Reconcile', FIELD_LIMIT),
    };
    const key = JSON.stringify([ref, related ?? null, body]);
    const now = this.#clock.now();
    const found = this.#series.get(key);
    const repeat = found && now - found.lastSeen < this.#window ? found : undefined;
    if (!this.#background) return this.#recordNow(key, repeat, now, ref, related, body);
    if (repeat?.bumpQueued) {
      // Its bump has not gone yet: it will carry this count too.
      this.#seen(key, repeat, now);
      return settled;
    }
    if (this.#pending >= this.#maxPending) {
      if (this.#dropped++ % 100 === 0)
        this.#log.warn({ reason, dropped: this.#dropped }, 'too many events waiting to be written; dropping');
      return settled;
    }
    const series = repeat ? this.#seen(key, repeat, now) : this.#start(key, ref, now);
    series.bumpQueued = repeat !== undefined;
    this.#enqueue({ series, regarding: ref, related, body, recorded: now, bump: repeat !== undefined });
    return settled;
  }

  /** Background writes still waiting or in flight (tests, shutdown). */
  get pending(): number {
    return this.#pending;
  }

  /** Writes at once, the returned promise settling when written. */
  #recordNow(
    key: string,
    repeat: Series | undefined,
    now: number,
    ref: ObjectReference,
    related: ObjectReference | undefined,
    body: Body,
  ): Promise<void> {
    if (repeat) {
      this.#seen(key, repeat, now);
      repeat.chain = repeat.chain.then(() => this.#bump(repeat, ref, related, body));
      return repeat.chain;
    }
    const series = this.#start(key, ref, now);
    series.chain = this.#create(series, series.lastSeen, ref, related, body);
    return series.chain;
  }

  /** One more of a series. */
  #seen(key: string, s: Series, now: number): Series {
    s.count++;
    s.lastSeen = now;
    // Re-insert: Map order doubles as LRU order.
    this.#series.delete(key);
    this.#series.set(key, s);
    return s;
  }

  /** A new series (a new Event), remembered in place of the oldest when the cache is full. */
  #start(key: string, ref: ObjectReference, now: number): Series {
    const series: Series = {
      namespace: ref.namespace || 'default',
      name: this.#name(ref.name ?? 'event', now),
      count: 1,
      lastSeen: now,
      chain: settled,
      bumpQueued: false,
    };
    this.#series.delete(key);
    this.#series.set(key, series);
    while (this.#series.size > this.#cacheSize) {
      const oldest = this.#series.keys().next().value;
      if (oldest === undefined) break;
      this.#series.delete(oldest);
    }
    return series;
  }

  #enqueue(w: Write): void {
    this.#pending++;
    this.#queue.push(w);
    if (this.#workers < this.#concurrency) {
      this.#workers++;
      void this.#drain();
    }
  }

  /** One of `concurrency` workers: writes what waits, in the order recorded, until nothing does. */
  async #drain(): Promise<void> {
    try {
      for (let w = this.#queue.shift(); w; w = this.#queue.shift()) {
        try {
          if (this.#trail) await this.#trailing(w.recorded + this.#trail.maxMs);
          const s = w.series;
          // Counts arrive in order even with more than one worker.
          while (s.writing) await s.writing;
          if (w.bump) s.bumpQueued = false;
          const writing = w.bump
            ? this.#bump(s, w.regarding, w.related, w.body)
            : this.#create(s, w.recorded, w.regarding, w.related, w.body);
          s.writing = writing;
          await writing;
          s.writing = undefined;
        } finally {
          this.#pending--;
        }
      }
    } finally {
      this.#workers--;
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
    body: Body,
  ): Promise<void> {
    try {
      await this.#client.request({
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
      });
    } catch (err) {
      this.#log.warn({ err: String(err), reason: body.reason, regarding }, 'recording an event failed');
    }
  }

  async #bump(
    s: Series,
    regarding: ObjectReference,
    related: ObjectReference | undefined,
    body: Body,
  ): Promise<void> {
    const now = s.lastSeen;
    try {
      await this.#client.request({
        method: 'PATCH',
        path: resourcePath(
          { group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: s.namespace },
          s.name,
        ),
        body: { series: { count: s.count, lastObservedTime: formatMicroTime(now) } },
        contentType: 'application/merge-patch+json',
      });
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
