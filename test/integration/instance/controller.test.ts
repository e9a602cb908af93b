// The ApplicationInstance controller against the real API server, with release records written by
// the real helm CLI: Ready and status.release follow install, a failed upgrade, an unreadable
// record and uninstall; a reconcile that changes nothing writes nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  EventRecorder,
  InformerFactory,
  type KubeClient,
  type KubeRequest,
  Manager,
  RestMapper,
  RuntimeMetrics,
  resourcePath,
} from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../../../operator/src/api/index.ts';
import {
  INSTANCE_CONTROLLER_NAME,
  setupInstanceController,
} from '../../../operator/src/instance/controller.ts';
import { RELEASE_RECORD_UNREADABLE } from '../../../operator/src/instance/reconciler.ts';
import { testClient } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

/** Counts the status writes the operator makes (PATCH …/status), passing everything through. */
class CountingClient implements KubeClient {
  statusWrites = 0;
  readonly #inner: KubeClient;
  constructor(inner: KubeClient) {
    this.#inner = inner;
  }
  request<T>(req: KubeRequest): Promise<T> {
    if (req.method === 'PATCH' && req.path.endsWith('/status')) this.statusWrites++;
    return this.#inner.request<T>(req);
  }
}

interface EventItem {
  type?: string;
  reason?: string;
  note?: string;
  regarding?: { name?: string; kind?: string };
}

describe('ApplicationInstance controller', () => {
  const kubeconfig = inject('kubeconfig');
  const kc = adminKubeConfig();
  const raw = testClient(kc);
  const client = new CountingClient(raw);
  const metrics = new RuntimeMetrics();
  const manager = new Manager({
    leaderElection: false,
    metricsPort: false,
    probePort: false,
    metrics,
    cache: new InformerFactory({ kc, client: raw }),
  });
  let running: Promise<void>;
  let ns: string;

  beforeAll(async () => {
    ns = await createNamespace(kc, 'ai');
    setupInstanceController(manager, {
      client,
      mapper: new RestMapper(raw),
      events: new EventRecorder({ client: raw }),
    });
    running = manager.start();
  });

  afterAll(async () => {
    await manager.stop();
    await running;
  });

  const instancePath = (name?: string) =>
    resourcePath(
      {
        group: APPLICATION_INSTANCE.group,
        version: APPLICATION_INSTANCE.version,
        plural: APPLICATION_INSTANCE.plural,
        namespace: ns,
      },
      name,
    );
  const getInstance = () => raw.request<ApplicationInstance>({ method: 'GET', path: instancePath('shop') });
  const ready = (i: ApplicationInstance) => i.status?.conditions?.find((c) => c.type === 'Ready');
  const readyIs = (status: string, reason: string) => async () => {
    const i = await getInstance();
    const c = ready(i);
    return c?.status === status && c.reason === reason ? i : undefined;
  };
  const events = async () =>
    (
      await raw.request<{ items: EventItem[] }>({
        method: 'GET',
        path: resourcePath({ group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: ns }),
      })
    ).items.filter((e) => e.regarding?.kind === 'ApplicationInstance' && e.regarding.name === 'shop');
  const eventWith = (type: string, reason: string) => async () =>
    (await events()).find((e) => e.type === type && e.reason === reason);
  const reconciles = async () => {
    const m = await metrics.reconcileTotal.get();
    return m.values
      .filter((v) => v.labels.controller === INSTANCE_CONTROLLER_NAME)
      .reduce((n, v) => n + v.value, 0);
  };

  it('follows the Helm release record from absent to deployed, failed and uninstalled', async () => {
    await raw.request({
      method: 'POST',
      path: instancePath(),
      body: {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: { name: 'shop', namespace: ns },
        spec: { appRef: { catalogId: 'tiny' }, release: { name: 'web' } },
      },
    });

    // 1. No release yet.
    let inst = await eventually('Ready=False/ReleaseNotFound', readyIs('False', 'ReleaseNotFound'));
    expect(inst.status?.release).toBeUndefined();
    expect(inst.status?.observedGeneration).toBe(inst.metadata.generation);
    await eventually('a ReleaseNotFound Warning event', eventWith('Warning', 'ReleaseNotFound'));

    // 2. helm install: the Secret watch alone brings the instance to Ready.
    await helm(kubeconfig, ['install', 'web', TINY_CHART, '-n', ns]);
    inst = await eventually('Ready=True/ReleaseDeployed', readyIs('True', 'ReleaseDeployed'));
    expect(inst.status?.release).toEqual({
      revision: 1,
      status: 'deployed',
      chartVersion: '1.0.0',
      appVersion: '1.0',
    });
    expect(ready(inst)?.observedGeneration).toBe(inst.metadata.generation);
    const deployedEvent = await eventually(
      'a ReleaseDeployed Normal event',
      eventWith('Normal', 'ReleaseDeployed'),
    );
    expect(deployedEvent.note).toContain('revision 1');

    // 3. A reconcile that finds nothing new writes nothing.
    await eventually('the controller to go quiet', async () => {
      const before = await reconciles();
      await sleep(1000);
      return (await reconciles()) === before;
    });
    const rv = (await getInstance()).metadata.resourceVersion;
    const writes = client.statusWrites;
    const before = await reconciles();
    // Touch the instance's release Secret in an irrelevant way: a real watch event for this key.
    await raw.request({
      method: 'PATCH',
      path: resourcePath(
        { group: '', version: 'v1', plural: 'secrets', namespace: ns },
        'sh.helm.release.v1.web.v1',
      ),
      body: { metadata: { annotations: { 'test.vworkspace.io/touched': 'yes' } } },
      contentType: 'application/merge-patch+json',
    });
    await eventually('the forced reconcile', async () => (await reconciles()) > before);
    expect(client.statusWrites).toBe(writes);
    expect((await getInstance()).metadata.resourceVersion).toBe(rv);

    // 4. A failing upgrade: revision 2 is recorded as failed.
    await expect(
      helm(kubeconfig, ['upgrade', 'web', TINY_CHART, '-n', ns, '--set', 'broken=true']),
    ).rejects.toThrow();
    inst = await eventually('Ready=False/ReleaseFailed', readyIs('False', 'ReleaseFailed'));
    expect(inst.status?.release).toMatchObject({ revision: 2, status: 'failed' });
    expect(ready(inst)?.message).toContain('helm rollback');
    await eventually('a ReleaseFailed Warning event', eventWith('Warning', 'ReleaseFailed'));

    // 5. An unreadable newer record: a Warning event, Ready from the newest readable revision.
    await raw.request({
      method: 'POST',
      path: resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace: ns }),
      body: {
        metadata: {
          name: 'sh.helm.release.v1.web.v9',
          labels: { owner: 'helm', name: 'web', version: '9', status: 'deployed' },
        },
        type: 'helm.sh/release.v1',
        data: { release: Buffer.from('not a release').toString('base64') },
      },
    });
    const warning = await eventually(
      'an unreadable-record Warning',
      eventWith('Warning', RELEASE_RECORD_UNREADABLE),
    );
    expect(warning.note).toContain('sh.helm.release.v1.web.v9');
    inst = await getInstance();
    expect(ready(inst)?.reason).toBe('ReleaseFailed');
    expect(inst.status?.release?.revision).toBe(2);

    // 6. helm uninstall removes the records (the broken one is ours to remove).
    await raw.request({
      method: 'DELETE',
      path: resourcePath(
        { group: '', version: 'v1', plural: 'secrets', namespace: ns },
        'sh.helm.release.v1.web.v9',
      ),
    });
    await helm(kubeconfig, ['uninstall', 'web', '-n', ns]);
    inst = await eventually('Ready=False/ReleaseNotFound again', readyIs('False', 'ReleaseNotFound'));
    expect(inst.status?.release).toBeUndefined();
  });
});
