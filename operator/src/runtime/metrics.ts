// Prometheus metrics with controller-runtime's names, so existing dashboards and alerts for
// controller-runtime operators work unchanged. One Registry per process (tests make their own);
// other packages register their own metrics (operations, admission latency, schedule lag) on
// `registry`.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
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

export class RuntimeMetrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly workqueueDepth: Gauge<'name'>;
  readonly workqueueAdds: Counter<'name'>;
  readonly workqueueRetries: Counter<'name'>;
  readonly workqueueQueueDuration: Histogram<'name'>;
  readonly workqueueWorkDuration: Histogram<'name'>;
  readonly leaderStatus: Gauge<'name'>;

  /** `processMetrics` adds prom-client's process_* and nodejs_* collectors (on in production). */
  constructor(registry: Registry = new Registry(), opts: { processMetrics?: boolean } = {}) {
    this.registry = registry;
    const registers = [registry];
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
    if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  }

  /** Zero the per-result series so rates exist before the first reconcile (as controller-runtime does). */
  initController(controller: string): void {
    for (const result of RESULTS) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.activeWorkers.set({ controller }, 0);
  }

  /** The workqueue hooks for a queue called `name`. */
  queueMetrics(name: string): QueueMetrics {
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
