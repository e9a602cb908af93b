import { gzipSync } from 'node:zlib';
import {
  EventRecorder,
  InformerFactory,
  type KubeConfigLike,
  type KubeRequest,
  Manager,
  RestMapper,
  RuntimeMetrics,
} from '@vworkspace/runtime';
import { MemoryApiServer } from '@vworkspace/runtime/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION_INSTANCE, type ApplicationInstance, OPERATION, type Operation } from '../api/index.ts';
import { HELM_RELEASE_SECRET_TYPE, type SecretLike } from '../release/helm-release.ts';
import { BACKUP_METRICS } from './backup-metrics.ts';
import { helmReleaseSecrets, instanceKeysForSecret, setupInstanceController } from './controller.ts';
import { RELEASE_RECORD_UNREADABLE } from './reconciler.ts';

type HelmSecret = SecretLike & { apiVersion: string; kind: string; metadata: { name: string } };

function instance(
  name: string,
  namespace: string,
  release: { name: string; namespace?: string },
): ApplicationInstance {
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1 },
    spec: { appRef: { catalogId: 'tiny' }, release },
  };
}

function releaseSecret(
  ns: string,
  release: string,
  revision: number,
  status: string,
  broken = false,
): HelmSecret {
  const record = JSON.stringify({
    name: release,
    namespace: ns,
    version: revision,
    info: { status },
    chart: { metadata: { name: 'tiny', version: '1.0.0', appVersion: '1.0' } },
  });
  const helmEncoded = broken ? 'garbage' : gzipSync(Buffer.from(record)).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `sh.helm.release.v1.${release}.v${revision}`,
      namespace: ns,
      labels: { owner: 'helm', name: release, version: String(revision), status },
    },
    type: HELM_RELEASE_SECRET_TYPE,
    data: { release: Buffer.from(helmEncoded).toString('base64') },
  };
}

describe('instanceKeysForSecret', () => {
  const instances = [
    instance('a', 'apps', { name: 'web' }),
    instance('b', 'apps', { name: 'web', namespace: 'apps' }),
    instance('c', 'apps', { name: 'db' }),
    instance('d', 'other', { name: 'web' }),
  ];

  it('maps a release Secret to every instance of that release in that namespace', () => {
    expect(instanceKeysForSecret(releaseSecret('apps', 'web', 1, 'deployed'), instances)).toEqual([
      'apps/a',
      'apps/b',
    ]);
    expect(instanceKeysForSecret(releaseSecret('other', 'web', 1, 'deployed'), instances)).toEqual([
      'other/d',
    ]);
    expect(instanceKeysForSecret(releaseSecret('apps', 'cache', 1, 'deployed'), instances)).toEqual([]);
  });

  it('ignores Secrets without a release name label', () => {
    expect(instanceKeysForSecret({ metadata: { name: 'x', namespace: 'apps' } }, instances)).toEqual([]);
  });
});

// An API server stand-in: status applies replace the instance's status (so the informer sees them, as
// it would the real write); Events are recorded; single Secret reads (a list by metadata.name) are
// recorded and answered from the secrets resource.
class FakeApi extends MemoryApiServer {
  readonly statusWrites: ApplicationInstance['status'][] = [];
  readonly events: { type: string; reason: string; note: string }[] = [];
  readonly reads: string[] = [];
  readonly instances = this.resource<ApplicationInstance>('applicationinstances');
  readonly secrets = this.resource<HelmSecret>('secrets');
  override async request<T>(req: KubeRequest): Promise<T> {
    if (req.method === 'PATCH' && req.path.endsWith('/status')) {
      const body = req.body as {
        metadata: { name: string; namespace: string };
        status: ApplicationInstance['status'];
      };
      const current = this.instances.objects.get(`${body.metadata.namespace}/${body.metadata.name}`);
      if (!current) throw new Error('not found');
      this.statusWrites.push(body.status);
      return this.instances.put({ ...current, ...(body.status ? { status: body.status } : {}) }) as T;
    }
    if (req.method === 'POST' && req.path.includes('/events')) {
      const e = req.body as { type: string; reason: string; note: string };
      this.events.push({ type: e.type, reason: e.reason, note: e.note });
      return {} as T;
    }
    const byName = /^metadata\.name=(.+)$/.exec(String(req.query?.fieldSelector ?? ''));
    const ns = /\/namespaces\/([^/]+)\/secrets$/.exec(req.path)?.[1];
    if (req.method === 'GET' && byName?.[1] && ns) {
      this.reads.push(`${ns}/${byName[1]}`);
      const secret = this.secrets.objects.get(`${ns}/${byName[1]}`);
      return { items: secret ? [secret] : [] } as T;
    }
    return super.request<T>(req);
  }
}

describe('the instance controller', () => {
  let stop: (() => Promise<void>) | undefined;

  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  function start(api = new FakeApi()) {
    const metrics = new RuntimeMetrics();
    const { instances, secrets, reads } = api;
    const mapper = new RestMapper(api);
    mapper.register(
      APPLICATION_INSTANCE.apiVersion,
      APPLICATION_INSTANCE.kind,
      APPLICATION_INSTANCE.plural,
      true,
    );
    const cache = new InformerFactory({ kc: {} as KubeConfigLike, client: api });
    const manager = new Manager({
      leaderElection: false,
      metricsPort: false,
      probePort: false,
      metrics,
      cache,
    });
    const { controller, records } = setupInstanceController(manager, {
      client: api,
      mapper,
      events: new EventRecorder({ client: api, dedupWindowMs: 0 }),
    });
    const running = manager.start();
    stop = async () => {
      await manager.stop();
      await running;
    };
    const reconciles = async () =>
      (await metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0);
    /** Runs `act` and waits until at least one more reconcile has finished. */
    const andReconciled = async (act: () => void) => {
      const before = await reconciles();
      act();
      await vi.waitFor(async () => expect(await reconciles()).toBeGreaterThan(before));
    };
    const cachedSecrets = helmReleaseSecrets(cache);
    return { instances, secrets, api, controller, andReconciled, reads, records, cachedSecrets, metrics };
  }

  const reasons = (api: FakeApi) => api.events.map((e) => `${e.type}/${e.reason}`);

  it('records the last successful Backup in the status and exports it after a restart, its Operation pruned', async () => {
    const finishedAt = '2026-11-27T02:00:00Z';
    const backup: Operation = {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: { name: 'nightly-1', namespace: 'apps' },
      spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
      status: { phase: 'Succeeded', finishedAt },
    };
    const first = start();
    const { api } = first;
    first.instances.put(instance('shop', 'apps', { name: 'web' }));
    api.put(OPERATION.plural, backup);
    const recorded = { time: finishedAt, operation: 'nightly-1' };
    await vi.waitFor(() =>
      expect(api.instances.objects.get('apps/shop')?.status?.lastSuccessfulBackup).toEqual(recorded),
    );

    // The operator stops; a history limit prunes the Operation meanwhile; a new process starts afresh.
    await stop?.();
    api.resource(OPERATION.plural).remove('apps', 'nightly-1');
    const second = start(api);
    const series = `${BACKUP_METRICS.lastSuccessful}{namespace="apps",applicationinstance="shop"} ${Date.parse(finishedAt) / 1000}`;
    await vi.waitFor(async () => expect(await second.metrics.registry.metrics()).toContain(series));
    await second.andReconciled(() => second.controller.enqueue('apps/shop'));
    expect(api.instances.objects.get('apps/shop')?.status?.lastSuccessfulBackup).toEqual(recorded);
    expect(await second.metrics.registry.metrics()).toContain(series);
  });

  it('sets Ready from the release Secrets and announces only changes', async () => {
    const { instances, secrets, api, controller, andReconciled } = start();
    instances.put(instance('shop', 'apps', { name: 'web' }));
    await vi.waitFor(() => expect(reasons(api)).toEqual(['Warning/ReleaseNotFound']));

    secrets.put(releaseSecret('apps', 'web', 1, 'deployed'));
    await vi.waitFor(() =>
      expect(instances.objects.get('apps/shop')?.status?.conditions?.[0]).toMatchObject({
        status: 'True',
        reason: 'ReleaseDeployed',
      }),
    );
    await vi.waitFor(() =>
      expect(reasons(api)).toEqual(['Warning/ReleaseNotFound', 'Normal/ReleaseDeployed']),
    );
    expect(instances.objects.get('apps/shop')?.status?.release).toEqual({
      revision: 1,
      status: 'deployed',
      chartVersion: '1.0.0',
      appVersion: '1.0',
    });

    // Nothing new: reconciling again neither writes nor announces.
    const writes = api.statusWrites.length;
    await andReconciled(() => controller.enqueue('apps/shop'));
    // Same content, new resourceVersion: a real watch event for the key.
    await andReconciled(() => secrets.put(releaseSecret('apps', 'web', 1, 'deployed')));
    expect(api.statusWrites.length).toBe(writes);
    expect(reasons(api)).toEqual(['Warning/ReleaseNotFound', 'Normal/ReleaseDeployed']);

    secrets.put(releaseSecret('apps', 'web', 2, 'failed'));
    await vi.waitFor(() => expect(reasons(api).at(-1)).toBe('Warning/ReleaseFailed'));
    expect(instances.objects.get('apps/shop')?.status?.release?.revision).toBe(2);
  });

  it('warns once about an unreadable record and takes Ready from the newest readable one', async () => {
    const { instances, secrets, api, controller, andReconciled } = start();
    secrets.put(releaseSecret('apps', 'web', 1, 'deployed'));
    secrets.put(releaseSecret('apps', 'web', 2, 'deployed', true));
    instances.put(instance('shop', 'apps', { name: 'web' }));
    await vi.waitFor(() => expect(reasons(api)).toContain('Normal/ReleaseDeployed'));
    await vi.waitFor(() => expect(reasons(api)).toContain(`Warning/${RELEASE_RECORD_UNREADABLE}`));
    const warning = api.events.find((e) => e.reason === RELEASE_RECORD_UNREADABLE);
    expect(warning?.note).toContain('sh.helm.release.v1.web.v2');
    expect(warning?.note).not.toContain('garbage');
    expect(instances.objects.get('apps/shop')?.status?.release?.revision).toBe(1);

    await andReconciled(() => controller.enqueue('apps/shop'));
    expect(api.events.filter((e) => e.reason === RELEASE_RECORD_UNREADABLE)).toHaveLength(1);
  });

  it('ignores records of other releases and namespaces', async () => {
    const { instances, secrets, api, andReconciled } = start();
    await andReconciled(() => instances.put(instance('shop', 'apps', { name: 'web' })));
    const writes = api.statusWrites.length;
    secrets.put(releaseSecret('apps', 'db', 1, 'deployed'));
    secrets.put(releaseSecret('other', 'web', 1, 'deployed'));
    // A record of the right release makes the controller reconcile; the others above must not.
    await andReconciled(() => secrets.put(releaseSecret('apps', 'web', 1, 'failed')));
    expect(api.statusWrites.length).toBe(writes + 1);
    expect(instances.objects.get('apps/shop')?.status?.conditions?.[0]?.reason).toBe('ReleaseFailed');
    expect(reasons(api)).toEqual(['Warning/ReleaseNotFound', 'Warning/ReleaseFailed']);
  });

  it('a change to another release does not touch the instance', async () => {
    const { instances, secrets, api, andReconciled } = start();
    await andReconciled(() => instances.put(instance('shop', 'apps', { name: 'web' })));
    await andReconciled(() => instances.put(instance('blog', 'apps', { name: 'db' })));
    const writes = api.statusWrites.length;
    await andReconciled(() => secrets.put(releaseSecret('apps', 'db', 1, 'deployed')));
    expect(instances.objects.get('apps/blog')?.status?.conditions?.[0]?.reason).toBe('ReleaseDeployed');
    expect(instances.objects.get('apps/shop')?.status?.conditions?.[0]?.reason).toBe('ReleaseNotFound');
    expect(api.statusWrites.length).toBe(writes + 1);
    expect(instances.objects.get('apps/shop')?.status?.conditions?.[0]?.reason).toBe('ReleaseNotFound');
  });
  it('caches release Secrets as metadata and reads a payload only for a release an instance names, once per version', async () => {
    const { instances, secrets, andReconciled, reads, records, controller, cachedSecrets } = start();
    secrets.put(releaseSecret('apps', 'db', 1, 'deployed'));
    secrets.put(releaseSecret('other', 'web', 1, 'deployed'));
    await andReconciled(() => instances.put(instance('shop', 'apps', { name: 'web' })));
    expect(reads).toEqual([]);
    await andReconciled(() => secrets.put(releaseSecret('apps', 'web', 1, 'deployed')));
    expect(reads).toEqual(['apps/sh.helm.release.v1.web.v1']);
    await andReconciled(() => controller.enqueue('apps/shop'));
    expect(reads).toHaveLength(1);
    for (const cached of cachedSecrets.list()) {
      expect(Object.keys(cached).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
    }
    // A new revision is read; the Secret's deletion drops what was read from it.
    await andReconciled(() => secrets.put(releaseSecret('apps', 'web', 2, 'deployed')));
    expect(reads.at(-1)).toBe('apps/sh.helm.release.v1.web.v2');
    expect(records.size).toBe(2);
    await andReconciled(() => secrets.remove('apps', 'sh.helm.release.v1.web.v1'));
    expect(records.size).toBe(1);
  });

  it("refuses an instance naming another namespace's release: Ready=False/ReleaseNamespaceForbidden, nothing read", async () => {
    const { instances, secrets, api, reads } = start();
    secrets.put(releaseSecret('payroll', 'web', 1, 'deployed'));
    instances.put(instance('spy', 'apps', { name: 'web', namespace: 'payroll' }));
    await vi.waitFor(() => expect(reasons(api)).toEqual(['Warning/ReleaseNamespaceForbidden']));
    const status = instances.objects.get('apps/spy')?.status;
    expect(status?.conditions?.[0]?.message).toContain('spec.release.namespace');
    expect(status?.release).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('gives a release to the older of two instances naming it, and to the other once the older goes', async () => {
    const { instances, secrets, api } = start();
    secrets.put(releaseSecret('apps', 'web', 1, 'deployed'));
    const older = { ...instance('shop', 'apps', { name: 'web' }) };
    older.metadata.creationTimestamp = '2026-01-01T00:00:00Z' as unknown as Date;
    const younger = { ...instance('mine', 'apps', { name: 'web' }) };
    younger.metadata.creationTimestamp = '2026-01-02T00:00:00Z' as unknown as Date;
    instances.put(older);
    instances.put(younger);
    const ready = (name: string) => instances.objects.get(`apps/${name}`)?.status?.conditions?.[0];
    await vi.waitFor(() =>
      expect(ready('mine')).toMatchObject({ status: 'False', reason: 'ReleaseClaimed' }),
    );
    await vi.waitFor(() =>
      expect(ready('shop')).toMatchObject({ status: 'True', reason: 'ReleaseDeployed' }),
    );
    expect(ready('mine')?.message).toContain('already described by ApplicationInstance shop');
    expect(instances.objects.get('apps/mine')?.status?.release).toBeUndefined();
    expect(reasons(api)).toContain('Warning/ReleaseClaimed');

    instances.remove('apps', 'shop');
    await vi.waitFor(() =>
      expect(ready('mine')).toMatchObject({ status: 'True', reason: 'ReleaseDeployed' }),
    );
  });

  it('says Ready=False/ReleaseRecordUnreadable when no revision can be read, naming the Secret', async () => {
    const { instances, secrets, api } = start();
    secrets.put(releaseSecret('apps', 'web', 1, 'deployed', true));
    instances.put(instance('shop', 'apps', { name: 'web' }));
    await vi.waitFor(() =>
      expect(instances.objects.get('apps/shop')?.status?.conditions?.[0]).toMatchObject({
        status: 'False',
        reason: 'ReleaseRecordUnreadable',
      }),
    );
    const message = instances.objects.get('apps/shop')?.status?.conditions?.[0]?.message;
    expect(message).toContain('sh.helm.release.v1.web.v1');
    expect(message).not.toContain('garbage');
    // One Warning: the Ready change (the separate unreadable-record Event is for an older readable one).
    expect(reasons(api)).toEqual([`Warning/${RELEASE_RECORD_UNREADABLE}`]);
  });
});
