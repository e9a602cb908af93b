// Operation metrics: how many ended and how (vworkspace_operations_total{type,engine,result}), how long
// they ran (vworkspace_operation_duration_seconds, from startedAt, or creation when nothing started, to
// finishedAt), and how many wait now, by Blocked reason (vworkspace_operations_blocked{reason}, computed
// from the informer cache at scrape time, so it is never out of step with the cluster).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Operation } from '../api/operation.ts';
import { CONDITION_BLOCKED } from '../api/reasons.ts';

const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400];

export class OperationMetrics {
  readonly total: Counter<'type' | 'engine' | 'result'>;
  readonly duration: Histogram<'type' | 'engine' | 'result'>;
  readonly blocked: Gauge<'reason'>;

  constructor(registry: Registry, operations: () => readonly Operation[]) {
    const registers = [registry];
    this.total = new Counter({
      name: 'vworkspace_operations_total',
      help: 'Operations that finished, by type, engine and result (succeeded, failed, cancelled)',
      labelNames: ['type', 'engine', 'result'],
      registers,
    });
    this.duration = new Histogram({
      name: 'vworkspace_operation_duration_seconds',
      help: 'Seconds from an Operation start (its first child) to its end',
      labelNames: ['type', 'engine', 'result'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.blocked = new Gauge({
      name: 'vworkspace_operations_blocked',
      help: 'Operations currently Blocked, by reason',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const op of operations()) {
          if (op.status?.phase !== 'Blocked') continue;
          const reason = op.status.conditions?.find((c) => c.type === CONDITION_BLOCKED)?.reason ?? 'Unknown';
          counts.set(reason, (counts.get(reason) ?? 0) + 1);
        }
        for (const [reason, n] of counts) this.set({ reason }, n);
      },
    });
  }

  finished(op: Operation, result: string, seconds: number | undefined): void {
    const labels = { type: op.spec.type, engine: op.spec.engine, result: result.toLowerCase() };
    this.total.inc(labels);
    if (seconds !== undefined && seconds >= 0) this.duration.observe(labels, seconds);
  }
}
