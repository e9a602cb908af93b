// spec.rollout on the real API server: a fleet CronOperation over 30 ApplicationInstances rolls its run
// out in waves [3, "50%", "100%"] with a failure budget of 1. Wave 1 fails beyond the budget ⇒ the run is
// Halted and no later wave gets an Operation, not even at the next slot; `kubectl vws resume` after the fix
// ⇒ the rest run in their waves; `kubectl vws abandon` ⇒ nothing more of the run ever starts. Operations
// "fail" and "succeed" by their status, as the other schedule tests make them.
import { FakeClock } from '@vworkspace/runtime';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_RECONCILE,
  ANNOTATION_RESUME,
  ANNOTATION_SCHEDULED_TIME,
  type CronOperation,
  type Operation,
} from '../../../operator/src/api/index.ts';
import { main } from '../../../operator/src/cli/kubectl-vws.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  advanceToNextSlot,
  create,
  cronObject,
  eventsAbout,
  eventually,
  finishOperation,
  getObject,
  instanceObject,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
  startSchedulers,
} from './support.ts';

const kc = adminKubeConfig();
const raw = testClient(kc);
const NAME = 'fleet-upgrade';
const FLEET = Array.from({ length: 30 }, (_, i) => `db-${String(i).padStart(2, '0')}`);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const getCron = (ns: string) => getObject<CronOperation>(raw, kinds.cron, ns, NAME);
const targets = (ops: readonly Operation[]) => ops.map((o) => o.spec.targetRef.name).sort();

/** 30 prod instances and the rolled-out fleet CronOperation, the operator on a FakeClock, its first slot due. */
async function haltedInWaveOne() {
  const ns = await createNamespace(kc, 'rollout');
  const clock = new FakeClock(Date.now());
  const op = startSchedulers(kc, clock);
  stops.push(() => op.stop());
  for (const name of FLEET) await create(raw, instanceObject(ns, name, { labels: { tier: 'prod' } }));
  await create(
    raw,
    cronObject(ns, NAME, {
      targetSelector: { matchLabels: { tier: 'prod' } },
      rollout: { waves: [3, '50%', '100%'], failureBudget: 1 },
      // Keep every Operation, so the test sees each instance's (the default history prunes finished runs).
      successfulHistoryLimit: 100,
      failedHistoryLimit: 100,
      operationTemplate: { spec: { type: 'Upgrade', engine: 'helm', parameters: { version: '2.0.0' } } },
    }),
  );
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.cron, ns, NAME) }).catch(() => undefined);
  });
  const slot = await advanceToNextSlot(raw, clock, ns, NAME);

  // Wave 1: the first three by name; two of them fail, more than the budget of 1.
  await eventually('wave 1', async () => (await listOperations(raw, ns)).length === 3);
  const wave1 = await listOperations(raw, ns);
  expect(targets(wave1)).toEqual(['db-00', 'db-01', 'db-02']);
  const opOf = (ops: readonly Operation[], t: string) =>
    ops.find((o) => o.spec.targetRef.name === t)?.metadata.name ?? '';
  await finishOperation(raw, ns, opOf(wave1, 'db-00'), 'Failed', clock.now());
  await finishOperation(raw, ns, opOf(wave1, 'db-01'), 'Failed', clock.now());
  await finishOperation(raw, ns, opOf(wave1, 'db-02'), 'Succeeded', clock.now());
  const halted = await eventually('Halted', async () => {
    const r = (await getCron(ns)).status?.rollout;
    return r?.phase === 'Halted' && r.succeeded.count === 1 ? r : undefined;
  });
  const lines: string[] = [];
  const errors: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => errors.push(l) };
  const vws = (...args: string[]) => main([...args, '-n', ns, '--kubeconfig', inject('kubeconfig')], io);
  return { ns, clock, slot, halted, opOf, lines, errors, vws };
}

describe('a fleet run rolled out in waves', () => {
  it('halts when wave 1 fails beyond the budget; later waves never start until a resume, then run in their waves', async () => {
    const { ns, clock, slot, halted, opOf, lines, errors, vws } = await haltedInWaveOne();
    expect(halted).toMatchObject({
      reason: 'FailureBudgetExceeded',
      // Wave 1 has finished: the wave held back is wave 2.
      wave: { index: 2, of: 3, size: 12 },
      failures: { counted: 2, budget: 1 },
      failed: { count: 2, names: ['db-00', 'db-01'] },
      succeeded: { count: 1, names: ['db-02'] },
      running: { count: 0 },
      notStarted: { count: 27, names: FLEET.slice(3, 23) },
    });
    const cron = await getCron(ns);
    const condition = cron.status?.conditions?.find((c) => c.type === 'Halted');
    expect(condition).toMatchObject({ status: 'True', reason: 'FailureBudgetExceeded' });
    expect(condition?.message).toContain('(failed: db-00, db-01)');
    expect(condition?.message).toContain('kubectl vws resume');
    const events = await eventually('the Warning Event', async () => {
      const e = await eventsAbout(raw, ns, 'CronOperation', NAME);
      return e.some((x) => x.reason === 'FailureBudgetExceeded') ? e : undefined;
    });
    expect(events.find((x) => x.reason === 'FailureBudgetExceeded')?.type).toBe('Warning');

    // Nothing further starts: not on a reconcile, not at the next slot (skipped, recorded).
    await mergePatch(raw, pathOf(kinds.cron, ns, NAME), {
      metadata: { annotations: { [ANNOTATION_RECONCILE]: 'look-again' } },
    });
    await advanceToNextSlot(raw, clock, ns, NAME, slot);
    await eventually('the next slot skipped', async () =>
      (await getCron(ns)).status?.missedSlots?.some((m) => m.reason === 'RolloutInProgress'),
    );
    expect(targets(await listOperations(raw, ns))).toEqual(['db-00', 'db-01', 'db-02']);

    // The status as kubectl vws prints it (the closing note; docs/rollout.md shows it).
    expect(await vws('status', `cronoperation/${NAME}`)).toBe(0);
    const printed = lines.join('\n').split('\n');
    expect(printed).toContainEqual(
      expect.stringMatching(/Phase: +Halted \(FailureBudgetExceeded\), wave 2 of 3$/),
    );
    expect(printed).toContainEqual(expect.stringMatching(/Failed: +2: db-00, db-01$/));
    expect(printed).toContainEqual(expect.stringMatching(/Not started: +27: db-03, .* and 7 more$/));

    // The cause is fixed; a person resumes: wave 2 (up to 50% = 15 instances) starts, and only it.
    lines.length = 0;
    expect(await vws('resume', `cronoperation/${NAME}`)).toBe(0);
    expect(errors).toEqual([]);
    await eventually('wave 2', async () => (await listOperations(raw, ns)).length === 15);
    expect(targets(await listOperations(raw, ns))).toEqual(FLEET.slice(0, 15));
    // The wave's Operations are created before the status that records them is written: wait for it.
    await eventually('the run Progressing in wave 2', async () => {
      const r = (await getCron(ns)).status?.rollout;
      return r?.phase === 'Progressing' && r.wave?.index === 2 ? r : undefined;
    });
    for (const t of FLEET.slice(3, 15))
      await finishOperation(raw, ns, opOf(await listOperations(raw, ns), t), 'Succeeded', clock.now());

    // Wave 3: the rest.
    await eventually('wave 3', async () => (await listOperations(raw, ns)).length === 30);
    for (const t of FLEET.slice(15))
      await finishOperation(raw, ns, opOf(await listOperations(raw, ns), t), 'Succeeded', clock.now());
    const done = await eventually('Completed', async () => {
      const r = (await getCron(ns)).status?.rollout;
      return r?.phase === 'Completed' ? r : undefined;
    });
    expect(done).toMatchObject({
      reason: 'CompletedWithFailures',
      succeeded: { count: 28 },
      failed: { count: 2, names: ['db-00', 'db-01'] },
      notStarted: { count: 0 },
    });
    expect(targets(await listOperations(raw, ns))).toEqual(FLEET); // each instance once, none retried
  });

  it('abandon: nothing more of the run ever starts; the next slot is a new run', async () => {
    const { ns, clock, slot, lines, errors, vws } = await haltedInWaveOne();
    expect(await vws('abandon', `cronoperation/${NAME}`)).toBe(0);
    expect(errors).toEqual([]);
    expect(lines.join('\n')).toContain('abandon requested');
    const r = await eventually('Abandoned', async () => {
      const s = (await getCron(ns)).status?.rollout;
      return s?.phase === 'Abandoned' ? s : undefined;
    });
    expect(r).toMatchObject({ reason: 'RolloutAbandoned', notStarted: { count: 27 } });
    expect((await getCron(ns)).status?.conditions?.find((c) => c.type === 'Halted')).toMatchObject({
      status: 'False',
      reason: 'RolloutAbandoned',
    });
    // A resume afterwards is refused by the CLI; set by hand, it revives nothing.
    expect(await vws('resume', `cronoperation/${NAME}`)).toBe(1);
    expect(errors.join('\n')).toContain('Abandoned');
    await mergePatch(raw, pathOf(kinds.cron, ns, NAME), {
      metadata: { annotations: { [ANNOTATION_RESUME]: 'by-hand' } },
    });

    // The next slot begins a new run (its own wave 1); the abandoned run keeps its three Operations.
    const next = await advanceToNextSlot(raw, clock, ns, NAME, slot);
    const fresh = await eventually('the new run', async () => {
      const s = (await getCron(ns)).status?.rollout;
      return s && Date.parse(s.run.scheduledTime) === next && s.running.count === 3 ? s : undefined;
    });
    expect(fresh).toMatchObject({ phase: 'Progressing', resumeRequest: 'by-hand', wave: { index: 1 } });
    const bySlot = (at: number) =>
      listOperations(raw, ns).then((ops) =>
        targets(
          ops.filter((o) => Date.parse(o.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME] ?? '') === at),
        ),
      );
    expect(await bySlot(slot)).toEqual(['db-00', 'db-01', 'db-02']);
    expect(await bySlot(next)).toEqual(['db-00', 'db-01', 'db-02']);
  });
});
