// Labels, names and annotations a tenant can set never grant a re-run, a pruning, a queue position or a
// slot without the RBAC of the action itself (issue 28: holes 6, 8, 9 and 10, the run-now size and
// skip-next; docs/adr/0026-scheduler-ownership-and-control-annotations.md). Each was reproduced here
// as a hostile tenant before its fix:
//   - re-run: ops.vworkspace.io/reconcile on someone's failed Operation started another attempt;
//   - pruning: an Operation labelled ops.vworkspace.io/cron-operation=<a cron with history 0> was deleted;
//   - starving: one's own Operation labelled as a Forbid cron's, waiting on approval, skipped its slots;
//   - stealing: an Operation pre-created under a slot's name was adopted as the slot's run;
//   - a run-now value over 256 characters looped on the status write; skip-next needed no verb.

import { formatTime } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_RECONCILE,
  ANNOTATION_RUN_NOW,
  ANNOTATION_SKIP_NEXT,
  LABEL_CRON_OPERATION,
} from '../../../operator/src/api/annotations.ts';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import type { WatchOperation } from '../../../operator/src/api/watchoperation.ts';
import { operationForTrigger } from '../../../operator/src/schedule/watch-decide.ts';
import { startWorld, type World } from './harness.ts';
import {
  APPS,
  annotate,
  createScheduler,
  earlyInMinute,
  eventAbout,
  getScheduler,
  labelledInstance,
  mergePatch,
  OPS,
  ownedOperation,
  ownedOperations,
  readyOf,
  slotHandled,
} from './schedule-support.ts';
import { failedByChildConflict, runCommandSpec, unselectedNamespace } from './support.ts';

const EVERY_MINUTE = '* * * * *';
const runCommand = runCommandSpec;
const cronSpec = (extra: Record<string, unknown> = {}, policy?: Record<string, unknown>) => ({
  schedule: EVERY_MINUTE,
  operationTemplate: { spec: runCommand(policy ? { policy } : {}) },
  ...extra,
});

describe('tenant-set labels, names and annotations grant nothing on schedules and re-runs', () => {
  let w: World;
  let a: string;
  const opPath = (name: string) => `${OPS}/namespaces/${a}/operations/${name}`;
  const cronPath = (name: string) => `${OPS}/namespaces/${a}/cronoperations/${name}`;
  const crud = ['create', 'get', 'list', 'update', 'patch'];
  /** The first slot of the CronOperations created in beforeAll (they were all created in one minute). */
  let firstSlot = 0;
  /** The name of that slot's Operation of `alice-slot`, pre-created by eve. */
  let squatted = '';
  /** A namespace the webhooks do not select, once a test made it (unjudged()). */
  let unjudgedNs: string | undefined;

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await labelledInstance(w, a, 'web', { tier: 'web' }, { 'ops.vworkspace.io/runcommand': 'job' });
    await w.grantProfile('runCommand.job', a);
    const schedulers = {
      apiGroups: ['ops.vworkspace.io'],
      resources: ['cronoperations', 'watchoperations', 'operations'],
      verbs: crud,
    };
    // alice runs commands on every instance, and approves.
    await w.grant('alice', a, [
      schedulers,
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['runcommand', 'approve'],
      },
    ]);
    // eve may run commands too (she is a teammate, not the owner of alice's schedules).
    await w.grant('eve', a, [
      schedulers,
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
    // mallory may edit Operations and CronOperations, but holds no type verb.
    await w.grant('mallory', a, [schedulers]);

    // Everything a slot of the tests below meets is in place before the first slot. alice's
    // CronOperations run at that minute only (once an hour), so what each test reads is that slot's.
    await earlyInMinute();
    firstSlot = (Math.floor(Date.now() / 60_000) + 1) * 60_000;
    const once = `${new Date(firstSlot).getUTCMinutes()} * * * *`;
    squatted = `alice-slot-${firstSlot / 60_000}`;
    await createScheduler(
      w.as('alice'),
      a,
      'cronoperations',
      'alice-forbid',
      cronSpec({ schedule: once, concurrencyPolicy: 'Forbid' }),
    );
    await createScheduler(w.as('alice'), a, 'cronoperations', 'alice-slot', cronSpec({ schedule: once }));
    await createScheduler(
      w.as('eve'),
      a,
      'cronoperations',
      'eve-prune',
      cronSpec({ successfulHistoryLimit: 0, failedHistoryLimit: 0 }, { dryRun: true }),
    );

    // Hole 10: eve pre-creates a dry run under the name of alice-slot's next run.
    await w.operation(w.as('eve'), a, squatted, runCommand({ policy: { dryRun: true } }));
    // Hole 9: eve's own Operation, labelled as alice-forbid's, waits for approval.
    await w.as('eve').request({
      method: 'POST',
      path: `${OPS}/namespaces/${a}/operations`,
      body: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'Operation',
        metadata: { name: 'eve-waits', labels: { [LABEL_CRON_OPERATION]: 'alice-forbid' } },
        spec: runCommand({ policy: { requiresApproval: true } }),
      },
    });
    // Hole 8: alice's finished dry run, labelled by eve as a run of eve-prune (history limit 0).
    await w.operation(w.as('alice'), a, 'alice-history', runCommand({ policy: { dryRun: true } }));
    await w.waitFor(
      'alice-history to finish',
      async () => (await w.getOperation(a, 'alice-history')).status?.phase === 'Succeeded',
    );
    await mergePatch(w.as('eve'), opPath('alice-history'), {
      metadata: { labels: { [LABEL_CRON_OPERATION]: 'eve-prune' } },
    });
  });
  afterAll(async () => {
    if (unjudgedNs) await w.admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${unjudgedNs}` });
    await w?.stop();
  });

  it('hole 9: an Operation labelled as a Forbid CronOperation’s does not skip its slot; naming it as owner is refused', async () => {
    const cron = await slotHandled(w, a, 'alice-forbid', firstSlot);
    expect(cron.status?.missedSlots).toBeUndefined();
    const run = `alice-forbid-${firstSlot / 60_000}`;
    expect((await ownedOperations(w, a, cron)).map((o) => o.metadata.name)).toEqual([run]);
    expect(cron.status?.active?.map((r) => r.name)).toEqual([run]);

    // The owner reference is what counts, so only the operator may write one naming a scheduler.
    const d = await w.denial(
      ownedOperation(
        w.as('eve'),
        a,
        'eve-owned',
        { kind: 'CronOperation', name: 'alice-forbid', uid: cron.metadata.uid },
        runCommand({ policy: { requiresApproval: true } }),
      ),
    );
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual(['metadata.ownerReferences']);
  });

  it('hole 10: an Operation pre-created under a slot’s name is not adopted; the slot is refused loudly', async () => {
    const cron = await slotHandled(w, a, 'alice-slot', firstSlot);
    expect(cron.status?.missedSlots).toEqual([
      expect.objectContaining({ scheduledTime: formatTime(firstSlot), reason: 'OperationRefused' }),
    ]);
    expect(readyOf(cron)).toMatchObject({ status: 'False', reason: 'OperationRefused' });
    expect(readyOf(cron)?.message).toContain(squatted);
    expect(cron.status?.lastSuccessfulTime).toBeUndefined();
    expect(cron.status?.active).toBeUndefined();
    expect(await ownedOperations(w, a, cron)).toEqual([]);
    const event = await eventAbout(w, a, 'alice-slot', 'OperationRefused');
    expect(event.type).toBe('Warning');
    expect(event.note).toContain(`${squatted} already exists and was not created by this CronOperation`);
  });

  it('hole 10, WatchOperation: an Operation pre-created under a trigger’s name is not adopted', async () => {
    const watch = await createScheduler(w.as('alice'), a, 'watchoperations', 'alice-watch', {
      selector: { matchLabels: { tier: 'web' } },
      triggers: { labels: ['example.com/go'] },
      operationTemplate: { spec: { ...runCommand(), targetRef: undefined } },
    });
    const web = await w.admin.request<ApplicationInstance>({
      method: 'GET',
      path: `${APPS}/namespaces/${a}/applicationinstances/web`,
    });
    // Everything the name derives from is readable by a tenant: the instance uid, the trigger, the times.
    const next = operationForTrigger(
      watch as unknown as WatchOperation,
      web,
      'label:example.com/go',
      undefined,
      undefined,
    ).op;
    const name = next.metadata.name ?? '';
    await w.operation(w.as('eve'), a, name, {
      ...runCommand({ policy: { dryRun: true } }),
      targetRef: { name: 'web' },
    });
    await mergePatch(w.admin, `${APPS}/namespaces/${a}/applicationinstances/web`, {
      metadata: { labels: { 'example.com/go': 'now' } },
    });
    const refused = await w.waitFor('alice-watch to refuse the taken name', async () => {
      const s = await getScheduler(w, a, 'watchoperations', 'alice-watch');
      return readyOf(s)?.reason === 'OperationRefused' ? s : undefined;
    });
    expect(readyOf(refused)?.message).toContain(name);
    expect(refused.status?.active ?? []).toEqual([]);
    expect(await ownedOperations(w, a, refused)).toEqual([]);
    expect((await eventAbout(w, a, 'alice-watch', 'OperationRefused')).type).toBe('Warning');
  });

  it('hole 8: pruning deletes only the CronOperation’s own Operations, never one labelled as its', async () => {
    // eve-prune's own dry run of the first slot finished and was pruned (history 0)...
    const cron = await slotHandled(
      w,
      a,
      'eve-prune',
      firstSlot,
      (s) => Date.parse(s.status?.lastSuccessfulTime ?? '') >= firstSlot,
    );
    await w.waitFor(
      'eve-prune to prune its own run',
      async () => (await ownedOperations(w, a, cron)).length === 0,
    );
    // ...in the same reconcile that used to delete alice's labelled one too.
    const still = await w.getOperation(a, 'alice-history');
    expect(still.status?.phase).toBe('Succeeded');
  });

  /** A namespace the webhooks do not select (created once). */
  async function unjudged(): Promise<string> {
    unjudgedNs ??= await unselectedNamespace(w, `${a}-unjudged`);
    return unjudgedNs;
  }

  it('hole 6: re-running a failed Operation needs the type verb on its target', async () => {
    await failedByChildConflict(
      w,
      a,
      'flaky',
      () => w.operation(w.as('alice'), a, 'flaky', runCommand({ policy: { requiresApproval: true } })),
      () => annotate(w.as('alice'), opPath('flaky'), { 'ops.vworkspace.io/approve': 'true' }),
    );

    const d = await w.denial(annotate(w.as('mallory'), opPath('flaky'), { [ANNOTATION_RECONCILE]: 'again' }));
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_RECONCILE}]`]);
    expect(d.message).toContain('may not runcommand');

    // Whoever may run it may run it again: the next attempt starts, and says who asked.
    await annotate(w.as('alice'), opPath('flaky'), { [ANNOTATION_RECONCILE]: 'again' });
    const rerun = await w.waitFor('flaky to run again', async () => {
      const o = await w.getOperation(a, 'flaky');
      return o.status?.phase === 'Running' ? o : undefined;
    });
    expect(rerun.metadata.annotations?.['ops.vworkspace.io/reconcile-requested-by']).toBe('alice');
  });

  it('skip-next needs the same verb as editing the schedule', async () => {
    const d = await w.denial(
      annotate(w.as('mallory'), cronPath('alice-forbid'), { [ANNOTATION_SKIP_NEXT]: 'true' }),
    );
    expect(d.code).toBe(403);
    expect(d.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_SKIP_NEXT}]`]);
    await annotate(w.as('alice'), cronPath('alice-forbid'), { [ANNOTATION_SKIP_NEXT]: 'true' });
  });

  it('a run-now value over 256 characters is refused at its field', async () => {
    const d = await w.denial(
      annotate(w.as('alice'), cronPath('alice-slot'), { [ANNOTATION_RUN_NOW]: 'x'.repeat(300) }),
    );
    expect(d.code).toBe(422);
    expect(d.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_RUN_NOW}]`]);
    expect(d.message).toContain('256');
  });

  it('the operator records a run-now value over 256 characters that reached it as refused, once', async () => {
    // A namespace the webhooks do not select: nothing stops the value before the operator sees it.
    const ns = await unjudged();
    await createScheduler(w.admin, ns, 'cronoperations', 'long', cronSpec({ schedule: '0 0 1 1 *' }));
    await annotate(w.admin, `${OPS}/namespaces/${ns}/cronoperations/long`, {
      [ANNOTATION_RUN_NOW]: 'y'.repeat(300),
    });
    const cron = await w.waitFor('the request recorded as refused', async () => {
      const s = await getScheduler(w, ns, 'cronoperations', 'long');
      return s.status?.manualRun?.phase === 'Refused' ? s : undefined;
    });
    expect(cron.status?.manualRun?.message).toContain('256');
    expect((await eventAbout(w, ns, 'long', 'RunNowRefused')).type).toBe('Warning');
    expect(await ownedOperations(w, ns, cron)).toEqual([]);
  });
});
