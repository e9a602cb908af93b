// Run-now, fleets and parameters from the trigger, with the scheduling controllers on the real API server
// and a FakeClock the test moves (no test waits for a real slot).

import { FakeClock, type KubeClient } from '@vworkspace/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ANNOTATION_RUN_NOW,
  ANNOTATION_TRIGGER,
  type CronOperation,
  type CronOperationSpec,
  type Operation,
} from '../../../operator/src/api/index.ts';
import { CRON_EVENT, runOperationName } from '../../../operator/src/schedule/cron-decide.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  advanceToNextSlot,
  create,
  cronObject,
  eventsAbout,
  eventually,
  FaultyClient,
  finishOperation,
  getObject,
  instanceObject,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
  startSchedulers,
  watchObject,
} from './support.ts';

const kc = adminKubeConfig();
const raw = testClient(kc);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

function startOperator(clock: FakeClock, opts: { client?: KubeClient; watch?: boolean } = {}) {
  const op = startSchedulers(kc, clock, {
    ...(opts.client ? { client: opts.client } : {}),
    ...(opts.watch ? { cron: false, watch: true } : {}),
  });
  stops.push(() => op.stop());
  return op;
}

const getCron = (ns: string, name: string) => getObject<CronOperation>(raw, kinds.cron, ns, name);
const ops = (ns: string) => listOperations(raw, ns);
const runNow = (ns: string, name: string, value: string) =>
  mergePatch(raw, pathOf(kinds.cron, ns, name), {
    metadata: { annotations: { [ANNOTATION_RUN_NOW]: value } },
  });
const manualName = (cron: CronOperation, value: string) =>
  runOperationName(cron, { reason: 'manual', time: new Date(0), request: value }, 'shop');

async function cronIn(ns: string, name: string, spec: Partial<CronOperationSpec> = {}) {
  await create(raw, cronObject(ns, name, spec));
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, name) }).catch(() => undefined);
  });
  return getCron(ns, name);
}

describe('run-now', () => {
  it('runs the template once per value, recorded in status, adopted across a restart that lost the status write', async () => {
    const ns = await createNamespace(kc, 'runnow');
    const clock = new FakeClock(Date.now());
    const faulty = new FaultyClient(raw);
    const first = startOperator(clock, { client: faulty });
    const cron = await cronIn(ns, 'nightly');
    await eventually('first status', async () => (await getCron(ns, 'nightly')).status?.nextScheduleTime);

    // The Operation is created, the status write is lost, the process stops.
    faulty.failStatusOf = pathOf(kinds.cron, ns, 'nightly');
    await runNow(ns, 'nightly', 'req-1');
    const name = manualName(cron, 'req-1');
    await eventually('the manual Operation', async () =>
      (await ops(ns)).some((o) => o.metadata.name === name),
    );
    await first.stop();
    expect((await getCron(ns, 'nightly')).status?.manualRun).toBeUndefined();

    // A new process adopts it and records the request; nothing runs twice.
    startOperator(clock);
    const status = await eventually(
      'manualRun recorded',
      async () => (await getCron(ns, 'nightly')).status?.manualRun,
    );
    expect(status).toMatchObject({ request: 'req-1', phase: 'Created', operation: name });
    const created = await ops(ns);
    expect(created.map((o) => o.metadata.name)).toEqual([name]);
    expect(created[0]?.metadata.annotations?.[ANNOTATION_TRIGGER]).toBe('manual');
    expect(created[0]?.spec.targetRef).toEqual({ name: 'shop' });

    // Touching other metadata does not run it again; a new value does.
    await mergePatch(raw, pathOf(kinds.cron, ns, 'nightly'), { metadata: { labels: { touched: 'yes' } } });
    await runNow(ns, 'nightly', 'req-2');
    await eventually(
      'the second request',
      async () => (await getCron(ns, 'nightly')).status?.manualRun?.request === 'req-2',
    );
    expect((await ops(ns)).map((o) => o.metadata.name).sort()).toEqual(
      [name, manualName(cron, 'req-2')].sort(),
    );
  });

  it('under Forbid a request waits for the running Operation and then runs, never dropped', async () => {
    const ns = await createNamespace(kc, 'runnow');
    const clock = new FakeClock(Date.now());
    startOperator(clock);
    const cron = await cronIn(ns, 'exclusive', { concurrencyPolicy: 'Forbid' });
    const slot = await advanceToNextSlot(raw, clock, ns, 'exclusive');
    const slotOp = runOperationName(cron, { reason: 'schedule', time: new Date(slot) }, 'shop');
    await eventually('the slot Operation', async () =>
      (await ops(ns)).some((o) => o.metadata.name === slotOp),
    );

    await runNow(ns, 'exclusive', 'now');
    await eventually(
      'Pending',
      async () => (await getCron(ns, 'exclusive')).status?.manualRun?.phase === 'Pending',
    );
    expect((await getCron(ns, 'exclusive')).status?.queue).toMatchObject([
      { reason: 'manual', targets: ['shop'] },
    ]);
    // Events are written behind the status, in the background: wait for it rather than read once.
    const reasons = await eventually('RunNowPending event', async () => {
      const r = (await eventsAbout(raw, ns, 'CronOperation', 'exclusive')).map((e) => e.reason);
      return r.includes(CRON_EVENT.RunNowPending) ? r : undefined;
    });
    expect(reasons).toContain(CRON_EVENT.RunNowPending);
    expect((await ops(ns)).map((o) => o.metadata.name)).toEqual([slotOp]);

    await finishOperation(raw, ns, slotOp, 'Succeeded', clock.now());
    await eventually('created after the running one finished', async () =>
      (await ops(ns)).some((o) => o.metadata.name === manualName(cron, 'now')),
    );
    await eventually(
      'Created',
      async () => (await getCron(ns, 'exclusive')).status?.manualRun?.phase === 'Created',
    );
    expect((await getCron(ns, 'exclusive')).status?.queue).toBeUndefined();
  });
});

describe('a paused target (ops.vworkspace.io/paused: "true")', () => {
  it('holds a run-now request until the annotation is removed, then runs it', async () => {
    const ns = await createNamespace(kc, 'paused');
    const clock = new FakeClock(Date.now());
    startOperator(clock);
    await create(raw, instanceObject(ns, 'shop'));
    await mergePatch(raw, pathOf(kinds.instance, ns, 'shop'), {
      metadata: { annotations: { 'ops.vworkspace.io/paused': 'true' } },
    });
    const cron = await cronIn(ns, 'nightly');
    await runNow(ns, 'nightly', 'during-maintenance');
    await eventually(
      'Pending',
      async () => (await getCron(ns, 'nightly')).status?.manualRun?.phase === 'Pending',
    );
    expect(await ops(ns)).toEqual([]);
    await mergePatch(raw, pathOf(kinds.instance, ns, 'shop'), {
      metadata: { annotations: { 'ops.vworkspace.io/paused': null } },
    });
    await eventually('runs after the maintenance', async () =>
      (await ops(ns)).some((o) => o.metadata.name === manualName(cron, 'during-maintenance')),
    );
  });
});

describe('fleets and parameters from the trigger', () => {
  it('a CronOperation with targetSelector runs each matching instance, at most maxConcurrent at once, with the label value as a parameter', async () => {
    const ns = await createNamespace(kc, 'fleet');
    const clock = new FakeClock(Date.now());
    startOperator(clock);
    for (const [name, labels] of [
      ['a', { tier: 'prod', 'upgrade-to': '2.0.0' }],
      ['b', { tier: 'prod', 'upgrade-to': '2.1.0' }],
      ['c', { tier: 'prod', 'upgrade-to': '2.2.0' }],
      ['dev', { tier: 'dev', 'upgrade-to': '9.9.9' }],
    ] as const)
      await create(raw, instanceObject(ns, name, { labels }));
    await cronIn(ns, 'fleet', {
      targetSelector: { matchLabels: { tier: 'prod' } },
      maxConcurrent: 2,
      operationTemplate: { spec: { type: 'Upgrade', engine: 'helm', parameters: { timeout: '5m' } } },
      parametersFromTrigger: [{ parameter: 'version', from: "object.metadata.labels['upgrade-to']" }],
    });

    const slot = await advanceToNextSlot(raw, clock, ns, 'fleet');
    const byTarget = (list: Operation[]) =>
      Object.fromEntries(list.map((o) => [o.spec.targetRef.name, o.spec.parameters?.version]));
    await eventually('two Operations', async () => (await ops(ns)).length === 2);
    expect(byTarget(await ops(ns))).toEqual({ a: '2.0.0', b: '2.1.0' });
    const queued = await eventually('the queue', async () => (await getCron(ns, 'fleet')).status?.queue);
    expect(queued).toEqual([
      {
        reason: 'schedule',
        scheduledTime: new Date(slot).toISOString().replace('.000Z', 'Z'),
        targets: ['c'],
      },
    ]);

    const first = (await ops(ns)).find((o) => o.spec.targetRef.name === 'a')!;
    await finishOperation(raw, ns, first.metadata.name ?? '', 'Succeeded', clock.now());
    await eventually('the queued target starts', async () => (await ops(ns)).length === 3);
    expect(byTarget(await ops(ns))).toEqual({ a: '2.0.0', b: '2.1.0', c: '2.2.0' });
    for (const o of await ops(ns)) expect(o.spec.parameters?.timeout).toBe('5m');
    await eventually('queue drained', async () => (await getCron(ns, 'fleet')).status?.queue === undefined);
  });

  it('a WatchOperation passes the trigger label value on ("upgrade to the version the label names")', async () => {
    const ns = await createNamespace(kc, 'watchparam');
    const clock = new FakeClock(Date.now());
    startOperator(clock, { watch: true });
    await create(raw, instanceObject(ns, 'shop', { labels: { tier: 'prod' } }));
    await create(
      raw,
      watchObject(ns, 'upgrader', {
        triggers: { labels: ['upgrade.example.com/to'] },
        operationTemplate: { spec: { type: 'Upgrade', engine: 'helm' } },
        parametersFromTrigger: [
          { parameter: 'version', from: "object.metadata.labels['upgrade.example.com/to']" },
        ],
      }),
    );
    stops.push(async () => {
      await raw
        .request({ method: 'DELETE', path: pathOf(kinds.watch, ns, 'upgrader') })
        .catch(() => undefined);
    });
    await eventually(
      'watching',
      async () =>
        (await getObject<{ status?: { watchingResources?: number } }>(raw, kinds.watch, ns, 'upgrader'))
          .status?.watchingResources === 1,
    );
    await mergePatch(raw, pathOf(kinds.instance, ns, 'shop'), {
      metadata: { labels: { 'upgrade.example.com/to': '3.1.4' } },
    });
    const [op] = await eventually('the upgrade', async () => {
      const list = await ops(ns);
      return list.length === 1 ? list : undefined;
    });
    expect(op?.spec).toMatchObject({
      type: 'Upgrade',
      targetRef: { name: 'shop' },
      parameters: { version: '3.1.4' },
    });
    expect(op?.metadata.annotations?.[ANNOTATION_TRIGGER]).toBe('label:upgrade.example.com/to');
  });
});
