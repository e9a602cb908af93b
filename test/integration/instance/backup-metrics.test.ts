// The per-instance backup metrics against the real API server: the instance controller records the last
// successful Backup in the instance's status (the CRD keeps the field), and an operator started afresh —
// a new cache, a new registry — exports it and the Backup schedule's interval from the objects alone, after
// the Operation that proved it was deleted (a history limit or TTL would do the same).

import { FakeClock } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationInstance } from '../../../operator/src/api/index.ts';
import { BACKUP_METRICS } from '../../../operator/src/instance/backup-metrics.ts';
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

describe('per-instance backup metrics', () => {
  const kc = adminKubeConfig();
  const client = testClient(kc);
  const schedulers = startSchedulers(kc, new FakeClock(Date.now()));
  let operator: ReturnType<typeof startInstanceController> | undefined;
  let ns: string;

  beforeAll(async () => {
    ns = await createNamespace(kc, 'backupmetrics');
  });

  afterAll(async () => {
    await schedulers.stop();
    await operator?.stop();
  });

  it('survives an operator restart and the pruning of the Operation', async () => {
    operator = startInstanceController(kc);
    await create(client, instanceObject(ns, 'shop'));
    await create(client, cronObject(ns, 'nightly', { schedule: '30 2 * * *' }));
    await client.request({
      method: 'POST',
      path: pathOf(kinds.op, ns),
      body: {
        apiVersion: kinds.op.apiVersion,
        kind: kinds.op.kind,
        metadata: { name: 'backup-1' },
        spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
      },
    });
    const finishedAt = '2026-11-27T02:30:41Z';
    await finishOperation(client, ns, 'backup-1', 'Succeeded', Date.parse(finishedAt));
    const recorded = await eventually('status.lastSuccessfulBackup', async () => {
      const i = await getObject<ApplicationInstance>(client, kinds.instance, ns, 'shop');
      return i.status?.lastSuccessfulBackup;
    });
    expect(recorded).toEqual({ time: finishedAt, operation: 'backup-1' });

    // The operator goes away; the Operation is deleted meanwhile; a new operator starts from nothing.
    await operator.stop();
    await client.request({ method: 'DELETE', path: pathOf(kinds.op, ns, 'backup-1') });
    operator = startInstanceController(kc);
    const registry = operator.metrics.registry;
    const labels = `{namespace="${ns}",applicationinstance="shop"}`;
    const scraped = await eventually('the new operator exports the instance', async () => {
      const text = await registry.metrics();
      return text.includes(`${BACKUP_METRICS.interval}${labels}`) ? text : undefined;
    });
    const cron = await getObject<{ metadata: { creationTimestamp?: string } }>(
      client,
      kinds.cron,
      ns,
      'nightly',
    );
    expect(scraped).toContain(`${BACKUP_METRICS.lastSuccessful}${labels} ${Date.parse(finishedAt) / 1000}`);
    expect(scraped).toContain(`${BACKUP_METRICS.interval}${labels} 86400`);
    expect(scraped).toContain(
      `${BACKUP_METRICS.scheduledSince}${labels} ${Date.parse(String(cron.metadata.creationTimestamp)) / 1000}`,
    );
    // Nothing a drill would set exists yet, so neither do its series.
    expect(scraped).not.toContain(`${BACKUP_METRICS.lastVerified}${labels}`);
  });
});
