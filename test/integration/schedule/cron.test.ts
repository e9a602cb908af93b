// The CronOperation controller on the real API server. Time is a FakeClock the test moves: the
// controller requeues itself for the exact next slot on that clock, so "advance to the slot" is what
// makes a run happen — no test waits for a real cron slot.
import { afterEach, describe, expect, it } from 'vitest';
import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  type CronOperation,
  type CronOperationSpec,
  LABEL_CRON_OPERATION,
} from '../../../operator/src/api/index.ts';
import {
  EventRecorder,
  FakeClock,
  type KubeClient,
  Manager,
  ObjectWriter,
  RestClient,
  RestMapper,
  RuntimeMetrics,
  silentLogger,
} from '../../../operator/src/runtime/index.ts';
import { createCronController } from '../../../operator/src/schedule/cron-controller.ts';
import { CRON_EVENT } from '../../../operator/src/schedule/cron-decide.ts';
import { operationNameForSlot } from '../../../operator/src/schedule/slots.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  eventsAbout,
  eventually,
  FaultyClient,
  finishOperation,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
} from './support.ts';

const HOUR = 3_600_000;
const kc = adminKubeConfig();
const raw = new RestClient(kc);

/** One operator process (the cron controller only) on `clock`. */
function startOperator(clock: FakeClock, client: KubeClient = raw) {
  const metrics = new RuntimeMetrics();
  const manager = new Manager({ leaderElection: false, metricsPort: false, probePort: false, metrics });
  const cron = createCronController({
    kc,
    client,
    writer: new ObjectWriter(client, new RestMapper(raw)),
    events: new EventRecorder({ client: raw }),
    logger: silentLogger,
    metrics,
    clock,
  });
  for (const i of cron.informers) manager.addInformer(i);
  manager.addController(cron.controller);
  const running = manager.start();
  return {
    async stop() {
      await manager.stop();
      await running;
    },
  };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function createCron(
  ns: string,
  name: string,
  spec: Partial<CronOperationSpec>,
  annotations?: Record<string, string>,
) {
  await raw.request({
    method: 'POST',
    path: pathOf(kinds.cron, ns),
    body: {
      apiVersion: kinds.cron.apiVersion,
      kind: kinds.cron.kind,
      metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
      spec: {
        schedule: '0 * * * *',
        operationTemplate: { spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } } },
        ...spec,
      },
    },
  });
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, name) }).catch(() => undefined);
  });
}

const getCron = (ns: string, name: string) =>
  raw.request<CronOperation>({ method: 'GET', path: pathOf(kinds.cron, ns, name) });

/** Waits for the controller to plan the next slot, moves the clock to it and returns it. */
async function advanceToNextSlot(
  clock: FakeClock,
  ns: string,
  name: string,
  after?: number,
): Promise<number> {
  const next = await eventually('status.nextScheduleTime', async () => {
    const t = (await getCron(ns, name)).status?.nextScheduleTime;
    const ms = t ? Date.parse(t) : undefined;
    return ms !== undefined && (after === undefined || ms > after) ? ms : undefined;
  });
  await clock.advance(next - clock.now());
  return next;
}

const opNames = async (ns: string) => (await listOperations(raw, ns)).map((o) => o.metadata.name);

describe('CronOperation controller', () => {
  it('creates exactly one Operation per slot across a controller restart that lost the status write', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    const faulty = new FaultyClient(raw);
    const first = startOperator(clock, faulty);
    stops.push(() => first.stop());
    await createCron(ns, 'nightly', { timeZone: 'Europe/Berlin' });

    // The first process creates the slot's Operation, then "crashes" before recording the slot.
    const slot1 = await eventually(
      'first status',
      async () => (await getCron(ns, 'nightly')).status?.nextScheduleTime,
    );
    faulty.failStatusOf = pathOf(kinds.cron, ns, 'nightly');
    await clock.advance(Date.parse(slot1) - clock.now());
    const name1 = operationNameForSlot('nightly', new Date(slot1));
    await eventually('the slot Operation', async () => (await opNames(ns)).includes(name1));
    await first.stop();
    expect((await getCron(ns, 'nightly')).status?.lastScheduleTime).toBeUndefined();

    // A new process (no memory) decides the same slot again: it adopts, it does not run the slot twice.
    const second = startOperator(clock);
    stops.push(() => second.stop());
    await eventually(
      'slot recorded',
      async () => (await getCron(ns, 'nightly')).status?.lastScheduleTime === slot1.replace('.000Z', 'Z'),
    );
    expect(await opNames(ns)).toEqual([name1]);
    const op = (await listOperations(raw, ns))[0];
    expect(op?.metadata.labels?.[LABEL_CRON_OPERATION]).toBe('nightly');
    expect(op?.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME]).toBe(
      new Date(slot1).toISOString().replace('.000Z', 'Z'),
    );
    expect(op?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'CronOperation',
      name: 'nightly',
      controller: true,
    });
    const status = (await getCron(ns, 'nightly')).status;
    expect(status?.active).toEqual([{ name: name1, target: 'shop' }]);
    expect(status?.nextRuns).toHaveLength(5);
    expect(status?.nextRuns?.[0]?.local).toMatch(/\+0[12]:00$/);

    // The next slot runs once, on time.
    const slot2 = await advanceToNextSlot(clock, ns, 'nightly', Date.parse(slot1));
    const name2 = operationNameForSlot('nightly', new Date(slot2));
    await eventually('second slot Operation', async () => (await opNames(ns)).includes(name2));
    await eventually(
      'second slot recorded',
      async () => (await getCron(ns, 'nightly')).status?.lastScheduleTime !== slot1,
    );
    expect(await opNames(ns)).toEqual([name1, name2].sort());
  });

  it('skip-next skips exactly one slot and is removed', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    const op = startOperator(clock);
    stops.push(() => op.stop());
    await createCron(ns, 'skipper', {}, { [ANNOTATION_SKIP_NEXT]: 'true' });

    const slot1 = await advanceToNextSlot(clock, ns, 'skipper');
    const cron = await eventually('slot skipped', async () => {
      const c = await getCron(ns, 'skipper');
      return c.status?.lastScheduleTime && Date.parse(c.status.lastScheduleTime) === slot1 ? c : undefined;
    });
    expect(cron.metadata.annotations?.[ANNOTATION_SKIP_NEXT]).toBeUndefined();
    expect(await opNames(ns)).toEqual([]);
    expect((await eventsAbout(raw, ns, 'CronOperation', 'skipper')).map((e) => e.reason)).toContain(
      CRON_EVENT.RunSkipped,
    );

    const slot2 = await advanceToNextSlot(clock, ns, 'skipper', slot1);
    await eventually('next slot runs', async () =>
      (await opNames(ns)).includes(operationNameForSlot('skipper', new Date(slot2))),
    );
    expect(await opNames(ns)).toHaveLength(1);
  });

  it('Forbid: a slot due while an Operation runs is skipped, recorded, and the next slot still runs', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    const op = startOperator(clock);
    stops.push(() => op.stop());
    await createCron(ns, 'exclusive', { concurrencyPolicy: 'Forbid' });

    const slot1 = await advanceToNextSlot(clock, ns, 'exclusive');
    const name1 = operationNameForSlot('exclusive', new Date(slot1));
    await eventually('first Operation', async () => (await opNames(ns)).includes(name1));
    await eventually('active', async () => (await getCron(ns, 'exclusive')).status?.active?.length === 1);

    // The next slot comes while the first still runs: skipped with an Event and recorded.
    await clock.advance(HOUR);
    await eventually('RunSkippedForbidden event', async () =>
      (await eventsAbout(raw, ns, 'CronOperation', 'exclusive')).some(
        (e) => e.reason === CRON_EVENT.RunSkippedForbidden,
      ),
    );
    const skipped = await eventually('skip recorded', async () => {
      const s = (await getCron(ns, 'exclusive')).status;
      return s?.missedSlots?.length ? s : undefined;
    });
    expect(skipped.missedSlots?.map((m) => [Date.parse(m.scheduledTime), m.reason])).toEqual([
      [slot1 + HOUR, 'ConcurrencyForbidden'],
    ]);
    expect(Date.parse(skipped.lastScheduleTime ?? '')).toBe(slot1 + HOUR);
    expect(await opNames(ns)).toEqual([name1]);

    // The first finishes: the skipped slot does not come back; the following slot runs.
    await finishOperation(raw, ns, name1, 'Succeeded');
    await eventually(
      'first no longer active',
      async () => !(await getCron(ns, 'exclusive')).status?.active?.length,
    );
    expect(await opNames(ns)).toEqual([name1]);
    await clock.advance(HOUR);
    const name3 = operationNameForSlot('exclusive', new Date(slot1 + 2 * HOUR));
    await eventually('following slot runs', async () => (await opNames(ns)).includes(name3));
    expect(await opNames(ns)).toEqual([name1, name3].sort());
  });

  it('an invalid time zone (written before the webhook existed) sets Ready=False/InvalidTimeZone and creates nothing', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    const op = startOperator(clock);
    stops.push(() => op.stop());
    // The CRD pattern admits it; only the operator's own zone check knows Mars/Olympus does not exist.
    await createCron(ns, 'martian', { timeZone: 'Mars/Olympus' });
    const cron = await eventually('Ready=False', async () => {
      const c = await getCron(ns, 'martian');
      return c.status?.conditions?.find((x) => x.type === 'Ready' && x.status === 'False') ? c : undefined;
    });
    expect(cron.status?.conditions?.[0]?.reason).toBe('InvalidTimeZone');
    await clock.advance(3 * HOUR);
    await mergePatch(raw, pathOf(kinds.cron, ns, 'martian'), { metadata: { labels: { poke: '1' } } });
    expect(await opNames(ns)).toEqual([]);
  });
});
