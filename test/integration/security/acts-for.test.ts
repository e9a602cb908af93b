// Hole 1 of issue 28: separation of duties through one's own schedule. A user with the type verb and
// `approve` ran a guarded template (requiresApproval + separationOfDuties) through her own CronOperation
// and run-now, then approved the Operation it created herself: its created-by is the operator's
// ServiceAccount, so "the approver is not the creator" held. Now the Operation carries whom it acts for
// (ops.vworkspace.io/acts-for: who wrote the CronOperation and who asked for the run, stamped by the
// webhook on the CronOperation, copied by the operator, checked by the webhook) and none of them may
// approve it; a tenant cannot write that annotation herself.

import { PATCH_TYPES, type RestClient } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_APPROVE,
  ANNOTATION_EDITED_BY,
  ANNOTATION_RUN_NOW,
  ANNOTATION_RUN_NOW_BY,
  LABEL_CRON_OPERATION,
} from '../../../operator/src/api/annotations.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { startWorld, type World } from './harness.ts';
import { childrenOf, guardedCatalog, guardedSpec, jobsIn, settled } from './support.ts';

const OPS = '/apis/ops.vworkspace.io/v1alpha1';
const catalog = guardedCatalog;
const spec = guardedSpec;

const annotate = (client: RestClient, path: string, annotations: Record<string, string | null>) =>
  client.request({
    method: 'PATCH',
    path,
    contentType: PATCH_TYPES.merge,
    body: { metadata: { annotations } },
  });

describe('separation of duties holds for Operations a CronOperation creates', () => {
  let w: World;
  let a: string;
  beforeAll(async () => {
    w = await startWorld({ catalog });
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await w.grantProfile('runCommand.job', a);
    const operate = [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['cronoperations', 'operations'],
        verbs: ['create', 'get', 'list', 'patch', 'update'],
      },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['runcommand', 'approve'],
      },
    ];
    await w.grant('alice', a, operate);
    await w.grant('bob', a, operate);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it("refuses the schedule's author approving the Operation her run-now created; another approver runs it", async () => {
    const alice = w.as('alice');
    const cronPath = `${OPS}/namespaces/${a}/cronoperations/guarded`;
    await w.waitFor('the webhook to know the catalog template', async () => {
      try {
        await alice.request({
          method: 'POST',
          path: `${OPS}/namespaces/${a}/cronoperations`,
          body: {
            apiVersion: 'ops.vworkspace.io/v1alpha1',
            kind: 'CronOperation',
            metadata: { name: 'guarded' },
            // Once a year: only the run-now request creates an Operation during the test.
            spec: { schedule: '0 0 1 1 *', operationTemplate: { spec } },
          },
        });
        return true;
      } catch (err) {
        if (String(err).includes('not loaded') || String(err).includes('does not exist')) return undefined;
        throw err;
      }
    });
    await annotate(alice, cronPath, { [ANNOTATION_RUN_NOW]: 'r1' });
    const op = await w.waitFor('the run-now Operation to wait for approval', async () => {
      const list = await w.admin.request<{ items: Operation[] }>({
        method: 'GET',
        path: `${OPS}/namespaces/${a}/operations`,
        query: { labelSelector: `${LABEL_CRON_OPERATION}=guarded` },
      });
      const o = list.items[0];
      const blocked = o?.status?.conditions?.find((c) => c.type === 'Blocked');
      return blocked?.reason === 'AwaitingApproval' ? o : undefined;
    });
    const opPath = `${OPS}/namespaces/${a}/operations/${op.metadata.name}`;

    const selfApproval = await w.denial(annotate(alice, opPath, { [ANNOTATION_APPROVE]: 'true' }));
    expect(selfApproval.code).toBe(403);
    expect(selfApproval.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_APPROVE}]`]);
    expect(selfApproval.message).toContain('separation of duties');
    expect(selfApproval.message).toContain('acts for "alice"');
    expect(JSON.parse(op.metadata.annotations?.[ANNOTATION_ACTS_FOR] ?? '[]')).toEqual(['alice']);

    await annotate(w.as('bob'), opPath, { [ANNOTATION_APPROVE]: 'true' });
    const out = await settled(w, a, op.metadata.name ?? '');
    expect(out.op.status?.phase).not.toBe('Failed');
    expect(await childrenOf(w, jobsIn(a), op.metadata.name ?? '')).toHaveLength(1);
  });

  it('stamps who wrote the CronOperation and who asked for the run; run-now by another user adds her', async () => {
    const cronPath = `${OPS}/namespaces/${a}/cronoperations/guarded`;
    await annotate(w.as('bob'), cronPath, { [ANNOTATION_RUN_NOW]: 'r2' });
    const cron = await w.admin.request<Operation>({ method: 'GET', path: cronPath });
    expect(cron.metadata.annotations?.[ANNOTATION_EDITED_BY]).toBe('alice');
    expect(cron.metadata.annotations?.[ANNOTATION_RUN_NOW_BY]).toBe('bob');
    const op = await w.waitFor('the second run-now Operation', async () => {
      const list = await w.admin.request<{ items: Operation[] }>({
        method: 'GET',
        path: `${OPS}/namespaces/${a}/operations`,
        query: { labelSelector: `${LABEL_CRON_OPERATION}=guarded` },
      });
      return list.items.find((o) => o.metadata.annotations?.[ANNOTATION_ACTS_FOR]?.includes('bob'));
    });
    expect(JSON.parse(op.metadata.annotations?.[ANNOTATION_ACTS_FOR] ?? '[]')).toEqual(['alice', 'bob']);
    // Neither may approve it: a third person must.
    for (const who of ['alice', 'bob']) {
      const d = await w.denial(
        annotate(w.as(who), `${OPS}/namespaces/${a}/operations/${op.metadata.name}`, {
          [ANNOTATION_APPROVE]: 'true',
        }),
      );
      expect(d.code).toBe(403);
    }
  });

  it('refuses a tenant writing acts-for, edited-by or run-now-by herself', async () => {
    const alice = w.as('alice');
    const forged = await w.denial(
      w.operation(alice, a, 'forged-acts-for', spec, { [ANNOTATION_ACTS_FOR]: '["carol"]' }),
    );
    expect(forged.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_ACTS_FOR}]`]);
    const edited = await w.denial(
      annotate(alice, `${OPS}/namespaces/${a}/cronoperations/guarded`, { [ANNOTATION_EDITED_BY]: 'carol' }),
    );
    expect(edited.causes.map((c) => c.field)).toEqual([`metadata.annotations[${ANNOTATION_EDITED_BY}]`]);
  });
});
