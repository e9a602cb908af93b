import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import {
  apiVersionOf,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  KubeApiError,
  type KubeClient,
  type KubeRequest,
  RestMapper,
  requestSignal,
  resourcePath,
  splitApiVersion,
  statusCode,
} from './kube-client.ts';

describe('kube-client helpers', () => {
  it('builds REST paths for core and grouped, namespaced and cluster resources, with subresources', () => {
    expect(resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: 'ns' }, 'a')).toBe(
      '/api/v1/namespaces/ns/configmaps/a',
    );
    expect(resourcePath({ group: 'ops.vworkspace.io', version: 'v1alpha1', plural: 'operations' })).toBe(
      '/apis/ops.vworkspace.io/v1alpha1/operations',
    );
    expect(
      resourcePath({ group: 'x.io', version: 'v1', plural: 'things', namespace: 'n' }, 't', 'status'),
    ).toBe('/apis/x.io/v1/namespaces/n/things/t/status');
    expect(apiVersionOf({ group: '', version: 'v1' })).toBe('v1');
    expect(apiVersionOf({ group: 'batch', version: 'v1' })).toBe('batch/v1');
    expect(splitApiVersion('batch/v1')).toEqual({ group: 'batch', version: 'v1' });
    expect(splitApiVersion('v1')).toEqual({ group: '', version: 'v1' });
  });

  it('classifies errors from this client, the generated clients and the watch', () => {
    const conflict = new KubeApiError(409, 'Conflict', 'the object has been modified', {
      reason: 'Conflict',
    });
    const exists = new KubeApiError(409, 'AlreadyExists', 'exists', { reason: 'AlreadyExists' });
    expect(isConflict(conflict)).toBe(true);
    expect(isAlreadyExists(conflict)).toBe(false);
    expect(isAlreadyExists(exists)).toBe(true);
    expect(isConflict(exists)).toBe(false);
    // Generated clients throw ApiException with the body as a string.
    const generated = new ApiException(409, 'x', JSON.stringify({ reason: 'AlreadyExists' }), {});
    expect(isAlreadyExists(generated)).toBe(true);
    expect(isNotFound(new ApiException(404, 'x', {}, {}))).toBe(true);
    // client-node's Watch sets statusCode on a plain Error.
    expect(isGone(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(true);
    expect(statusCode(new Error('x'))).toBeUndefined();
    expect(statusCode('nope')).toBeUndefined();
    expect(conflict.message).toBe('409 Conflict: the object has been modified');
  });
});

describe('RestMapper', () => {
  function discovery(): {
    client: KubeClient;
    calls: string[];
    resources: { name: string; kind: string; namespaced: boolean }[];
  } {
    const calls: string[] = [];
    const resources = [
      { name: 'jobs', kind: 'Job', namespaced: true },
      { name: 'jobs/status', kind: 'Job', namespaced: true },
    ];
    return {
      calls,
      resources,
      client: {
        async request<T>(req: KubeRequest): Promise<T> {
          calls.push(req.path);
          return { resources } as T;
        },
      },
    };
  }

  it('maps kinds through discovery, caches hits, and re-reads discovery on a miss', async () => {
    const d = discovery();
    const m = new RestMapper(d.client);
    expect(await m.resourceFor('batch/v1', 'Job')).toEqual({
      group: 'batch',
      version: 'v1',
      plural: 'jobs',
      namespaced: true,
    });
    await m.resourceFor('batch/v1', 'Job');
    expect(d.calls).toEqual(['/apis/batch/v1']);
    await expect(m.resourceFor('batch/v1', 'CronJob')).rejects.toMatchObject({ code: 404 });
    d.resources.push({ name: 'cronjobs', kind: 'CronJob', namespaced: true });
    expect((await m.resourceFor('batch/v1', 'CronJob')).plural).toBe('cronjobs');
    expect(d.calls).toEqual(['/apis/batch/v1', '/apis/batch/v1', '/apis/batch/v1']);
    expect(
      await m.pathFor(
        { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j', namespace: 'n' } },
        'status',
      ),
    ).toBe('/apis/batch/v1/namespaces/n/jobs/j/status');
    await expect(m.pathFor({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' } })).rejects.toThrow(
      /namespaced/,
    );
  });

  it('uses /api/v1 for the core group and accepts hand registrations', async () => {
    const d = discovery();
    const m = new RestMapper(d.client);
    m.register('v1', 'ConfigMap', 'configmaps', true);
    expect(
      await m.pathFor({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } }),
    ).toBe('/api/v1/namespaces/n/configmaps/c');
    expect(d.calls).toEqual([]);
  });
});

describe('requestSignal', () => {
  it('aborts with a TimeoutError after the time, and not once done', () => {
    vi.useFakeTimers();
    try {
      const timed = requestSignal(undefined, 1_000);
      vi.advanceTimersByTime(999);
      expect(timed.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(timed.signal.aborted).toBe(true);
      expect((timed.signal.reason as DOMException).name).toBe('TimeoutError');

      const ended = requestSignal(undefined, 1_000);
      ended.done();
      vi.advanceTimersByTime(5_000);
      expect(ended.signal.aborted).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it("follows the caller's signal, already aborted or later, and lets go of it once done", () => {
    const caller = new AbortController();
    const later = requestSignal(caller.signal, 60_000);
    const finished = requestSignal(caller.signal, 60_000);
    finished.done();
    caller.abort(new Error('leadership lost'));
    expect(later.signal.aborted).toBe(true);
    expect((later.signal.reason as Error).message).toBe('leadership lost');
    expect(finished.signal.aborted).toBe(false);
    later.done();

    const before = requestSignal(caller.signal, 60_000);
    expect(before.signal.aborted).toBe(true);
    before.done();
  });
});
