// The ApplicationInstance's own view of the day-2 work on it, against the real API server: the instance
// controller fills status.operations (per type: unfinished count, current, last) from the Operations that
// target it and status.nextScheduledRun from the CronOperations that target it (the cron controller runs
// too, on a FakeClock, so the planned time is the one it really plans).

import { FakeClock, PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationInstance } from '../../../operator/src/api/index.ts';
import { testClient } from '../../support/clients.ts';
import { startInstanceController } from '../operation/support.ts';
import {
  create,
  cronObject,
  eventually,
  finishOperation,
  getObject,
  instanceObject,
  kinds,
  pathOf,
  startSchedulers,
} from '../schedule/support.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

describe('ApplicationInstance status.operations and status.nextScheduledRun', () => {
  const kc = adminKubeConfig();
  const client = testClient(kc);
  const clock = new FakeClock(Date.now());
  const schedulers = startSchedulers(kc, clock);
  let instances: { stop(): Promise<void> } | undefined;
  let ns: string;

  const getInstance = (name: string) => getObject<ApplicationInstance>(client, kinds.instance, ns, name);
  const operation = (name: string, type: string, engine: string) =>
    client.request({
      method: 'POST',
      path: pathOf(kinds.op, ns),
      body: {
        apiVersion: kinds.op.apiVersion,
        kind: kinds.op.kind,
        metadata: { name },
        spec: { type, engine, targetRef: { name: 'shop' } },
      },
    });

  beforeAll(async () => {
    ns = await createNamespace(kc, 'aistatus');
    instances = startInstanceController(kc);
  });

  afterAll(async () => {
    await schedulers.stop();
    await instances?.stop();
  });

  it('shows running and last Operations per type, and the next run a CronOperation plans for it', async () => {
    await create(client, instanceObject(ns, 'shop', { labels: { tier: 'prod' } }));
    await create(client, instanceObject(ns, 'wiki'));
    await operation('backup-1', 'Backup', 'velero');
    await operation('upgrade-1', 'Upgrade', 'helm');
    await client.request({
      method: 'PATCH',
      path: pathOf(kinds.op, ns, 'backup-1', 'status'),
      body: { status: { phase: 'Running', startedAt: '2025-06-01T01:00:00Z' } },
      contentType: PATCH_TYPES.merge,
    });

    const first = await eventually('status.operations', async () => {
      const s = (await getInstance('shop')).status?.operations;
      return s?.find((o) => o.type === 'Backup')?.current?.phase === 'Running' && s.length === 2
        ? s
        : undefined;
    });
    expect(first).toEqual([
      {
        type: 'Backup',
        active: 1,
        current: { name: 'backup-1', phase: 'Running', time: '2025-06-01T01:00:00Z' },
      },
      {
        type: 'Upgrade',
        active: 1,
        current: expect.objectContaining({ name: 'upgrade-1', phase: 'Pending' }),
      },
    ]);

    await finishOperation(client, ns, 'backup-1', 'Succeeded', Date.parse('2025-06-01T01:05:00Z'));
    await eventually('the backup is the last one', async () => {
      const b = (await getInstance('shop')).status?.operations?.find((o) => o.type === 'Backup');
      return b?.last?.name === 'backup-1' && !b.current ? b : undefined;
    });
    // Deleting the finished Operation (history, TTL) does not make the instance forget it.
    await client.request({ method: 'DELETE', path: pathOf(kinds.op, ns, 'backup-1') });
    await operation('upgrade-2', 'Upgrade', 'helm'); // a change that makes the controller look again
    await eventually(
      'two upgrades active',
      async () =>
        (await getInstance('shop')).status?.operations?.find((o) => o.type === 'Upgrade')?.active === 2,
    );
    expect((await getInstance('shop')).status?.operations?.find((o) => o.type === 'Backup')).toEqual({
      type: 'Backup',
      last: { name: 'backup-1', phase: 'Succeeded', time: '2025-06-01T01:05:00Z' },
    });

    // A fleet CronOperation selecting tier=prod plans the next run for shop, not for wiki.
    await create(
      client,
      cronObject(ns, 'nightly', {
        schedule: '30 2 * * *',
        targetSelector: { matchLabels: { tier: 'prod' } },
        operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      }),
    );
    const planned = await eventually(
      'the planned run',
      async () => (await getInstance('shop')).status?.nextScheduledRun,
    );
    const cron = await getObject<{ status?: { nextScheduleTime?: string } }>(
      client,
      kinds.cron,
      ns,
      'nightly',
    );
    expect(planned).toEqual({
      time: cron.status?.nextScheduleTime,
      cronOperation: 'nightly',
      type: 'Backup',
    });
    expect((await getInstance('wiki')).status?.nextScheduledRun).toBeUndefined();
  });
});
