import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { cronOp } from '../../../test/support/builders/schedule.ts';
import {
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  type ApplicationInstanceStatus,
  type CronOperation,
  type CronOperationSpec,
} from '../api/index.ts';
import {
  BACKUP_METRICS,
  registerBackupMetrics,
  scheduleInterval,
  scheduleSamples,
  statusSamples,
} from './backup-metrics.ts';

const HOUR = 3600;
const DAY = 24 * HOUR;

function instance(
  name: string,
  status?: ApplicationInstanceStatus,
  labels?: Record<string, string>,
  namespace = 'team',
): ApplicationInstance {
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: { appRef: { catalogId: 'tiny' }, release: { name } },
    ...(status ? { status } : {}),
  };
}

function cron(
  name: string,
  spec: Partial<CronOperationSpec>,
  nextScheduleTime: string | undefined,
  created = '2025-06-01T00:00:00Z',
): CronOperation {
  const c = cronOp(spec);
  return {
    ...c,
    metadata: { ...c.metadata, name, creationTimestamp: created as unknown as Date },
    ...(nextScheduleTime ? { status: { nextScheduleTime } } : {}),
  };
}

const proven: ApplicationInstanceStatus = {
  lastSuccessfulBackup: { time: '2026-11-27T02:00:00Z', operation: 'nightly-1' },
  lastVerifiedBackup: { time: '2026-11-27T04:00:00Z', operation: 'drill-1', backup: 'b1', rtoSeconds: 93.5 },
  lastDrill: { time: '2026-11-27T04:00:00Z', operation: 'drill-1', result: 'Succeeded' },
};
const unix = (t: string) => Date.parse(t) / 1000;
const labels = (applicationinstance: string, namespace = 'team') => ({ namespace, applicationinstance });

describe('statusSamples: what the instance status records', () => {
  const instances = [
    instance('shop', proven),
    instance('blog', {
      lastSuccessfulBackup: { time: '2026-11-26T02:00:00Z', operation: 'b' },
      lastDrill: { time: '2026-11-27T05:00:00Z', operation: 'drill-9', result: 'Failed' },
    }),
    instance('new'),
  ];

  it('exports the last successful backup, the last verified backup and its RTO in seconds', () => {
    expect(statusSamples('lastSuccessful', instances)).toEqual([
      { labels: labels('shop'), value: unix('2026-11-27T02:00:00Z') },
      { labels: labels('blog'), value: unix('2026-11-26T02:00:00Z') },
    ]);
    expect(statusSamples('lastVerified', instances)).toEqual([
      { labels: labels('shop'), value: unix('2026-11-27T04:00:00Z') },
    ]);
    expect(statusSamples('drillRto', instances)).toEqual([{ labels: labels('shop'), value: 93.5 }]);
  });

  it('says 1 for a last drill that passed and 0 for one that failed; nothing without a drill', () => {
    expect(statusSamples('drillSucceeded', instances)).toEqual([
      { labels: labels('shop'), value: 1 },
      { labels: labels('blog'), value: 0 },
    ]);
  });

  it('exports no series for a value the status does not have or cannot be read', () => {
    const bad = instance('bad', { lastSuccessfulBackup: { time: 'yesterday', operation: 'x' } });
    expect(statusSamples('lastSuccessful', [instance('new'), bad])).toEqual([]);
  });
});

describe('scheduleInterval: the longest gap a healthy schedule leaves', () => {
  it.each([
    ['hourly', '0 * * * *', 'UTC', '2026-11-27T10:00:00Z', HOUR],
    ['daily', '30 2 * * *', 'UTC', '2026-11-27T02:30:00Z', DAY],
    // Friday's run, then Monday's: the weekend is the gap a weekday schedule always has.
    ['on weekdays', '0 2 * * 1-5', 'UTC', '2026-11-25T02:00:00Z', 3 * DAY],
    // Berlin falls back on 2026-10-25: that day is 25 hours long.
    ['daily across a fall-back day', '0 2 * * *', 'Europe/Berlin', '2026-10-23T00:00:00Z', 25 * HOUR],
  ])('%s (%s in %s) is %d s', (_, schedule, timeZone, next, seconds) => {
    expect(scheduleInterval(cron('c', { schedule, timeZone }, next))).toBe(seconds);
  });

  it('is undefined for a schedule that plans nothing: suspended, not yet planned, or invalid', () => {
    expect(scheduleInterval(cron('c', { suspend: true }, '2026-11-27T10:00:00Z'))).toBeUndefined();
    expect(scheduleInterval(cron('c', {}, undefined))).toBeUndefined();
    expect(scheduleInterval(cron('c', { schedule: '61 * * * *' }, '2026-11-27T10:00:00Z'))).toBeUndefined();
  });
});

describe('scheduleSamples: what the Backup schedules of an instance lead one to expect', () => {
  const next = '2026-11-27T10:00:00Z';
  const restoreSpec = {
    schedule: '* * * * *',
    operationTemplate: {
      spec: { type: 'Restore' as const, engine: 'velero' as const, targetRef: { name: 'shop' } },
    },
  };

  it("takes the most frequent Backup schedule's interval and the oldest one's creation", () => {
    const crons = [
      cron('daily', { schedule: '0 3 * * *' }, next, '2026-01-01T00:00:00Z'),
      cron('hourly', { schedule: '0 * * * *' }, next, '2026-06-01T00:00:00Z'),
      cron('restores', restoreSpec, next, '2025-01-01T00:00:00Z'),
    ];
    expect(scheduleSamples([instance('shop')], crons)).toEqual({
      interval: [{ labels: labels('shop'), value: HOUR }],
      scheduledSince: [{ labels: labels('shop'), value: unix('2026-01-01T00:00:00Z') }],
    });
  });

  it('counts fleet schedules by their selector, and nothing for instances without a Backup schedule', () => {
    const fleet = cron(
      'fleet',
      {
        schedule: '0 4 * * *',
        targetSelector: { matchLabels: { tier: 'prod' } },
        operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      },
      next,
    );
    const instances = [
      instance('a', undefined, { tier: 'prod' }),
      instance('b', undefined, { tier: 'dev' }),
      instance('a', undefined, { tier: 'prod' }, 'elsewhere'),
    ];
    expect(scheduleSamples(instances, [fleet]).interval).toEqual([{ labels: labels('a'), value: DAY }]);
  });

  it('ignores suspended schedules', () => {
    const crons = [cron('paused', { schedule: '0 * * * *', suspend: true }, next)];
    expect(scheduleSamples([instance('shop')], crons)).toEqual({ interval: [], scheduledSince: [] });
  });
});

describe('registerBackupMetrics', () => {
  const crons = [cron('nightly', { schedule: '0 2 * * *' }, '2026-11-28T02:00:00Z')];
  const objects = () => [instance('shop', proven), instance('new')];

  async function scrape(instances: () => ApplicationInstance[]): Promise<string> {
    const registry = new Registry();
    registerBackupMetrics(registry, instances, () => crons);
    return registry.metrics();
  }

  it('exports one series per instance and metric, labelled namespace and applicationinstance only', async () => {
    const text = await scrape(objects);
    const series = text.split('\n').filter((l) => l.startsWith('vworkspace_instance_'));
    expect(series.sort()).toEqual(
      [
        `${BACKUP_METRICS.lastSuccessful}{namespace="team",applicationinstance="shop"} ${unix('2026-11-27T02:00:00Z')}`,
        `${BACKUP_METRICS.lastVerified}{namespace="team",applicationinstance="shop"} ${unix('2026-11-27T04:00:00Z')}`,
        `${BACKUP_METRICS.drillRto}{namespace="team",applicationinstance="shop"} 93.5`,
        `${BACKUP_METRICS.drillSucceeded}{namespace="team",applicationinstance="shop"} 1`,
        `${BACKUP_METRICS.interval}{namespace="team",applicationinstance="shop"} ${DAY}`,
        `${BACKUP_METRICS.scheduledSince}{namespace="team",applicationinstance="shop"} ${unix('2025-06-01T00:00:00Z')}`,
      ].sort(),
    );
  });

  it('reads everything from the objects: a new process over the same objects exports the same values', async () => {
    expect(await scrape(objects)).toBe(await scrape(objects));
    // An instance that is gone leaves no series behind at the next scrape.
    const registry = new Registry();
    let instances = objects();
    registerBackupMetrics(
      registry,
      () => instances,
      () => crons,
    );
    expect(await registry.metrics()).toContain('applicationinstance="shop"');
    instances = [];
    expect(await registry.metrics()).not.toContain('applicationinstance="shop"');
  });

  it('reads the instances once per scrape, for all six gauges', async () => {
    const registry = new Registry();
    let reads = 0;
    registerBackupMetrics(
      registry,
      () => {
        reads++;
        return objects();
      },
      () => crons,
    );
    await registry.metrics();
    expect(reads).toBe(1);
    await registry.metrics();
    expect(reads).toBe(2);
  });
});
