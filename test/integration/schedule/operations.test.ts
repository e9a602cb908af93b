// CronOperation and WatchOperation with the Operation reconciler running too: what they create goes
// through the Operation's own preconditions and cancel. The schedulers run on a FakeClock the test moves;
// the Operation reconciler (fake adapter: the child is a ConfigMap) on real time.

import { FakeClock } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_APPROVE,
  type CronOperation,
  type Operation,
  type OperationSpec,
  type WatchOperation,
} from '../../../operator/src/api/index.ts';
import { OPERATION_CONTROLLER_NAME } from '../../../operator/src/operation/controller.ts';
import { operationNameForSlot } from '../../../operator/src/schedule/slots.ts';
import { fakeAdapter } from '../../support/builders/operation.ts';
import { testClient } from '../../support/clients.ts';
import { Api, cond, type RunningController, startController } from '../operation/support.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  advanceToNextSlot,
  create,
  cronObject,
  eventually,
  getObject,
  instanceObject,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
  type Schedulers,
  startSchedulers,
  watchObject,
} from './support.ts';

const LABEL = 'maintenance.example.com/backup-now';
/** What the created Operations run: the fake adapter's Backup, on the `app` instance for a CronOperation. */
const BACKUP = { type: 'Backup', engine: 'workflow' } as const;

describe('scheduled Operations through the Operation reconciler', () => {
  const kc = adminKubeConfig();
  const api = new Api(kc);
  const raw = testClient(kc);
  const clock = new FakeClock(Date.now());
  let reconciler: RunningController;
  let schedulers: Schedulers;

  beforeAll(() => {
    const fake = fakeAdapter('workflow');
    reconciler = startController(kc, (e) => (e === 'workflow' ? fake : undefined));
    schedulers = startSchedulers(kc, clock, { cron: true, watch: true });
  });
  afterAll(async () => {
    await schedulers.stop();
    await reconciler.stop();
  });

  const phase = (ns: string, name: string, want: string) => async () => {
    const op = await api.getOperation(ns, name);
    return op.status?.phase === want ? op : undefined;
  };
  const childrenOf = async (ns: string, op: Operation) =>
    (await api.configMaps(ns)).filter((c) => c.metadata?.ownerReferences?.[0]?.name === op.metadata.name);
  const reconciles = async () =>
    (await reconciler.metrics.reconcileTotal.get()).values
      .filter((v) => v.labels.controller === OPERATION_CONTROLLER_NAME)
      .reduce((n, v) => n + v.value, 0);
  /** Makes the Operation reconciler look at `name` again (a label change) and waits until it has. */
  const poke = async (ns: string, name: string) => {
    const before = await reconciles();
    await api.patchOperation(ns, name, { metadata: { labels: { poke: String(before) } } });
    await eventually('a reconcile after the poke', async () => (await reconciles()) > before);
  };
  /** Blocked/AwaitingApproval, still so after another look, with no child; then approved, it runs. */
  const expectApprovalGate = async (ns: string, name: string) => {
    const blocked = await eventually('Blocked', phase(ns, name, 'Blocked'));
    expect(cond(blocked, 'Blocked')).toMatchObject({ status: 'True', reason: 'AwaitingApproval' });
    await poke(ns, name);
    expect((await api.getOperation(ns, name)).status?.phase).toBe('Blocked');
    expect(await childrenOf(ns, blocked)).toEqual([]);
    await api.patchOperation(ns, name, { metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } } });
    const running = await eventually('Running after approval', phase(ns, name, 'Running'));
    expect(await childrenOf(ns, running)).toHaveLength(1);
  };

  it('Replace: the running Operation is stopped through its spec.cancel, ends Cancelled and is kept; the new slot runs', async () => {
    const ns = await createNamespace(kc, 'sched');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await create(
      raw,
      cronObject(ns, 'replacer', {
        concurrencyPolicy: 'Replace',
        operationTemplate: { spec: { ...BACKUP, targetRef: { name: 'app' } } },
      }),
    );
    const slot1 = await advanceToNextSlot(raw, clock, ns, 'replacer');
    const name1 = operationNameForSlot('replacer', new Date(slot1));
    const first = await eventually('first Running', phase(ns, name1, 'Running'));
    expect(await childrenOf(ns, first)).toHaveLength(1);

    const slot2 = await advanceToNextSlot(raw, clock, ns, 'replacer', slot1);
    const name2 = operationNameForSlot('replacer', new Date(slot2));
    const cancelled = await eventually('first Cancelled', phase(ns, name1, 'Cancelled'));
    expect(cancelled.spec.cancel).toBe(true);
    expect(cond(cancelled, 'Succeeded')).toMatchObject({ status: 'False', reason: 'Cancelled' });
    await eventually('its child stopped', async () => (await childrenOf(ns, cancelled)).length === 0);
    const second = await eventually('second Running', phase(ns, name2, 'Running'));
    expect(await childrenOf(ns, second)).toHaveLength(1);
    expect((await listOperations(raw, ns)).map((o) => o.metadata.name)).toEqual([name1, name2]);
    await eventually('only the new one active', async () => {
      const s = (await getObject<CronOperation>(raw, kinds.cron, ns, 'replacer')).status;
      return s?.active?.length === 1 && s.active[0]?.name === name2;
    });
  });

  it("requiresApproval: a CronOperation's Operation waits for approval, also when its template carries the approve annotation", async () => {
    const ns = await createNamespace(kc, 'sched');
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    const spec: OperationSpec = { ...BACKUP, targetRef: { name: 'app' }, policy: { requiresApproval: true } };
    await create(
      raw,
      cronObject(ns, 'gated', {
        operationTemplate: { metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } }, spec },
      }),
    );
    const slot = await advanceToNextSlot(raw, clock, ns, 'gated');
    const name = operationNameForSlot('gated', new Date(slot));
    const op = await eventually('created', () => api.getOperation(ns, name));
    expect(op.metadata.annotations?.[ANNOTATION_APPROVE]).toBeUndefined();
    await expectApprovalGate(ns, name);
  });

  it("requiresApproval: a WatchOperation's Operation waits for approval, also when its template carries the approve annotation", async () => {
    const ns = await createNamespace(kc, 'sched');
    await create(
      raw,
      instanceObject(ns, 'app', { labels: { tier: 'prod' }, capabilities: { backup: 'workflow' } }),
    );
    await api.setReady(ns, 'app', true);
    await create(
      raw,
      watchObject(ns, 'gated', {
        triggers: { labels: [LABEL] },
        operationTemplate: {
          metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } },
          spec: { ...BACKUP, policy: { requiresApproval: true } },
        },
      }),
    );
    await eventually('watching', async () => {
      const w = await getObject<WatchOperation>(raw, kinds.watch, ns, 'gated');
      return w.status?.watchingResources === 1;
    });
    await mergePatch(raw, pathOf(kinds.instance, ns, 'app'), { metadata: { labels: { [LABEL]: 'now' } } });
    const [op] = await eventually('created', async () => {
      const list = await listOperations(raw, ns);
      return list.length === 1 ? list : undefined;
    });
    expect(op?.spec.targetRef).toEqual({ name: 'app' });
    expect(op?.metadata.annotations?.[ANNOTATION_APPROVE]).toBeUndefined();
    await expectApprovalGate(ns, op?.metadata.name ?? '');
  });
});
