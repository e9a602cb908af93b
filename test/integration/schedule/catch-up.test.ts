// spec.catchUp on the real API server: the operator (the cron controller, on a FakeClock) is stopped
// across several hourly slots, then started again at a later instant. Skip runs none of them, Latest only
// the most recent, All the most recent maxRuns, with their scheduled times, and a second restart that
// decides the same slots again (the first lost its status write) adopts instead of creating twice. And
// kubectl vws backfill, as a user, creates the past slots under the same names.
import { FakeClock, formatTime, type KubeClient } from '@vworkspace/runtime';
import { LeaseStore, MemoryLeaseLock } from '@vworkspace/runtime/testing';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_SCHEDULED_TIME,
  type CronOperation,
  type CronOperationSpec,
} from '../../../operator/src/api/index.ts';
import { backfillOperation } from '../../../operator/src/cli/backfill.ts';
import { main } from '../../../operator/src/cli/kubectl-vws.ts';
import { operationNameForSlot } from '../../../operator/src/schedule/slots.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  advanceToNextSlot,
  create,
  cronObject,
  eventually,
  FaultyClient,
  getObject,
  kinds,
  listOperations,
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

function startOperator(clock: FakeClock, client?: KubeClient) {
  const op = startSchedulers(kc, clock, client ? { client } : {});
  stops.push(() => op.stop());
  return op;
}

const getCron = (ns: string, name: string) => getObject<CronOperation>(raw, kinds.cron, ns, name);
const slotName = (name: string) => (slot: number) => operationNameForSlot(name, new Date(slot));

/** The Operations of `ns` as [name, scheduled-time annotation], by name. */
async function scheduled(ns: string): Promise<[string | undefined, string | undefined][]> {
  return (await listOperations(raw, ns)).map((o) => [
    o.metadata.name,
    o.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME],
  ]);
}

/**
 * An hourly CronOperation `name` whose first slot ran (lastScheduleTime = slot1), then the operator
 * stopped; returns slot1. The outage that follows is the caller's.
 */
async function ranOnceThenStopped(name: string, spec: Partial<CronOperationSpec>) {
  const ns = await createNamespace(kc, 'catchup');
  const clock = new FakeClock(Date.now());
  const first = startOperator(clock);
  await create(raw, cronObject(ns, name, spec));
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, name) }).catch(() => undefined);
  });
  const slot1 = await advanceToNextSlot(raw, clock, ns, name);
  await eventually(
    'first slot recorded',
    async () => Date.parse((await getCron(ns, name)).status?.lastScheduleTime ?? '') === slot1,
  );
  await first.stop();
  return { ns, slot1 };
}

/** Waits until the CronOperation has handled `slot` (status.lastScheduleTime). */
const handled = (ns: string, name: string, slot: number) =>
  eventually(`slot ${formatTime(slot)} handled`, async () => {
    const s = (await getCron(ns, name)).status;
    return Date.parse(s?.lastScheduleTime ?? '') === slot ? s : undefined;
  });

describe('CronOperation catch-up after downtime', () => {
  it('Skip: none of the slots missed while the operator was down runs; they are recorded; the next one runs', async () => {
    const name = 'skipper';
    const { ns, slot1 } = await ranOnceThenStopped(name, { catchUp: { policy: 'Skip' } });
    const at = slotName(name);
    const back = new FakeClock(slot1 + 4 * HOUR + 5 * MINUTE);
    startOperator(back);
    const status = await handled(ns, name, slot1 + 4 * HOUR);
    expect(await scheduled(ns)).toEqual([[at(slot1), formatTime(slot1)]]);
    expect(status.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual(
      [1, 2, 3, 4].map((h) => [formatTime(slot1 + h * HOUR), 'CatchUpSkipped']),
    );
    // The first slot due while it runs again runs.
    await advanceToNextSlot(raw, back, ns, name, slot1 + 4 * HOUR);
    await eventually('next slot runs', async () => (await scheduled(ns)).length === 2);
    expect(await scheduled(ns)).toEqual([
      [at(slot1), formatTime(slot1)],
      [at(slot1 + 5 * HOUR), formatTime(slot1 + 5 * HOUR)],
    ]);
  });

  it('Skip: a replica that lost its Lease and leads again runs none of the slots missed meanwhile', async () => {
    const name = 'relead';
    const ns = await createNamespace(kc, 'catchup');
    const clock = new FakeClock(Date.now());
    const lock = new MemoryLeaseLock(new LeaseStore(), clock);
    const op = startSchedulers(kc, clock, {
      leaderElection: {
        namespace: ns,
        identity: 'replica-1',
        lock,
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
    stops.push(() => op.stop());
    await create(raw, cronObject(ns, name, { catchUp: { policy: 'Skip' } }));
    const slot1 = await advanceToNextSlot(raw, clock, ns, name);
    await handled(ns, name, slot1);
    const at = slotName(name);

    // The Lease cannot be renewed: the controllers stop; three slots pass; then it leads again.
    lock.broken = true;
    await clock.advance(30_000);
    await clock.advance(3 * HOUR);
    lock.broken = false;
    await clock.advance(20_000);
    const status = await handled(ns, name, slot1 + 3 * HOUR);
    expect(await scheduled(ns)).toEqual([[at(slot1), formatTime(slot1)]]);
    expect(status.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual(
      [1, 2, 3].map((h) => [formatTime(slot1 + h * HOUR), 'CatchUpSkipped']),
    );
  });

  it('Latest (the default): only the most recent missed slot runs', async () => {
    const name = 'latest';
    const { ns, slot1 } = await ranOnceThenStopped(name, { catchUp: { policy: 'Latest' } });
    const at = slotName(name);
    startOperator(new FakeClock(slot1 + 4 * HOUR + 5 * MINUTE));
    await handled(ns, name, slot1 + 4 * HOUR);
    await eventually('latest slot created', async () => (await scheduled(ns)).length === 2);
    expect(await scheduled(ns)).toEqual([
      [at(slot1), formatTime(slot1)],
      [at(slot1 + 4 * HOUR), formatTime(slot1 + 4 * HOUR)],
    ]);
  });

  it('All maxRuns=3: exactly the last three missed slots run, with their times, and a second restart adds none', async () => {
    const name = 'everyone';
    const { ns, slot1 } = await ranOnceThenStopped(name, { catchUp: { policy: 'All', maxRuns: 3 } });
    const at = slotName(name);
    const want = [
      [at(slot1), formatTime(slot1)],
      ...[2, 3, 4].map((h) => [at(slot1 + h * HOUR), formatTime(slot1 + h * HOUR)]),
    ].sort((a, b) => ((a[0] ?? '') < (b[0] ?? '') ? -1 : 1));
    // Back after four slots, but this process loses its status writes: it creates, cannot record.
    const faulty = new FaultyClient(testClient(kc));
    faulty.failStatusOf = pathOf(kinds.cron, ns, name);
    const lossy = startOperator(new FakeClock(slot1 + 4 * HOUR + 5 * MINUTE), faulty);
    await eventually('catch-up runs created', async () => (await scheduled(ns)).length === 4);
    await lossy.stop();
    expect((await getCron(ns, name)).status?.lastScheduleTime).toBe(formatTime(slot1));
    expect(await scheduled(ns)).toEqual(want);

    // Started again a minute later, it decides the same slots and adopts them: nothing twice.
    startOperator(new FakeClock(slot1 + 4 * HOUR + 6 * MINUTE));
    const status = await handled(ns, name, slot1 + 4 * HOUR);
    expect(await scheduled(ns)).toEqual(want);
    expect(status.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual([
      [formatTime(slot1 + HOUR), 'CatchUpSkipped'],
    ]);
    expect(status.active?.map((a) => a.name).sort()).toEqual(want.map((w) => w[0]));
  });

  it('All never runs again a slot that was backfilled: the taken name is refused and recorded, the others run', async () => {
    const name = 'filled';
    const { ns, slot1 } = await ranOnceThenStopped(name, { catchUp: { policy: 'All', maxRuns: 3 } });
    const at = slotName(name);
    // While the operator is down, a user backfills the slot at +2h (what kubectl vws backfill creates).
    const cron = await getCron(ns, name);
    await raw.request({
      method: 'POST',
      path: pathOf(kinds.op, ns),
      body: backfillOperation(cron, new Date(slot1 + 2 * HOUR), 'shop'),
    });
    startOperator(new FakeClock(slot1 + 3 * HOUR + 5 * MINUTE));
    const status = await handled(ns, name, slot1 + 3 * HOUR);
    expect((await scheduled(ns)).map((s) => s[0])).toEqual(
      [slot1, slot1 + HOUR, slot1 + 2 * HOUR, slot1 + 3 * HOUR].map(at).sort(),
    );
    const ops = await listOperations(raw, ns);
    expect(
      ops.find((o) => o.metadata.name === at(slot1 + 2 * HOUR))?.metadata.ownerReferences,
    ).toBeUndefined();
    expect(status.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual([
      [formatTime(slot1 + 2 * HOUR), 'OperationRefused'],
    ]);
    expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'OperationRefused',
    });
  });

  it('All with more room than missed slots runs every one, and none past startingDeadlineSeconds', async () => {
    const name = 'allwithin';
    const { ns, slot1 } = await ranOnceThenStopped(name, {
      catchUp: { policy: 'All', maxRuns: 10 },
      startingDeadlineSeconds: 2 * 3600 + 600,
    });
    const at = slotName(name);
    startOperator(new FakeClock(slot1 + 4 * HOUR + 5 * MINUTE));
    const status = await handled(ns, name, slot1 + 4 * HOUR);
    await eventually('catch-up runs created', async () => (await scheduled(ns)).length === 4);
    // Slots at +2h, +3h, +4h are within 2h10m; +1h is not.
    expect((await scheduled(ns)).map((s) => s[0])).toEqual(
      [slot1, slot1 + 2 * HOUR, slot1 + 3 * HOUR, slot1 + 4 * HOUR].map(at).sort(),
    );
    expect(status.missedSlots?.map((m) => [m.scheduledTime, m.reason])).toEqual([
      [formatTime(slot1 + HOUR), 'StartingDeadlineExceeded'],
    ]);
  });
});

describe('kubectl vws backfill', () => {
  it('creates the past slots of a range under the scheduled names; a slot that ran is reported, not run again', async () => {
    const name = 'filler';
    const { ns, slot1 } = await ranOnceThenStopped(name, {});
    const at = slotName(name);
    const lines: string[] = [];
    const errors: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => errors.push(l) };
    const vws = (...args: string[]) => main([...args, '-n', ns, '--kubeconfig', inject('kubeconfig')], io);

    // The slots before the first one are in the past (slot1 is the first hour after the real now).
    const hours = (h: number) => formatTime(slot1 - h * HOUR);
    const created = (h: number) =>
      `operation.ops.vworkspace.io/${at(slot1 - h * HOUR)} created (slot ${hours(h)})`;
    expect(await vws('backfill', 'cronoperation', name, '--from', hours(2), '--to', hours(1))).toBe(0);
    expect(errors).toEqual([]);
    expect(lines).toEqual([created(2), created(1)]);

    // A range overlapping it: the slots that ran are reported and left alone, the new one is created.
    lines.length = 0;
    expect(await vws('backfill', `cronop/${name}`, '--from', hours(3), '--to', hours(1))).toBe(0);
    expect(lines).toEqual([
      created(3),
      ...[2, 1].map(
        (h) =>
          `operation.ops.vworkspace.io/${at(slot1 - h * HOUR)} already exists (slot ${hours(h)} ran before): not run again`,
      ),
    ]);
    expect(await scheduled(ns)).toEqual(
      [slot1 - 3 * HOUR, slot1 - 2 * HOUR, slot1 - HOUR, slot1]
        .map((t) => [at(t), formatTime(t)])
        .sort((x, y) => ((x[0] ?? '') < (y[0] ?? '') ? -1 : 1)),
    );

    // A range of more than 50 slots is refused whole, with where to cut it.
    errors.length = 0;
    expect(await vws('backfill', `cronop/${name}`, '--from', hours(100), '--to', hours(1))).toBe(1);
    expect(errors).toEqual([
      expect.stringMatching(/^error: the range holds more than 50 slots .*use --to .*--from /),
    ]);
    expect(await listOperations(raw, ns)).toHaveLength(4);
  });
});

describe('spec.catchUp validation', () => {
  it('refuses maxRuns without All, All without maxRuns, and All with Forbid, naming the field', async () => {
    const ns = await createNamespace(kc, 'catchup');
    const refusal = async (spec: Partial<CronOperationSpec>) => {
      const err = await create(raw, cronObject(ns, 'bad', spec)).then(
        () => undefined,
        (e: unknown) => String(e),
      );
      return err ?? 'created';
    };
    expect(await refusal({ catchUp: { policy: 'Latest', maxRuns: 3 } })).toContain(
      'spec.catchUp.maxRuns: Invalid value: maxRuns is required with policy All',
    );
    expect(await refusal({ catchUp: { policy: 'All' } })).toContain('spec.catchUp.maxRuns');
    expect(await refusal({ catchUp: { policy: 'All', maxRuns: 25 } })).toContain('spec.catchUp.maxRuns');
    expect(await refusal({ catchUp: { policy: 'All', maxRuns: 2 }, concurrencyPolicy: 'Forbid' })).toContain(
      'spec.catchUp.policy: Invalid value: catchUp.policy All creates several missed slots',
    );
    expect(await refusal({ catchUp: { policy: 'All', maxRuns: 2 }, concurrencyPolicy: 'Allow' })).toBe(
      'created',
    );
  });
});
