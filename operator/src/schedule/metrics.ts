// Schedule metrics: how late each scheduled run was created (vworkspace_schedule_lag_seconds, from the
// slot's time to the moment the Operation exists), the number a user compares with the CronJob
// controller's lag, and the slots passed over without a run (vworkspace_schedule_missed_runs_total).
import { Counter, Histogram, type Registry } from 'prom-client';

// From "on time" to "a minute late and more": a `* * * * *` schedule must stay well under 60 s.
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];

export class ScheduleMetrics {
  readonly lag: Histogram<'kind'>;
  readonly missed: Counter<'kind' | 'reason'>;

  constructor(registry: Registry) {
    const registers = [registry];
    // Controllers built in one process share the registry: reuse what a sibling registered.
    this.lag =
      (registry.getSingleMetric('vworkspace_schedule_lag_seconds') as Histogram<'kind'> | undefined) ??
      new Histogram({
        name: 'vworkspace_schedule_lag_seconds',
        help: 'Seconds from a scheduled slot to the creation of its Operation',
        labelNames: ['kind'],
        buckets: LAG_BUCKETS,
        registers,
      });
    this.missed =
      (registry.getSingleMetric('vworkspace_schedule_missed_runs_total') as
        | Counter<'kind' | 'reason'>
        | undefined) ??
      new Counter({
        name: 'vworkspace_schedule_missed_runs_total',
        help: 'Scheduled slots passed over without a run, by reason (StartingDeadlineExceeded, ConcurrencyForbidden, Missed)',
        labelNames: ['kind', 'reason'],
        registers,
      });
  }
}
