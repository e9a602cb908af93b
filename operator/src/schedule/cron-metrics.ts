// CronOperation metrics, computed from the informer cache at scrape time (never out of step):
// vworkspace_cronoperation_next_schedule_time_seconds — when each active CronOperation plans its next run,
// as kube-state-metrics' kube_cronjob_next_schedule_time does for CronJobs. A value well in the past means
// the schedule stalled (the operator is not leading, is stuck, or cannot write status): the
// VWorkspaceScheduleStalled alert. Suspended CronOperations plan nothing and have no series.
import { Gauge, type Registry } from 'prom-client';
import type { CronOperation } from '../api/index.ts';

export const NEXT_SCHEDULE_TIME_METRIC = 'vworkspace_cronoperation_next_schedule_time_seconds';

export function registerCronMetrics(registry: Registry, crons: () => readonly CronOperation[]): Gauge {
  return new Gauge({
    name: NEXT_SCHEDULE_TIME_METRIC,
    help: 'Unix time of the next run a CronOperation plans (status.nextScheduleTime); absent while suspended',
    labelNames: ['namespace', 'cronoperation'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of crons()) {
        const next = Date.parse(c.status?.nextScheduleTime ?? '');
        if (c.spec.suspend || Number.isNaN(next)) continue;
        this.set(
          { namespace: c.metadata.namespace ?? '', cronoperation: c.metadata.name ?? '' },
          next / 1000,
        );
      }
    },
  });
}
