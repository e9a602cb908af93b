// Reading a release's hooks for helmHookJob keeps item 5 of the threat model: Secrets are listed as
// metadata only, and only the newest record of the named release is read in full, by name.
import { gzipSync } from 'node:zlib';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  KubeApiError,
  type KubeClient,
  type KubeRequest,
  PARTIAL_OBJECT_METADATA_LIST,
} from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import { HELM_RELEASE_SECRET_TYPE } from '../release/helm-release.ts';
import { newestRevision, readReleaseHooks } from './release-hooks.ts';

const meta = (name: string, version: string): KubernetesObject => ({
  metadata: { name, labels: { owner: 'helm', name: 'web', version } },
});

function recordSecret(name: string, record: unknown) {
  const helmEncoded = gzipSync(Buffer.from(JSON.stringify(record))).toString('base64');
  return {
    metadata: { name, namespace: 'apps' },
    type: HELM_RELEASE_SECRET_TYPE,
    data: { release: Buffer.from(helmEncoded).toString('base64') },
  };
}

/** Answers the metadata list with `metas` and a by-name list with `full` (when its name matches). */
function fakeClient(metas: KubernetesObject[], full: Record<string, unknown>[] = []) {
  const requests: KubeRequest[] = [];
  const client: KubeClient = {
    async request<T>(req: KubeRequest): Promise<T> {
      requests.push(req);
      const byName = String(req.query?.fieldSelector ?? '').match(/^metadata\.name=(.+)$/)?.[1];
      if (byName) {
        return { items: full.filter((s) => (s.metadata as { name: string }).name === byName) } as T;
      }
      return { items: metas } as T;
    },
  };
  return { client, requests };
}

const signal = new AbortController().signal;

describe('the hooks of a release', () => {
  it('newestRevision: the highest version label, ignoring Secrets without one', () => {
    expect(
      newestRevision([
        meta('sh.helm.release.v1.web.v2', '2'),
        meta('sh.helm.release.v1.web.v10', '10'),
        meta('x', 'x'),
      ]),
    ).toEqual({ name: 'sh.helm.release.v1.web.v10', revision: 10 });
    expect(newestRevision([])).toBeUndefined();
  });

  it('lists metadata only, then reads the newest record by name: its hooks', async () => {
    const hook = {
      name: 'web-migrate',
      kind: 'Job',
      manifest: 'kind: Job',
      events: ['pre-upgrade'],
      weight: 1,
    };
    const { client, requests } = fakeClient(
      [meta('sh.helm.release.v1.web.v1', '1'), meta('sh.helm.release.v1.web.v2', '2')],
      [recordSecret('sh.helm.release.v1.web.v2', { name: 'web', version: 2, hooks: [hook] })],
    );
    const r = await readReleaseHooks(client, 'apps', 'web', signal);
    expect(r).toEqual({
      revision: 2,
      hooks: [{ ...hook, path: '', deletePolicies: [] }],
    });
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      method: 'GET',
      path: '/api/v1/namespaces/apps/secrets',
      accept: PARTIAL_OBJECT_METADATA_LIST,
      query: { labelSelector: 'owner=helm,name=web', fieldSelector: `type=${HELM_RELEASE_SECRET_TYPE}` },
    });
    expect(requests[1]).toMatchObject({
      method: 'GET',
      path: '/api/v1/namespaces/apps/secrets',
      query: { fieldSelector: 'metadata.name=sh.helm.release.v1.web.v2' },
    });
  });

  it('no record: no revision and nothing read in full; an unreadable one: the problem, never the content', async () => {
    const none = fakeClient([]);
    expect(await readReleaseHooks(none.client, 'apps', 'web', signal)).toEqual({ hooks: [] });
    expect(none.requests).toHaveLength(1);
    const broken = fakeClient(
      [meta('sh.helm.release.v1.web.v3', '3')],
      [
        {
          metadata: { name: 'sh.helm.release.v1.web.v3', namespace: 'apps' },
          type: HELM_RELEASE_SECRET_TYPE,
          data: {},
        },
      ],
    );
    expect(await readReleaseHooks(broken.client, 'apps', 'web', signal)).toEqual({
      revision: 3,
      hooks: [],
      problem: 'Helm release Secret apps/sh.helm.release.v1.web.v3 has no data.release',
    });
  });

  it('a 403 becomes a problem naming the missing permission; other errors are thrown', async () => {
    const forbidden: KubeClient = {
      request: () => Promise.reject(new KubeApiError(403, 'Forbidden', 'no', undefined)),
    };
    expect((await readReleaseHooks(forbidden, 'apps', 'web', signal)).problem).toContain(
      'may not list Secrets in namespace apps',
    );
    const down: KubeClient = {
      request: () => Promise.reject(new KubeApiError(500, 'InternalError', 'down', undefined)),
    };
    await expect(readReleaseHooks(down, 'apps', 'web', signal)).rejects.toThrow('500');
  });
});
