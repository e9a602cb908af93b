// Operation metrics: how many ended and how (vworkspace_operations_total{type,engine,result}), how long
// they ran (vworkspace_operation_duration_seconds, from startedAt, or creation when nothing started, to
// finishedAt), and how many wait now, by Blocked reason (vworkspace_operations_blocked{reason}, computed
// from the informer cache at scrape time, so it is never out of step with the cluster), and how long the
// oldest of them has waited, by namespace and reason (vworkspace_operations_blocked_oldest_seconds: the
// "Blocked too long" alert), and which ended RollbackFailed (vworkspace_operations_rollback_failed: 1 per such
// Operation while it exists, so the VWorkspaceRollbackFailed alert lasts until someone put the release back
// and deleted it).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Operation } from '../api/operation.ts';
import { CONDITION_BLOCKED, CONDITION_SUCCEEDED } from '../api/reasons.ts';

const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400];

export class OperationMetrics {
  readonly total: Counter<'type' | 'engine' | 'result'>;
  readonly duration: Histogram<'type' | 'engine' | 'result'>;
  readonly blocked: Gauge<'reason'>;
  readonly blockedOldest: Gauge<'namespace' | 'reason'>;
  readonly rollbackFailed: Gauge<'namespace' | 'operation' | 'applicationinstance'>;

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
    this.blockedOldest = new Gauge({
      name: 'vworkspace_operations_blocked_oldest_seconds',
      help: 'Seconds the longest-Blocked Operation has been Blocked (since its Blocked condition turned True), by namespace and reason',
      labelNames: ['namespace', 'reason'],
      registers,
      collect() {
        this.reset();
        const oldest = new Map<string, { namespace: string; reason: string; since: number }>();
        for (const op of operations()) {
          if (op.status?.phase !== 'Blocked') continue;
          const c = op.status.conditions?.find((x) => x.type === CONDITION_BLOCKED);
          const since = Date.parse(String(c?.lastTransitionTime ?? ''));
          if (Number.isNaN(since)) continue;
          const namespace = op.metadata.namespace ?? '';
          const reason = c?.reason ?? 'Unknown';
          const key = `${namespace}\u0000${reason}`;
          const seen = oldest.get(key);
          if (!seen || since < seen.since) oldest.set(key, { namespace, reason, since });
        }
        const now = Date.now();
        for (const o of oldest.values())
          this.set({ namespace: o.namespace, reason: o.reason }, Math.max(0, (now - o.since) / 1000));
      },
    });
    this.rollbackFailed = new Gauge({
      name: 'vworkspace_operations_rollback_failed',
      help: 'Operations that ended Failed/RollbackFailed (putting the release or its data back failed: someone must act), 1 each while they exist',
      labelNames: ['namespace', 'operation', 'applicationinstance'],
      registers,
      collect() {
        this.reset();
        for (const op of operations()) {
          if (op.status?.phase !== 'Failed') continue;
          const c = op.status.conditions?.find((x) => x.type === CONDITION_SUCCEEDED);
          if (c?.reason !== 'RollbackFailed') continue;
          this.set(
            {
              namespace: op.metadata.namespace ?? '',
              operation: op.metadata.name ?? '',
              applicationinstance: op.spec.targetRef.name,
            },
            1,
          );
        }
      },
    });
  }

  finished(op: Operation, result: string, seconds: number | undefined): void {
    const labels = { type: op.spec.type, engine: op.spec.engine, result: result.toLowerCase() };
    this.total.inc(labels);
    if (seconds !== undefined && seconds >= 0) this.duration.observe(labels, seconds);
  }
}
