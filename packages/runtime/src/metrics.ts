// Prometheus metrics with controller-runtime's names, so existing dashboards and alerts for
// controller-runtime operators work unchanged. One Registry per process (tests make their own);
// other packages register their own metrics (operations, admission latency, schedule lag) on
// `registry`.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { RestClientMetrics } from './kube-client.ts';
import type { QueueMetrics } from './workqueue.ts';

export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';
const RESULTS: readonly ReconcileResultLabel[] = ['success', 'error', 'requeue', 'requeue_after'];

// controller-runtime's buckets (pkg/internal/controller/metrics) and client-go's workqueue buckets
// (10 ns … 1000 s, ×10).
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5,
  1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
// prometheus.DefBuckets: controller-runtime's webhook latency and client-go's rest_client latencies.
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** prom-client's nodejs_eventloop_lag_* sampling interval. */
export const EVENT_LOOP_PRECISION_MS = 100;

export class RuntimeMetrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalErrors: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly workqueueDepth: Gauge<'name'>;
  readonly workqueueAdds: Counter<'name'>;
  readonly workqueueRetries: Counter<'name'>;
  readonly workqueueQueueDuration: Histogram<'name'>;
  readonly workqueueWorkDuration: Histogram<'name'>;
  readonly workqueueUnfinished: Gauge<'name'>;
  readonly workqueueLongestRunning: Gauge<'name'>;
  readonly leaderStatus: Gauge<'name'>;
  readonly webhookLatency: Histogram<'webhook'>;
  readonly webhookRequests: Counter<'webhook' | 'code'>;
  readonly restRequests: Counter<'client' | 'code' | 'method'>;
  readonly restLatency: Histogram<'client' | 'verb'>;
  readonly restRateLimiter: Histogram<'client' | 'verb'>;
  /** In-flight start times (ms) per queue, for the unfinished-work gauges. */
  readonly #inFlight = new Map<string, () => Iterable<number>>();
  readonly #now: () => number;

  /** `processMetrics` adds prom-client's process_* and nodejs_* collectors (on in production). */
  constructor(
    registry: Registry = new Registry(),
    opts: { processMetrics?: boolean; now?: () => number } = {},
  ) {
    this.registry = registry;
    this.#now = opts.now ?? Date.now;
    const registers = [registry];
    const inFlight = this.#inFlight;
    const now = this.#now;
    // Per queue: how long the in-flight items have been processed, summed / longest (client-go).
    const inFlightGauge = (name: string, help: string, reduce: (ages: number[]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['name'],
        registers,
        collect() {
          const t = now();
          for (const [queue, since] of inFlight) {
            const ages = [...since()].map((s) => Math.max(0, t - s) / 1000);
            this.set({ name: queue }, ages.length ? reduce(ages) : 0);
          }
        },
      });
    this.workqueueUnfinished = inFlightGauge(
      'workqueue_unfinished_work_seconds',
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads.",
      (ages) => ages.reduce((a, b) => a + b, 0),
    );
    this.workqueueLongestRunning = inFlightGauge(
      'workqueue_longest_running_processor_seconds',
      'How many seconds has the longest running processor for workqueue been running.',
      (ages) => Math.max(...ages),
    );
    this.webhookLatency = new Histogram({
      name: 'controller_runtime_webhook_latency_seconds',
      help: 'Histogram of the latency of processing admission requests',
      labelNames: ['webhook'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.webhookRequests = new Counter({
      name: 'controller_runtime_webhook_requests_total',
      help: 'Total number of admission requests by HTTP status code.',
      labelNames: ['webhook', 'code'],
      registers,
    });
    this.restRequests = new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests to the API server, partitioned by client, status code and method.',
      labelNames: ['client', 'code', 'method'],
      registers,
    });
    this.restLatency = new Histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds (rate limiter wait included), by client and verb.',
      labelNames: ['client', 'verb'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.restRateLimiter = new Histogram({
      name: 'rest_client_rate_limiter_duration_seconds',
      help: 'Client-side rate limiter latency in seconds (QPS/burst), by client and verb.',
      labelNames: ['client', 'verb'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.terminalErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.workqueueDepth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
    });
    this.workqueueAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.workqueueRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.workqueueQueueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workqueueWorkDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.leaderStatus = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
      registers,
    });
    // prom-client samples event-loop lag every 10 ms by default: a timer waking the process 100 times a
    // second was most of what an idle operator spent (bench footprint; docs/performance.md). Every 100 ms
    // still measures every stall (a stall delays the sample by its own length), for a fraction of that.
    if (opts.processMetrics)
      collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
  }

  /** Zero the per-result series so rates exist before the first reconcile (as controller-runtime does). */
  initController(controller: string): void {
    for (const result of RESULTS) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.terminalErrors.inc({ controller }, 0);
    this.activeWorkers.set({ controller }, 0);
  }

  /**
   * The workqueue hooks for a queue called `name`; `inFlight` lists the start times (ms) of the items
   * being processed, for workqueue_unfinished_work_seconds and workqueue_longest_running_processor_seconds.
   */
  queueMetrics(name: string, inFlight?: () => Iterable<number>): QueueMetrics {
    if (inFlight) this.#inFlight.set(name, inFlight);
    this.workqueueDepth.set({ name }, 0);
    this.workqueueAdds.inc({ name }, 0);
    this.workqueueRetries.inc({ name }, 0);
    return {
      depth: (n) => this.workqueueDepth.set({ name }, n),
      add: () => this.workqueueAdds.inc({ name }),
      retry: () => this.workqueueRetries.inc({ name }),
      queueDuration: (s) => this.workqueueQueueDuration.observe({ name }, s),
      workDuration: (s) => this.workqueueWorkDuration.observe({ name }, s),
    };
  }

  /** The rest_client_* hooks for an API client called `client` (one per controller). */
  restClientMetrics(client: string): RestClientMetrics {
    return {
      rateLimited: (verb, seconds) => this.restRateLimiter.observe({ client, verb }, seconds),
      request: (verb, code, seconds) => {
        this.restRequests.inc({ client, code, method: verb });
        this.restLatency.observe({ client, verb }, seconds);
      },
    };
  }

  /** The admission server's per-request hook (controller-runtime's webhook metrics, by path). */
  observeWebhook(webhook: string, code: number, seconds: number): void {
    this.webhookLatency.observe({ webhook }, seconds);
    this.webhookRequests.inc({ webhook, code: String(code) });
  }

  /** The leader_election_master_status hook for the lease called `name`. */
  leaderMetric(name: string): (leading: boolean) => void {
    this.leaderStatus.set({ name }, 0);
    return (leading) => this.leaderStatus.set({ name }, leading ? 1 : 0);
  }

  observeReconcile(controller: string, result: ReconcileResultLabel, seconds: number): void {
    this.reconcileTotal.inc({ controller, result });
    if (result === 'error') this.reconcileErrors.inc({ controller });
    this.reconcileTime.observe({ controller }, seconds);
  }
}
