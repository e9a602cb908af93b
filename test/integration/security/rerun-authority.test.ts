// Where issue 28's re-run check (hole 6) meets the signed admission stamps (hole 11, ADR 0029): a re-run is
// the action again, on the authority of whoever asked for it, so the reconciler believes a re-run request
// only when the webhook signed its requester with the value (ops.vworkspace.io/reconcile-requested-by in
// ops.vworkspace.io/admission), and reviews that requester's type verb again, by SubjectAccessReview, when the
// request arrives and before anything starts. And an Operation carries a CronOperation's authority only when
// the operator created it for one: a controller ownerReference written where the webhooks did not run
// borrows nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_APPROVE,
  ANNOTATION_PAUSED,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_HANDLED,
  ANNOTATION_RECONCILE_REQUESTED_BY,
} from '../../../operator/src/api/annotations.ts';
import { startWorld, type World } from './harness.ts';
import { APPS, annotate, createScheduler, mergePatch, OPS } from './schedule-support.ts';
import {
  childrenOf,
  failedByChildConflict,
  grantVerb,
  jobsIn,
  revokeVerb,
  runCommandSpec,
  settled,
  unselected,
} from './support.ts';

const runCommand = runCommandSpec;
const waitsForApproval = runCommand({ policy: { requiresApproval: true } });

interface EventList {
  items: { reason?: string; note?: string; regarding?: { name?: string } }[];
}

describe('a re-run and a scheduler’s authority are believed only as the webhooks signed them', () => {
  let w: World;
  let a: string;
  const opPath = (name: string) => `${OPS}/namespaces/${a}/operations/${name}`;

  /** Waits for a ReconcileIgnored Event about `name` whose note contains `says`. */
  function ignored(name: string, says: string) {
    return w.waitFor(`a ReconcileIgnored Event about ${name} saying "${says}"`, async () => {
      const events = await w.admin.request<EventList>({
        method: 'GET',
        path: `/apis/events.k8s.io/v1/namespaces/${a}/events`,
      });
      return events.items.find(
        (e) => e.regarding?.name === name && e.reason === 'ReconcileIgnored' && e.note?.includes(says),
      );
    });
  }

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await w.grantProfile('runCommand.job', a);
    const operations = {
      apiGroups: ['ops.vworkspace.io'],
      resources: ['operations', 'cronoperations'],
      verbs: ['create', 'get', 'list', 'patch'],
    };
    const approve = {
      apiGroups: ['apps.vworkspace.io'],
      resources: ['applicationinstances'],
      verbs: ['approve'],
    };
    await w.grant('alice', a, [operations, approve]);
    await w.grant('bob', a, [operations, approve]);
    // mallory may edit (and delete) Operations, and holds no type verb. Delete: the API server's
    // OwnerReferencesPermissionEnforcement lets only who may delete an object set its ownerReferences.
    await w.grant('mallory', a, [{ ...operations, verbs: [...operations.verbs, 'delete'] }]);
    await grantVerb(w, a, 'alice', 'runcommand');
    await grantVerb(w, a, 'bob', 'runcommand');
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('ignores a re-run request written where the webhooks did not run, unstamped or with a forged requester', async () => {
    await failedByChildConflict(
      w,
      a,
      'unjudged',
      () => w.operation(w.as('alice'), a, 'unjudged', waitsForApproval),
      () => annotate(w.as('alice'), opPath('unjudged'), { [ANNOTATION_APPROVE]: 'true' }),
    );
    // Signed by the webhook, then a re-run asked where it does not run: no requester signed with it.
    await unselected(w, a, async () => {
      await annotate(w.as('mallory'), opPath('unjudged'), { [ANNOTATION_RECONCILE]: 'unstamped' });
    });
    expect((await ignored('unjudged', ANNOTATION_RECONCILE_REQUESTED_BY)).note).toContain(
      'the admission webhook never checked',
    );
    // The same with alice, who may run it, written in as the requester: the signed record says otherwise.
    await unselected(w, a, async () => {
      await annotate(w.as('mallory'), opPath('unjudged'), {
        [ANNOTATION_RECONCILE]: 'forged',
        [ANNOTATION_RECONCILE_REQUESTED_BY]: 'alice',
      });
    });
    const op = await w.waitFor('the forged request to be handled', async () => {
      const o = await w.getOperation(a, 'unjudged');
      return o.metadata.annotations?.[ANNOTATION_RECONCILE_HANDLED] === 'forged' ? o : undefined;
    });
    expect(op.status?.phase).toBe('Failed');
    expect(op.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason).toBe('ChildConflict');
    expect(op.status?.attempts ?? 1).toBe(1);
    expect(await childrenOf(w, jobsIn(a), 'unjudged')).toEqual([]);
    await ignored('unjudged', 'does not match its namespace, spec or identity annotations');
  });

  it('refuses a re-run whose requester lost the type verb before it started', async () => {
    await failedByChildConflict(
      w,
      a,
      'rerun',
      () => w.operation(w.as('alice'), a, 'rerun', waitsForApproval),
      () => annotate(w.as('alice'), opPath('rerun'), { [ANNOTATION_APPROVE]: 'true' }),
    );
    const shop = `${APPS}/namespaces/${a}/applicationinstances/shop`;
    // The re-run is accepted (bob holds the verb), then waits while shop is paused...
    await annotate(w.admin, shop, { [ANNOTATION_PAUSED]: 'true' });
    try {
      await annotate(w.as('bob'), opPath('rerun'), { [ANNOTATION_RECONCILE]: 'bob-1' });
      const waiting = await w.waitFor('the re-run to wait for shop', async () => {
        const o = await w.getOperation(a, 'rerun');
        const blocked = o.status?.conditions?.find((c) => c.type === 'Blocked');
        return blocked?.status === 'True' && blocked.reason === 'TargetPaused' ? o : undefined;
      });
      expect(waiting.metadata.annotations?.[ANNOTATION_RECONCILE_REQUESTED_BY]).toBe('bob');
      // ...and bob loses the verb meanwhile.
      await revokeVerb(w, a, 'bob', 'runcommand');
    } finally {
      await annotate(w.admin, shop, { [ANNOTATION_PAUSED]: null });
    }
    const out = await settled(w, a, 'rerun');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'RequesterNotAuthorized' });
    expect(out.accepted?.message).toContain(
      `"bob", who asked to re-run it (${ANNOTATION_RECONCILE}), may no longer runcommand applicationinstances/shop`,
    );
    expect(await childrenOf(w, jobsIn(a), 'rerun')).toEqual([]);
  });

  it('an ownerReference to a CronOperation written where the webhooks did not run lends no authority', async () => {
    const cron = await createScheduler(w.as('alice'), a, 'cronoperations', 'nightly', {
      schedule: '0 0 1 1 *',
      suspend: true,
      operationTemplate: { spec: runCommand() },
    });
    await w.operation(w.as('alice'), a, 'borrowed', waitsForApproval);
    await w.waitFor('borrowed to wait for approval', async () => {
      const o = await w.getOperation(a, 'borrowed');
      return o.status?.conditions?.some((c) => c.reason === 'AwaitingApproval');
    });
    // Only the operator's own Operations may name a scheduler as controller (the webhook refuses it from
    // anyone else); where it does not run, mallory writes one onto alice's...
    await unselected(w, a, async () => {
      await mergePatch(w.as('mallory'), opPath('borrowed'), {
        metadata: {
          ownerReferences: [
            {
              apiVersion: 'ops.vworkspace.io/v1alpha1',
              kind: 'CronOperation',
              name: 'nightly',
              uid: cron.metadata.uid,
              controller: true,
            },
          ],
        },
      });
    });
    // ...and alice loses the verb before it is approved.
    await revokeVerb(w, a, 'alice', 'runcommand');
    await annotate(w.as('bob'), opPath('borrowed'), { [ANNOTATION_APPROVE]: 'true' });
    const out = await settled(w, a, 'borrowed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'RequesterNotAuthorized' });
    expect(out.accepted?.message).toContain('"alice", who created this Operation, may no longer runcommand');
    expect(await childrenOf(w, jobsIn(a), 'borrowed')).toEqual([]);
  });
});
