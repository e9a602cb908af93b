// Hole 11 of issue 28: no defence in depth. In a namespace the webhooks do not select, any Operation ran
// with forged stamps (created-by, approve, approved-by): the reconciler re-checked neither the type verb
// nor the approver. Now the mutating webhook signs the stamps (ops.vworkspace.io/admission, an HMAC with a
// key only the operator's pods hold, over namespace, spec and stamps; ADR 0029) and the reconciler runs
// nothing whose record does not verify (Accepted=False/NotAdmitted), then reviews the stamped creator's
// type verb and the approver's `approve` again before it starts anything (RequesterNotAuthorized).

import { PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
} from '../../../operator/src/api/annotations.ts';
import { startWorld, type World } from './harness.ts';
import {
  childrenOf,
  grantVerb,
  guardedCatalog,
  guardedSpec,
  jobsIn,
  revokeVerb,
  settled,
  unselected,
} from './support.ts';

const catalog = guardedCatalog;
const spec = guardedSpec;

describe('the reconciler runs only what the webhooks admitted, for requesters who may still run it', () => {
  let w: World;
  let a: string;
  let b: string;
  beforeAll(async () => {
    w = await startWorld({ catalog });
    [a, b] = w.namespaces;
    for (const ns of w.namespaces) {
      await w.instance(ns, 'shop', { runcommand: 'job' });
      await w.grantProfile('runCommand.job', ns);
    }
    // mallory may create Operations in b, nothing more: no type verb, no approve.
    await w.grant('mallory', b, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
    ]);
    await w.grant('bob', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['get', 'patch'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['approve'] },
    ]);
    await w.grant('alice', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
    ]);
    // alice's type verb, in a binding of a known name so that the test can revoke it.
    await grantVerb(w, a, 'alice', 'runcommand');
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses forged stamps in a namespace the webhooks do not select: NotAdmitted, no Job', async () => {
    await unselected(w, b, async () => {
      await w.operation(w.as('mallory'), b, 'forged', spec, {
        [ANNOTATION_CREATED_BY]: 'alice',
        [ANNOTATION_APPROVE]: 'true',
        [ANNOTATION_APPROVED_BY]: 'bob',
      });
    });
    const out = await settled(w, b, 'forged');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
    expect(out.accepted?.message).toContain(`select namespace ${b}`);
    expect(await childrenOf(w, jobsIn(b), 'forged')).toEqual([]);
  });

  it('refuses an admission record copied from an admitted Operation of another namespace', async () => {
    // alice's Operation in a is admitted (signed) and waits for approval.
    await w.waitFor('the webhook to know the catalog template', async () => {
      try {
        await w.operation(w.as('alice'), a, 'original', spec);
        return true;
      } catch (err) {
        if (String(err).includes('not loaded') || String(err).includes('does not exist')) return undefined;
        throw err;
      }
    });
    const original = await w.getOperation(a, 'original');
    const stamps = original.metadata.annotations ?? {};
    expect(stamps[ANNOTATION_ADMISSION]).toBeDefined();
    await unselected(w, b, async () => {
      await w.operation(w.as('mallory'), b, 'copied', spec, {
        [ANNOTATION_CREATED_BY]: stamps[ANNOTATION_CREATED_BY] ?? '',
        [ANNOTATION_ADMISSION]: stamps[ANNOTATION_ADMISSION] ?? '',
      });
    });
    const out = await settled(w, b, 'copied');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
    expect(out.accepted?.message).toContain('does not match its namespace');
    expect(await childrenOf(w, jobsIn(b), 'copied')).toEqual([]);
  });

  it("re-checks the creator's verb before starting: revoked while waiting for approval, nothing runs", async () => {
    const blocked = await w.waitFor('original to wait for approval', async () => {
      const o = await w.getOperation(a, 'original');
      return o.status?.conditions?.find((c) => c.type === 'Blocked' && c.reason === 'AwaitingApproval');
    });
    expect(blocked).toBeTruthy();
    await revokeVerb(w, a, 'alice', 'runcommand');
    await w.as('bob').request({
      method: 'PATCH',
      path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${a}/operations/original`,
      contentType: PATCH_TYPES.merge,
      body: { metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } } },
    });
    const out = await settled(w, a, 'original');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'RequesterNotAuthorized' });
    expect(out.accepted?.message).toContain('"alice", who created this Operation, may no longer runcommand');
    expect(await childrenOf(w, jobsIn(a), 'original')).toEqual([]);
  });
});
