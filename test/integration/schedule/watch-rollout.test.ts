// A WatchOperation's spec.rollout on the real API server (ADR 0056): a chart version bumped on 30
// ApplicationInstances is one change, rolled out in waves [3, "50%", "100%"] with a failure budget of 1.
// Wave 1 fails beyond the budget ⇒ Halted, later waves never start; `kubectl vws resume` after the fix ⇒
// the rest run in their waves; `kubectl vws abandon` ⇒ the change ends and none of the rest ever starts.
// Operations "fail" and "succeed" by their status, as the other schedule tests make them.
import { FakeClock } from '@vworkspace/runtime';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_RECONCILE,
  type Operation,
  type WatchOperation,
} from '../../../operator/src/api/index.ts';
import { main } from '../../../operator/src/cli/kubectl-vws.ts';
import { CHANGE_GATHER_MS } from '../../../operator/src/schedule/watch-rollout.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  create,
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
  watchObject,
} from './support.ts';

const kc = adminKubeConfig();
const raw = testClient(kc);
const NAME = 'fleet-upgrade';
const FLEET = Array.from({ length: 30 }, (_, i) => `db-${String(i).padStart(2, '0')}`);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const getWatch = (ns: string) => getObject<WatchOperation>(raw, kinds.watch, ns, NAME);
const targets = (ops: readonly Operation[]) => ops.map((o) => o.spec.targetRef.name).sort();

/** 30 prod instances watched with spec.rollout; all 30 bumped to 2.0.0; wave 1 fails beyond the budget. */
async function haltedInWaveOne() {
  const ns = await createNamespace(kc, 'watch-rollout');
  const clock = new FakeClock(Date.now());
  const op = startSchedulers(kc, clock, { cron: false, watch: true });
  stops.push(() => op.stop());
  for (const name of FLEET) await create(raw, instanceObject(ns, name, { labels: { tier: 'prod' } }));
  await create(
    raw,
    watchObject(ns, NAME, {
      triggers: { fieldPaths: ['spec.appRef.chart.version'] },
      rollout: { waves: [3, '50%', '100%'], failureBudget: 1 },
      // Keep every Operation, so the test sees each instance's (the default history prunes finished runs).
      successfulHistoryLimit: 100,
      failedHistoryLimit: 100,
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
    }),
  );
  stops.push(async () => {
    await raw.request({ method: 'DELETE', path: pathOf(kinds.watch, ns, NAME) }).catch(() => undefined);
  });
  await eventually('the baseline', async () => (await getWatch(ns)).status?.targets?.length === 30);

  // The GitOps sync: every instance gets the new chart version.
  for (const name of FLEET)
    await mergePatch(raw, pathOf(kinds.instance, ns, name), {
      spec: { appRef: { chart: { version: '2.0.0' } } },
    });
  const since = await eventually('the change gathered', async () => {
    const pending = (await getWatch(ns)).status?.targets?.filter((t) => t.pendingTrigger) ?? [];
    const first = Math.min(...pending.map((t) => Date.parse(t.pendingSince ?? '')));
    return pending.length === 30 && clock.hasTimerAt(first + CHANGE_GATHER_MS) ? first : undefined;
  });
  expect(await listOperations(raw, ns)).toEqual([]); // nothing starts inside the gather window
  await clock.advance(since + CHANGE_GATHER_MS - clock.now());

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
    const r = (await getWatch(ns)).status?.rollout;
    return r?.phase === 'Halted' && r.succeeded.count === 1 ? r : undefined;
  });
  const lines: string[] = [];
  const errors: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => errors.push(l) };
  const vws = (...args: string[]) => main([...args, '-n', ns, '--kubeconfig', inject('kubeconfig')], io);
  return { ns, clock, halted, opOf, lines, errors, vws };
}

describe('a watched change rolled out in waves', () => {
  it('halts when wave 1 fails beyond the budget; later waves never start until a resume, then run in their waves', async () => {
    const { ns, clock, halted, opOf, lines, errors, vws } = await haltedInWaveOne();
    expect(halted).toMatchObject({
      run: { reason: 'change' },
      reason: 'FailureBudgetExceeded',
      wave: { index: 2, of: 3, size: 12 },
      failures: { counted: 2, budget: 1 },
      failed: { count: 2, names: ['db-00', 'db-01'] },
      succeeded: { count: 1, names: ['db-02'] },
      running: { count: 0 },
      notStarted: { count: 27, names: FLEET.slice(3, 23) },
    });
    const condition = (await getWatch(ns)).status?.conditions?.find((c) => c.type === 'Halted');
    expect(condition).toMatchObject({ status: 'True', reason: 'FailureBudgetExceeded' });
    expect(condition?.message).toContain('kubectl vws resume');
    const events = await eventually('the Warning Event', async () => {
      const e = await eventsAbout(raw, ns, 'WatchOperation', NAME);
      return e.some((x) => x.reason === 'FailureBudgetExceeded') ? e : undefined;
    });
    expect(events.find((x) => x.reason === 'FailureBudgetExceeded')?.type).toBe('Warning');

    // Nothing further starts on a reconcile, however long it waits.
    await mergePatch(raw, pathOf(kinds.watch, ns, NAME), {
      metadata: { annotations: { [ANNOTATION_RECONCILE]: 'look-again' } },
    });
    await clock.advance(CHANGE_GATHER_MS * 6);
    await eventually('the reconcile seen', async () => {
      const w = await getWatch(ns);
      return w.status?.observedGeneration === w.metadata.generation;
    });
    expect(targets(await listOperations(raw, ns))).toEqual(['db-00', 'db-01', 'db-02']);

    // The status as kubectl vws prints it (docs/rollout.md shows it).
    expect(await vws('status', `watchoperation/${NAME}`)).toBe(0);
    const printed = lines.join('\n').split('\n');
    expect(printed).toContainEqual(
      expect.stringMatching(/Phase: +Halted \(FailureBudgetExceeded\), wave 2 of 3$/),
    );
    expect(printed).toContainEqual(expect.stringMatching(/Failed: +2: db-00, db-01$/));
    expect(printed).toContainEqual(expect.stringMatching(/Not started: +27: db-03, .* and 7 more$/));
    expect(printed).toContainEqual(
      expect.stringMatching(/^Pending: +db-03 field:.*, db-07 field:\S+ and 22 more$/),
    );

    // The cause is fixed; a person resumes: wave 2 (up to 50% = 15 instances) starts, and only it.
    lines.length = 0;
    expect(await vws('resume', `watchoperation/${NAME}`)).toBe(0);
    expect(errors).toEqual([]);
    await eventually('wave 2', async () => (await listOperations(raw, ns)).length === 15);
    expect(targets(await listOperations(raw, ns))).toEqual(FLEET.slice(0, 15));
    for (const t of FLEET.slice(3, 15))
      await finishOperation(raw, ns, opOf(await listOperations(raw, ns), t), 'Succeeded', clock.now());

    // Wave 3: the rest.
    await eventually('wave 3', async () => (await listOperations(raw, ns)).length === 30);
    for (const t of FLEET.slice(15))
      await finishOperation(raw, ns, opOf(await listOperations(raw, ns), t), 'Succeeded', clock.now());
    const done = await eventually('Completed', async () => {
      const r = (await getWatch(ns)).status?.rollout;
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

  it('abandon: the change ends, none of the rest ever starts', async () => {
    const { ns, clock, lines, errors, vws } = await haltedInWaveOne();
    expect(await vws('abandon', `watchoperation/${NAME}`)).toBe(0);
    expect(errors).toEqual([]);
    expect(lines.join('\n')).toContain('abandon requested');
    const r = await eventually('Abandoned', async () => {
      const s = (await getWatch(ns)).status?.rollout;
      return s?.phase === 'Abandoned' ? s : undefined;
    });
    expect(r).toMatchObject({ reason: 'RolloutAbandoned', notStarted: { count: 27 } });
    await eventually('the change dropped', async () =>
      (await getWatch(ns)).status?.targets?.every((t) => !t.pendingTrigger),
    );
    await clock.advance(CHANGE_GATHER_MS * 6);
    expect(targets(await listOperations(raw, ns))).toEqual(['db-00', 'db-01', 'db-02']);
    expect(await vws('resume', `watchoperation/${NAME}`)).toBe(1);
    expect(errors.join('\n')).toContain('Abandoned');
  });
});
