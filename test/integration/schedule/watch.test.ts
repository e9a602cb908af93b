// The WatchOperation controller on the real API server: a trigger label fires once and is removed when
// the Operation is marked finished; a chart version change fires; a status-only update does not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  type WatchOperation,
  watchProcessedAnnotation,
} from '../../../operator/src/api/index.ts';
import {
  EventRecorder,
  FakeClock,
  Manager,
  ObjectWriter,
  RestClient,
  RestMapper,
  RuntimeMetrics,
  silentLogger,
} from '../../../operator/src/runtime/index.ts';
import {
  createWatchController,
  WATCH_CONTROLLER_NAME,
} from '../../../operator/src/schedule/watch-controller.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { eventually, finishOperation, kinds, listOperations, mergePatch, pathOf } from './support.ts';

const LABEL = 'maintenance.example.com/backup-now';
const VERSION = 'spec.appRef.chart.version';

describe('WatchOperation controller', () => {
  const kc = adminKubeConfig();
  const raw = new RestClient(kc);
  const metrics = new RuntimeMetrics();
  const clock = new FakeClock(Date.now());
  const manager = new Manager({ leaderElection: false, metricsPort: false, probePort: false, metrics });
  let running: Promise<void>;
  let ns: string;

  beforeAll(async () => {
    ns = await createNamespace(kc, 'watch');
    const w = createWatchController({
      kc,
      client: raw,
      writer: new ObjectWriter(raw, new RestMapper(raw)),
      events: new EventRecorder({ client: raw }),
      logger: silentLogger,
      metrics,
      clock,
    });
    for (const i of w.informers) manager.addInformer(i);
    manager.addController(w.controller);
    running = manager.start();
  });

  afterAll(async () => {
    await raw
      .request({ method: 'DELETE', path: pathOf(kinds.watch, ns, 'pre-upgrade') })
      .catch(() => undefined);
    await manager.stop();
    await running;
  });

  const instancePath = (name?: string) => pathOf(kinds.instance, ns, name);
  const getInstance = () => raw.request<ApplicationInstance>({ method: 'GET', path: instancePath('shop') });
  const getWatch = () =>
    raw.request<WatchOperation>({ method: 'GET', path: pathOf(kinds.watch, ns, 'pre-upgrade') });
  const ops = () => listOperations(raw, ns);
  const reconciles = async () =>
    (await metrics.reconcileTotal.get()).values
      .filter((v) => v.labels.controller === WATCH_CONTROLLER_NAME)
      .reduce((n, v) => n + v.value, 0);
  /** Makes the controller look again (an unrelated label change) and waits until it has. */
  const poke = async (n: number) => {
    const before = await reconciles();
    await mergePatch(raw, instancePath('shop'), { metadata: { labels: { poke: String(n) } } });
    await eventually('a reconcile after the poke', async () => (await reconciles()) > before);
  };

  it('fires once on a label, removes it when the Operation finished, fires on a chart version change, not on status', async () => {
    await raw.request({
      method: 'POST',
      path: instancePath(),
      body: {
        apiVersion: kinds.instance.apiVersion,
        kind: kinds.instance.kind,
        metadata: { name: 'shop', namespace: ns, labels: { tier: 'prod' } },
        spec: {
          appRef: {
            catalogId: 'shop',
            chart: {
              sourceType: 'oci',
              url: 'oci://registry.example.com/charts',
              name: 'shop',
              version: '1.0.0',
            },
          },
          release: { name: 'shop' },
        },
      },
    });
    await raw.request({
      method: 'POST',
      path: pathOf(kinds.watch, ns),
      body: {
        apiVersion: kinds.watch.apiVersion,
        kind: kinds.watch.kind,
        metadata: { name: 'pre-upgrade', namespace: ns },
        spec: {
          selector: { matchLabels: { tier: 'prod' } },
          triggers: { labels: [LABEL], fieldPaths: [VERSION] },
          concurrencyPolicy: 'Forbid',
          operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
        },
      },
    });
    // Baseline recorded: nothing fires for what was already there.
    await eventually('baseline', async () => (await getWatch()).status?.targets?.[0]?.fieldsHash);
    expect(await ops()).toEqual([]);

    // 1. The label appears: one Operation for this instance, the instance is marked processed.
    await mergePatch(raw, instancePath('shop'), { metadata: { labels: { [LABEL]: 'now' } } });
    const [byLabel] = await eventually('label Operation', async () => {
      const list = await ops();
      return list.length === 1 ? list : undefined;
    });
    expect(byLabel?.spec.targetRef).toEqual({ name: 'shop' });
    expect(byLabel?.metadata.annotations?.[ANNOTATION_TRIGGER]).toBe(`label:${LABEL}`);
    await eventually(
      'processed mark',
      async () =>
        (await getInstance()).metadata.annotations?.[watchProcessedAnnotation('pre-upgrade')] === LABEL,
    );
    // Looking again while the label is still there fires nothing more.
    await poke(1);
    await poke(2);
    expect(await ops()).toHaveLength(1);

    // 2. The Operation is marked finished: the label and the mark go, nothing new fires.
    await finishOperation(raw, ns, byLabel?.metadata.name ?? '', 'Succeeded');
    const cleaned = await eventually('label removed', async () => {
      const i = await getInstance();
      return i.metadata.labels?.[LABEL] === undefined ? i : undefined;
    });
    expect(cleaned.metadata.annotations?.[watchProcessedAnnotation('pre-upgrade')]).toBeUndefined();
    await poke(3);
    expect(await ops()).toHaveLength(1);
    const afterLabel = await eventually('status settled', async () => {
      const s = (await getWatch()).status;
      return s?.lastSuccessfulTime && !s.active ? s : undefined;
    });
    expect(afterLabel.watchingResources).toBe(1);

    // 3. A status-only update of the instance never fires.
    await raw.request({
      method: 'PATCH',
      path: pathOf(kinds.instance, ns, 'shop', 'status'),
      body: { status: { observedGeneration: 7 } },
      contentType: 'application/merge-patch+json',
    });
    await poke(4);
    expect(await ops()).toHaveLength(1);

    // 4. The chart version changes: a pre-upgrade Operation for this instance.
    await mergePatch(raw, instancePath('shop'), { spec: { appRef: { chart: { version: '1.1.0' } } } });
    const byField = await eventually('field Operation', async () => {
      const list = await ops();
      return list.length === 2 ? list.find((o) => o.metadata.name !== byLabel?.metadata.name) : undefined;
    });
    expect(byField.metadata.annotations?.[ANNOTATION_TRIGGER]).toBe(`field:${VERSION}`);
    expect(byField.spec.targetRef).toEqual({ name: 'shop' });
    await poke(5);
    expect(await ops()).toHaveLength(2);

    // 5. Forbid: a change while it runs waits as pendingTrigger and runs after it finished.
    await mergePatch(raw, instancePath('shop'), { spec: { appRef: { chart: { version: '1.2.0' } } } });
    await eventually(
      'pending',
      async () => (await getWatch()).status?.targets?.[0]?.pendingTrigger === `field:${VERSION}`,
    );
    expect(await ops()).toHaveLength(2);
    await finishOperation(raw, ns, byField.metadata.name ?? '', 'Failed');
    await eventually('pending runs', async () => (await ops()).length === 3);
    await eventually('pending cleared', async () => !(await getWatch()).status?.targets?.[0]?.pendingTrigger);
    await poke(6);
    expect(await ops()).toHaveLength(3);
  });
});
