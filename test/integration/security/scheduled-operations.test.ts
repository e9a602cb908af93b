// Item 6 of the threat model: CronOperations and WatchOperations on the CSV's RBAC
// (docs/adr/0011-scheduled-operations-carry-checked-authority.md). The operator's ServiceAccount holds none
// of the type verbs, so the webhook used to refuse every Operation it created for them (403) while the
// CronOperation went on saying Ready=True/ScheduleActive. Now an Operation the operator creates carries the
// authority the webhook checked when its CronOperation/WatchOperation was created or last edited; a tenant
// without the verb can neither create nor edit one, nor borrow one's authority by naming it as owner; and
// a refused run is a condition and a Warning Event.

import type { RestClient } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_CRON_OPERATION, LABEL_WATCH_OPERATION } from '../../../operator/src/api/annotations.ts';
import type { CronOperation } from '../../../operator/src/api/cronoperation.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { startWorld, type World } from './harness.ts';

const OPS = '/apis/ops.vworkspace.io/v1alpha1';
const TRIGGER = 'example.com/run-now';

const runCommand = (target?: string) => ({
  type: 'RunCommand',
  engine: 'job',
  ...(target ? { targetRef: { name: target } } : {}),
  parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
});

function createCron(client: RestClient, namespace: string, name: string, target: string) {
  return client.request({
    method: 'POST',
    path: `${OPS}/namespaces/${namespace}/cronoperations`,
    body: {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'CronOperation',
      metadata: { name },
      spec: { schedule: '* * * * *', operationTemplate: { spec: runCommand(target) } },
    },
  });
}

interface EventList {
  items: { reason?: string; type?: string; note?: string; regarding?: { name?: string } }[];
}

describe('CronOperations and WatchOperations run on the CSV RBAC with the authority checked at edit', () => {
  let w: World;
  let a: string;
  const crud = ['create', 'get', 'list', 'update', 'patch'];
  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    // A target without the capability: a CronOperation on it is admitted (with a warning), its runs are not.
    await w.instance(a, 'legacy', {});
    await w.grantProfile('runCommand.job', a);
    await w.grant('alice', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['cronoperations', 'watchoperations', 'operations'],
        verbs: crud,
      },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
    await w.grant('mallory', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['cronoperations', 'watchoperations', 'operations'],
        verbs: crud,
      },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses a tenant without the verb creating or editing a CronOperation', async () => {
    const created = await w.denial(createCron(w.as('mallory'), a, 'mallory-cron', 'shop'));
    expect(created.code).toBe(403);
    expect(created.causes.map((c) => c.field)).toEqual(['spec.operationTemplate.spec.targetRef.name']);

    await createCron(w.as('alice'), a, 'alice-cron', 'shop');
    const edited = await w.denial(
      w.as('mallory').request({
        method: 'PATCH',
        path: `${OPS}/namespaces/${a}/cronoperations/alice-cron`,
        contentType: 'application/merge-patch+json',
        body: { spec: { operationTemplate: { spec: { parameters: { command: ['sh', '-c', 'id'] } } } } },
      }),
    );
    expect(edited.code).toBe(403);
    expect(edited.message).toContain('may not runcommand');
  });

  it("refuses a tenant's own Operation that names a CronOperation as its owner", async () => {
    const cron = await w.admin.request<CronOperation>({
      method: 'GET',
      path: `${OPS}/namespaces/${a}/cronoperations/alice-cron`,
    });
    const d = await w.denial(
      w.as('mallory').request({
        method: 'POST',
        path: `${OPS}/namespaces/${a}/operations`,
        body: {
          apiVersion: 'ops.vworkspace.io/v1alpha1',
          kind: 'Operation',
          metadata: {
            name: 'borrowed',
            ownerReferences: [
              {
                apiVersion: 'ops.vworkspace.io/v1alpha1',
                kind: 'CronOperation',
                name: 'alice-cron',
                uid: cron.metadata.uid,
                controller: true,
              },
            ],
          },
          spec: runCommand('shop'),
        },
      }),
    );
    expect(d.code).toBe(403);
    expect(d.message).toContain('may not runcommand');
  });

  it('runs an admitted CronOperation on the CSV RBAC; a refused run is Ready=False/OperationRefused with a Warning Event', async () => {
    await createCron(w.as('alice'), a, 'legacy-cron', 'legacy');
    // The next minute's slot: alice-cron creates an Operation that the webhook admits and the operator runs.
    const op = await w.waitFor(
      'alice-cron to create an Operation that starts',
      async () => {
        const list = await w.admin.request<{ items: Operation[] }>({
          method: 'GET',
          path: `${OPS}/namespaces/${a}/operations?labelSelector=${encodeURIComponent(`${LABEL_CRON_OPERATION}=alice-cron`)}`,
        });
        return list.items.find((o) => o.status?.childRef !== undefined);
      },
      100_000,
    );
    expect(op.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'CronOperation', name: 'alice-cron' });
    expect(op.status?.conditions?.find((c) => c.type === 'Accepted')?.status).toBe('True');

    const legacy = await w.waitFor(
      'legacy-cron to say its run was refused',
      async () => {
        const c = await w.admin.request<CronOperation>({
          method: 'GET',
          path: `${OPS}/namespaces/${a}/cronoperations/legacy-cron`,
        });
        const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
        return ready?.reason === 'OperationRefused' ? c : undefined;
      },
      100_000,
    );
    const ready = legacy.status?.conditions?.find((x) => x.type === 'Ready');
    expect(ready?.status).toBe('False');
    expect(ready?.message).toMatch(/refused/);
    expect(ready?.message).toMatch(/runcommand/);
    expect(legacy.status?.missedSlots?.at(-1)?.reason).toBe('OperationRefused');
    expect(Date.parse(legacy.status?.nextScheduleTime ?? '')).toBeGreaterThan(
      Date.parse(legacy.status?.lastScheduleTime ?? ''),
    );
    // Events are written behind the status, in the background: wait for it rather than read once.
    const warning = await w.waitFor('the OperationRefused event', async () => {
      const events = await w.admin.request<EventList>({
        method: 'GET',
        path: `/apis/events.k8s.io/v1/namespaces/${a}/events`,
      });
      return events.items.find((e) => e.regarding?.name === 'legacy-cron' && e.reason === 'OperationRefused');
    });
    expect(warning?.type).toBe('Warning');
  });

  it('runs a WatchOperation trigger on the CSV RBAC: the Operation targets the instance that changed', async () => {
    await w.as('alice').request({
      method: 'POST',
      path: `${OPS}/namespaces/${a}/watchoperations`,
      body: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'WatchOperation',
        metadata: { name: 'on-demand' },
        spec: {
          selector: { matchLabels: { 'example.com/tier': 'web' } },
          triggers: { labels: [TRIGGER] },
          operationTemplate: { spec: runCommand() },
        },
      },
    });
    await w.admin.request({
      method: 'PATCH',
      path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${a}/applicationinstances/shop`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { 'example.com/tier': 'web', [TRIGGER]: 'true' } } },
    });
    const op = await w.waitFor('on-demand to create an Operation that starts', async () => {
      const list = await w.admin.request<{ items: Operation[] }>({
        method: 'GET',
        path: `${OPS}/namespaces/${a}/operations?labelSelector=${encodeURIComponent(`${LABEL_WATCH_OPERATION}=on-demand`)}`,
      });
      return list.items.find((o) => o.status?.childRef !== undefined);
    });
    expect(op.spec.targetRef.name).toBe('shop');
    expect(op.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'WatchOperation', name: 'on-demand' });
  });
});
