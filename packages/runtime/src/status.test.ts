import { describe, expect, it } from 'vitest';
import { setCondition } from './conditions.ts';
import { type KubeClient, type KubeRequest, RestMapper } from './kube-client.ts';
import { jsonEqual, ObjectWriter } from './status.ts';

function recorder(): { client: KubeClient; reqs: KubeRequest[] } {
  const reqs: KubeRequest[] = [];
  return {
    reqs,
    client: {
      async request<T>(req: KubeRequest): Promise<T> {
        reqs.push(req);
        return {} as T;
      },
    },
  };
}

function writer() {
  const { client, reqs } = recorder();
  const mapper = new RestMapper(client);
  mapper.register('ops.vworkspace.io/v1alpha1', 'Operation', 'operations', true);
  mapper.register('batch/v1', 'Job', 'jobs', true);
  mapper.register('v1', 'Namespace', 'namespaces', false);
  return { w: new ObjectWriter(client, mapper), reqs };
}

const op = {
  apiVersion: 'ops.vworkspace.io/v1alpha1',
  kind: 'Operation',
  metadata: { name: 'b1', namespace: 'team' },
};

describe('ObjectWriter', () => {
  it('applies children with SSA, field manager vworkspace-operator and force, without status or resourceVersion', async () => {
    const { w, reqs } = writer();
    await w.apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j', namespace: 'team', resourceVersion: '5', labels: { a: 'b' } },
      spec: { x: 1 },
      status: { active: 1 },
    } as never);
    expect(reqs[0]).toMatchObject({
      method: 'PATCH',
      path: '/apis/batch/v1/namespaces/team/jobs/j',
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'vworkspace-operator', force: true },
      body: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j', namespace: 'team', labels: { a: 'b' } },
        spec: { x: 1 },
      },
    });
    expect(reqs[0]!.body).not.toHaveProperty('status');
    expect((reqs[0]!.body as { metadata: object }).metadata).not.toHaveProperty('resourceVersion');
  });

  it('applies status on the status subresource with only the identity and the status', async () => {
    const { w, reqs } = writer();
    await w.applyStatus({ ...op, metadata: { ...op.metadata } }, { phase: 'Running' });
    expect(reqs[0]).toMatchObject({
      method: 'PATCH',
      path: '/apis/ops.vworkspace.io/v1alpha1/namespaces/team/operations/b1/status',
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'vworkspace-operator', force: true },
      body: { ...op, status: { phase: 'Running' } },
    });
  });

  it('skips the status write when nothing changed, and writes when something did', async () => {
    const { w, reqs } = writer();
    const conditions = setCondition(
      undefined,
      { type: 'Accepted', status: 'True', reason: 'TemplateValidated' },
      0,
    );
    const current = { ...op, status: { phase: 'Running', conditions } };
    // Same conclusion reached again later: setCondition keeps lastTransitionTime, so no write.
    const again = setCondition(
      conditions,
      { type: 'Accepted', status: 'True', reason: 'TemplateValidated' },
      99_000,
    );
    expect(await w.applyStatusIfChanged(current, { conditions: again, phase: 'Running' })).toBe(false);
    expect(reqs).toHaveLength(0);
    expect(await w.applyStatusIfChanged(current, { conditions: again, phase: 'Succeeded' })).not.toBe(false);
    expect(reqs).toHaveLength(1);
  });

  it('merge-patches status and cluster-scoped objects on the right paths', async () => {
    const { w, reqs } = writer();
    await w.mergePatchStatus(op, { phase: 'Failed' }, { dryRun: true });
    await w.mergePatch(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } },
      { metadata: { labels: { x: 'y' } } },
    );
    expect(reqs[0]).toMatchObject({
      path: '/apis/ops.vworkspace.io/v1alpha1/namespaces/team/operations/b1/status',
      contentType: 'application/merge-patch+json',
      query: { dryRun: 'All' },
      body: { status: { phase: 'Failed' } },
    });
    expect(reqs[1]).toMatchObject({
      path: '/api/v1/namespaces/n',
      contentType: 'application/merge-patch+json',
    });
  });

  it('jsonEqual ignores key order and undefined values but not array order', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(jsonEqual({}, { a: null })).toBe(false);
  });
});
