// The CronOperation controller on the real API server. Time is a FakeClock the test moves: the
// controller requeues itself for the exact next slot on that clock, so "advance to the slot" is what
// makes a run happen — no test waits for a real cron slot.

import { FakeClock, formatTime, type KubeClient } from '@vworkspace/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_SKIP_NEXT,
  type CronOperation,
  type CronOperationSpec,
  LABEL_CRON_OPERATION,
} from '../../../operator/src/api/index.ts';
import { CRON_EVENT } from '../../../operator/src/schedule/cron-decide.ts';
import { operationNameForSlot } from '../../../operator/src/schedule/slots.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  advanceToNextSlot as advance,
  create,
  cronObject,
  eventsAbout,
  eventually,
  FaultyClient,
  finishOperation,
  getObject,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
  startSchedulers,
} from './support.ts';

const HOUR = 3_600_000;
const MINUTE = 60_000;
const kc = adminKubeConfig();
const raw = testClient(kc);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/** One operator process (the cron controller only) on `clock`; stopped after the test at the latest. */
function startOperator(clock: FakeClock, client?: KubeClient) {
  const op = startSchedulers(kc, clock, client ? { client } : {});
  stops.push(() => op.stop());
  return op;
}

async function createCron(
  ns: string,
  name: string,
  spec: Partial<CronOperationSpec>,
  annotations?: Record<string, string>,
) {
  await create(raw, cronObject(ns, name, spec, annotations));
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, name) }).catch(() => undefined);
  });
}

/** A new namespace, an operator on a FakeClock at the real now, and the CronOperation `name` there. */
async function scenario(
  name: string,
  spec: Partial<CronOperationSpec> = {},
  annotations?: Record<string, string>,
) {
  const ns = await createNamespace(kc, 'cron');
  const clock = new FakeClock(Date.now());
  const operator = startOperator(clock);
  await createCron(ns, name, spec, annotations);
  return { ns, clock, operator };
}

const getCron = (ns: string, name: string) => getObject<CronOperation>(raw, kinds.cron, ns, name);
const advanceToNextSlot = (clock: FakeClock, ns: string, name: string, after?: number) =>
  advance(raw, clock, ns, name, after);
const opNames = async (ns: string) => (await listOperations(raw, ns)).map((o) => o.metadata.name);

describe('CronOperation controller', () => {
  it('creates exactly one Operation per slot across a controller restart that lost the status write', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    const faulty = new FaultyClient(raw);
    const first = startOperator(clock, faulty);
    await createCron(ns, 'nightly', { timeZone: 'Europe/Berlin' });

    // The first process creates the slot's Operation, then "crashes" before recording the slot.
    const slot1 = await eventually('first status and its requeue', async () => {
      const t = (await getCron(ns, 'nightly')).status?.nextScheduleTime;
      return t && clock.hasTimerAt(Date.parse(t)) ? t : undefined;
    });
    faulty.failStatusOf = pathOf(kinds.cron, ns, 'nightly');
    await clock.advance(Date.parse(slot1) - clock.now());
    const name1 = operationNameForSlot('nightly', new Date(slot1));
    await eventually('the slot Operation', async () => (await opNames(ns)).includes(name1));
    await first.stop();
    expect((await getCron(ns, 'nightly')).status?.lastScheduleTime).toBeUndefined();

    // A new process (no memory) decides the same slot again: it adopts, it does not run the slot twice.
    startOperator(clock);
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
    const { ns, clock } = await scenario('skipper', {}, { [ANNOTATION_SKIP_NEXT]: 'true' });

    const slot1 = await advanceToNextSlot(clock, ns, 'skipper');
    const cron = await eventually('slot skipped', async () => {
      const c = await getCron(ns, 'skipper');
      return c.status?.lastScheduleTime && Date.parse(c.status.lastScheduleTime) === slot1 ? c : undefined;
    });
    expect(cron.metadata.annotations?.[ANNOTATION_SKIP_NEXT]).toBeUndefined();
    expect(await opNames(ns)).toEqual([]);
    // Events are written behind the status, in the background: wait for it rather than read once.
    const reasons = await eventually('RunSkipped event', async () => {
      const r = (await eventsAbout(raw, ns, 'CronOperation', 'skipper')).map((e) => e.reason);
      return r.includes(CRON_EVENT.RunSkipped) ? r : undefined;
    });
    expect(reasons).toContain(CRON_EVENT.RunSkipped);

    const slot2 = await advanceToNextSlot(clock, ns, 'skipper', slot1);
    await eventually('next slot runs', async () =>
      (await opNames(ns)).includes(operationNameForSlot('skipper', new Date(slot2))),
    );
    expect(await opNames(ns)).toHaveLength(1);
  });

  it('Forbid: a slot due while an Operation runs is skipped, recorded, and the next slot still runs', async () => {
    const { ns, clock } = await scenario('exclusive', { concurrencyPolicy: 'Forbid' });

    const slot1 = await advanceToNextSlot(clock, ns, 'exclusive');
    const name1 = operationNameForSlot('exclusive', new Date(slot1));
    await eventually('first Operation', async () => (await opNames(ns)).includes(name1));
    await eventually('active', async () => (await getCron(ns, 'exclusive')).status?.active?.length === 1);

    // The next slot comes while the first still runs: skipped with an Event and recorded.
    await advanceToNextSlot(clock, ns, 'exclusive', slot1);
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
    await advanceToNextSlot(clock, ns, 'exclusive', slot1 + HOUR);
    const name3 = operationNameForSlot('exclusive', new Date(slot1 + 2 * HOUR));
    await eventually('following slot runs', async () => (await opNames(ns)).includes(name3));
    expect(await opNames(ns)).toEqual([name1, name3].sort());
  });

  it('an invalid time zone (written before the webhook existed) sets Ready=False/InvalidTimeZone and creates nothing', async () => {
    const ns = await createNamespace(kc, 'cron');
    const clock = new FakeClock(Date.now());
    startOperator(clock);
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

  it('after downtime only the latest slot within startingDeadlineSeconds runs; one missed past it is recorded and the schedule moves on', async () => {
    const { ns, clock: first, operator: a } = await scenario('hourly', { startingDeadlineSeconds: 600 });
    const slot1 = await advanceToNextSlot(first, ns, 'hourly');
    const name = (slot: number) => operationNameForSlot('hourly', new Date(slot));
    await eventually(
      'first slot recorded',
      async () => Date.parse((await getCron(ns, 'hourly')).status?.lastScheduleTime ?? '') === slot1,
    );
    await a.stop();

    // Down for three slots, back 5 minutes after the last one (deadline 10 minutes): only that one runs.
    const second = new FakeClock(slot1 + 3 * HOUR + 5 * MINUTE);
    const b = startOperator(second);
    const caughtUp = await eventually('latest missed slot handled', async () => {
      const s = (await getCron(ns, 'hourly')).status;
      return Date.parse(s?.lastScheduleTime ?? '') === slot1 + 3 * HOUR ? s : undefined;
    });
    expect(await opNames(ns)).toEqual([name(slot1), name(slot1 + 3 * HOUR)]);
    expect(Date.parse(caughtUp.nextScheduleTime ?? '')).toBe(slot1 + 4 * HOUR);
    expect(caughtUp.missedSlots).toBeUndefined();
    await b.stop();

    // Down again, back 15 minutes after the latest slot: past the deadline. Not run, reported once, and
    // the schedule carries on from it (the slot before it is never looked at).
    const third = new FakeClock(slot1 + 5 * HOUR + 15 * MINUTE);
    startOperator(third);
    const missed = await eventually('missed slot recorded', async () => {
      const s = (await getCron(ns, 'hourly')).status;
      return s?.missedSlots?.length ? s : undefined;
    });
    expect(missed.missedSlots).toEqual([
      {
        scheduledTime: formatTime(slot1 + 5 * HOUR),
        detectedAt: formatTime(third.now()),
        reason: 'StartingDeadlineExceeded',
      },
    ]);
    expect(Date.parse(missed.lastScheduleTime ?? '')).toBe(slot1 + 5 * HOUR);
    expect(Date.parse(missed.nextScheduleTime ?? '')).toBe(slot1 + 6 * HOUR);
    const warnings = await eventually('MissedSchedule event', async () => {
      const events = await eventsAbout(raw, ns, 'CronOperation', 'hourly');
      const w = events.filter((e) => e.reason === CRON_EVENT.MissedSchedule);
      return w.length > 0 ? w : undefined;
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.type).toBe('Warning');
    expect(warnings[0]?.note).toContain(missed.missedSlots?.[0]?.scheduledTime);
    expect(await opNames(ns)).toEqual([name(slot1), name(slot1 + 3 * HOUR)]);

    // The next slot runs on time.
    await advanceToNextSlot(third, ns, 'hourly', slot1 + 5 * HOUR);
    await eventually('next slot runs', async () => (await opNames(ns)).includes(name(slot1 + 6 * HOUR)));
    expect(await opNames(ns)).toHaveLength(3);
    expect((await getCron(ns, 'hourly')).status?.missedSlots).toHaveLength(1);
  });

  it('Replace: the running Operation gets spec.cancel, is not deleted, and the new slot runs at once', async () => {
    const { ns, clock } = await scenario('replacer', { concurrencyPolicy: 'Replace' });

    const slot1 = await advanceToNextSlot(clock, ns, 'replacer');
    const name1 = operationNameForSlot('replacer', new Date(slot1));
    await eventually(
      'first active',
      async () => (await getCron(ns, 'replacer')).status?.active?.length === 1,
    );

    await advanceToNextSlot(clock, ns, 'replacer', slot1);
    const name2 = operationNameForSlot('replacer', new Date(slot1 + HOUR));
    const ops = await eventually('second slot created', async () => {
      const list = await listOperations(raw, ns);
      return list.some((o) => o.metadata.name === name2) ? list : undefined;
    });
    const replaced = await eventually('cancel requested', async () => {
      const op = (await listOperations(raw, ns)).find((o) => o.metadata.name === name1);
      return op?.spec.cancel === true ? op : undefined;
    });
    expect(ops.map((o) => o.metadata.name)).toEqual([name1, name2]);
    expect(replaced.metadata.deletionTimestamp).toBeUndefined();
    // Both count as running until the Operation reconciler has stopped the first one.
    await eventually('both active', async () => (await getCron(ns, 'replacer')).status?.active?.length === 2);
    const replacing = await eventually('ReplacingOperation event', async () => {
      const events = await eventsAbout(raw, ns, 'CronOperation', 'replacer');
      const r = events.filter((e) => e.reason === CRON_EVENT.ReplacingOperation);
      return r.length > 0 ? r : undefined;
    });
    expect(replacing.map((e) => e.note)).toEqual([expect.stringContaining(name1)]);
    expect((await getCron(ns, 'replacer')).status?.active?.map((a) => a.name)).toEqual([name1, name2]);

    await finishOperation(raw, ns, name1, 'Cancelled', clock.now());
    await eventually('only the new one active', async () => {
      const active = (await getCron(ns, 'replacer')).status?.active;
      return active?.length === 1 && active[0]?.name === name2;
    });
    expect(await opNames(ns)).toEqual([name1, name2]);
  });

  it('history limits delete the oldest finished Operations, never a running one', async () => {
    const { ns, clock } = await scenario('keeper', { successfulHistoryLimit: 2, failedHistoryLimit: 1 });

    // Six slots. The first Operation keeps running (the oldest of all); the others finish in turn.
    const names: string[] = [];
    let slot: number | undefined;
    for (let i = 0; i < 6; i++) {
      slot = await advanceToNextSlot(clock, ns, 'keeper', slot);
      const name = operationNameForSlot('keeper', new Date(slot));
      await eventually(`Operation ${i + 1}`, async () => (await opNames(ns)).includes(name));
      names.push(name);
    }
    const [running, s1, s2, s3, f1, f2] = names as [string, string, string, string, string, string];
    const finish = async (name: string, phase: string, expected: string[]) => {
      await clock.advance(MINUTE);
      const at = clock.now();
      await finishOperation(raw, ns, name, phase, at);
      await eventually(`${name} ${phase}; kept ${expected.join(', ')}`, async () => {
        const now = await opNames(ns);
        return now.length === expected.length && expected.every((n) => now.includes(n));
      });
      return at;
    };
    await finish(s1, 'Succeeded', names);
    await finish(s2, 'Succeeded', names);
    const lastSuccess = await finish(s3, 'Succeeded', [running, s2, s3, f1, f2]); // limit 2: s1 goes
    await finish(f1, 'Failed', [running, s2, s3, f1, f2]);
    await finish(f2, 'Cancelled', [running, s2, s3, f2]); // Cancelled counts as failed, limit 1: f1 goes

    // Pruning comes before the status write: wait for the status of the same reconcile.
    const status = await eventually('status settled', async () => {
      const s = (await getCron(ns, 'keeper')).status;
      return s?.active?.length === 1 ? s : undefined;
    });
    expect(status.active).toEqual([{ name: running, target: 'shop' }]);
    expect(status.lastSuccessfulTime).toBe(formatTime(lastSuccess));
    const remaining = await listOperations(raw, ns);
    expect(remaining.find((o) => o.metadata.name === running)?.status?.phase).toBeUndefined();
  });
});
