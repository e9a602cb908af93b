import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { cronOp } from '../../../test/support/builders/schedule.ts';
import { registerCronMetrics } from './cron-metrics.ts';

describe('vworkspace_cronoperation_next_schedule_time_seconds', () => {
  it('is status.nextScheduleTime in unix seconds per CronOperation, absent while suspended or unplanned', async () => {
    const planned = { ...cronOp(), status: { nextScheduleTime: '2025-06-01T01:00:00Z' } };
    const suspended = {
      ...cronOp({ suspend: true }),
      metadata: { name: 'paused', namespace: 'team' },
      status: planned.status,
    };
    const unplanned = { ...cronOp(), metadata: { name: 'invalid', namespace: 'team' } };
    const gauge = registerCronMetrics(new Registry(), () => [planned, suspended, unplanned]);
    expect((await gauge.get()).values).toEqual([
      {
        labels: { namespace: 'team', cronoperation: 'nightly' },
        value: Date.parse('2025-06-01T01:00:00Z') / 1000,
      },
    ]);
  });
});
