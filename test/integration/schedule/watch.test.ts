// The WatchOperation controller on the real API server: a trigger label fires once and is removed when
// the Operation is marked finished; a chart version change fires; a status-only update does not.

import { FakeClock, formatTime } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  type WatchOperation,
  type WatchOperationSpec,
  watchProcessedAnnotation,
} from '../../../operator/src/api/index.ts';
import { WATCH_CONTROLLER_NAME } from '../../../operator/src/schedule/watch-controller.ts';
import { fieldsHash, WATCH_EVENT } from '../../../operator/src/schedule/watch-decide.ts';
import { testClient } from '../../support/clients.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import {
  create,
  eventsAbout,
  eventually,
  finishOperation,
  getObject,
  instanceObject,
  kinds,
  listOperations,
  mergePatch,
  pathOf,
  type Schedulers,
  startSchedulers,
  watchObject,
} from './support.ts';

const LABEL = 'maintenance.example.com/backup-now';
const VERSION = 'spec.appRef.chart.version';
const MINUTE = 60_000;

describe('WatchOperation controller', () => {
  const kc = adminKubeConfig();
  const raw = testClient(kc);
  const clock = new FakeClock(Date.now());
  let operator: Schedulers;
  let ns: string;
  const watches: { ns: string; name: string }[] = [];

  beforeAll(async () => {
    ns = await createNamespace(kc, 'watch');
    operator = startSchedulers(kc, clock, { cron: false, watch: true });
  });

  afterAll(async () => {
    for (const w of watches)
      await raw.request({ method: 'DELETE', path: pathOf(kinds.watch, w.ns, w.name) }).catch(() => undefined);
    await operator.stop();
  });

  /** Creates the WatchOperation (deleted after the file) in `namespace`. */
  const createWatch = async (
    namespace: string,
    name: string,
    spec: Partial<WatchOperationSpec> & Pick<WatchOperationSpec, 'triggers'>,
  ) => {
    await create(raw, watchObject(namespace, name, spec));
    watches.push({ ns: namespace, name });
  };
  const instancePath = (name?: string) => pathOf(kinds.instance, ns, name);
  const getInstance = (namespace = ns, name = 'shop') =>
    getObject<ApplicationInstance>(raw, kinds.instance, namespace, name);
  const getWatch = (namespace = ns, name = 'pre-upgrade') =>
    getObject<WatchOperation>(raw, kinds.watch, namespace, name);
  const ops = (namespace = ns) => listOperations(raw, namespace);
  const reconciles = async () =>
    (await operator.metrics.reconcileTotal.get()).values
      .filter((v) => v.labels.controller === WATCH_CONTROLLER_NAME)
      .reduce((n, v) => n + v.value, 0);
  /** Makes the controller look again (an unrelated label change) and waits until it has. */
  const poke = async (n: number, namespace = ns) => {
    const before = await reconciles();
    await mergePatch(raw, pathOf(kinds.instance, namespace, 'shop'), {
      metadata: { labels: { poke: String(n) } },
    });
    await eventually('a reconcile after the poke', async () => (await reconciles()) > before);
  };

  it('fires once on a label, removes it when the Operation finished, fires on a chart version change, not on status', async () => {
    await create(raw, instanceObject(ns, 'shop', { labels: { tier: 'prod' } }));
    await createWatch(ns, 'pre-upgrade', {
      triggers: { labels: [LABEL], fieldPaths: [VERSION] },
      concurrencyPolicy: 'Forbid',
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

  it('Forbid coalesces changes that arrive while one runs into one pending trigger, the latest, and runs it afterwards', async () => {
    const space = await createNamespace(kc, 'watch');
    const path = pathOf(kinds.instance, space, 'shop');
    await create(raw, instanceObject(space, 'shop', { labels: { tier: 'prod' } }));
    await createWatch(space, 'coalesce', {
      triggers: { labels: [LABEL], fieldPaths: [VERSION] },
      concurrencyPolicy: 'Forbid',
    });
    const target = async () => (await getWatch(space, 'coalesce')).status?.targets?.[0];
    const setVersion = (version: string) =>
      mergePatch(raw, path, { spec: { appRef: { chart: { version } } } });
    /** Waits until the WatchOperation has looked at the instance as it is now. */
    const seen = async () => {
      const hash = fieldsHash(await getInstance(space), [VERSION]);
      return eventually('change seen', async () => {
        const t = await target();
        return t?.fieldsHash === hash ? t : undefined;
      });
    };
    await seen();

    await clock.advance(MINUTE);
    await setVersion('1.1.0');
    const [first] = await eventually('first Operation', async () => {
      const list = await ops(space);
      return list.length === 1 ? list : undefined;
    });
    const firstName = first?.metadata.name ?? '';

    // While it runs: two more version changes, then the trigger label. The latest one is kept.
    for (const version of ['1.2.0', '1.3.0']) {
      await clock.advance(MINUTE);
      await setVersion(version);
      expect((await seen())?.pendingTrigger).toBe(`field:${VERSION}`);
    }
    await clock.advance(MINUTE);
    await mergePatch(raw, path, { metadata: { labels: { [LABEL]: 'now' } } });
    const pending = await eventually('label pending', async () => {
      const t = await target();
      return t?.pendingTrigger === `label:${LABEL}` ? t : undefined;
    });
    expect(pending.pendingSince).toBe(formatTime(clock.now()));
    expect(await ops(space)).toHaveLength(1);
    // Events are recorded after the status write.
    await eventually('TriggerPending event for the label', async () =>
      (await eventsAbout(raw, space, 'WatchOperation', 'coalesce')).some(
        (e) =>
          e.reason === WATCH_EVENT.TriggerPending &&
          e.note?.startsWith(`label:${LABEL} on shop waits for ${firstName}`),
      ),
    );

    // It finishes: exactly one Operation, for the latest trigger, on the instance as it is now.
    await clock.advance(MINUTE);
    await finishOperation(raw, space, firstName, 'Succeeded', clock.now());
    const second = await eventually('the pending trigger runs', async () => {
      const list = await ops(space);
      return list.length === 2 ? list.find((o) => o.metadata.name !== firstName) : undefined;
    });
    expect(second.metadata.annotations?.[ANNOTATION_TRIGGER]).toBe(`label:${LABEL}`);
    expect(second.spec.targetRef).toEqual({ name: 'shop' });
    await eventually('pending cleared', async () => {
      const t = await target();
      return t && t.pendingTrigger === undefined && t.lastTrigger === `label:${LABEL}`;
    });
    await poke(1, space);
    expect(await ops(space)).toHaveLength(2);

    // When that one finishes the label goes, and nothing more runs: the version changes were in it.
    await clock.advance(MINUTE);
    await finishOperation(raw, space, second.metadata.name ?? '', 'Succeeded', clock.now());
    await eventually(
      'label removed',
      async () => (await getInstance(space)).metadata.labels?.[LABEL] === undefined,
    );
    await poke(2, space);
    expect(await ops(space)).toHaveLength(2);
  });

  it('history limits delete the oldest finished Operations across instances, never a running one', async () => {
    const space = await createNamespace(kc, 'watch');
    const instances = ['a', 'b', 'c', 'd', 'e'];
    for (const name of instances)
      await create(raw, instanceObject(space, name, { labels: { tier: 'prod' } }));
    await createWatch(space, 'pruner', {
      triggers: { labels: [LABEL] },
      successfulHistoryLimit: 1,
      failedHistoryLimit: 1,
    });
    await eventually(
      'watching',
      async () => (await getWatch(space, 'pruner')).status?.watchingResources === 5,
    );
    for (const name of instances)
      await mergePatch(raw, pathOf(kinds.instance, space, name), {
        metadata: { labels: { [LABEL]: 'now' } },
      });
    const byTarget = await eventually('one Operation per instance', async () => {
      const list = await ops(space);
      return list.length === 5
        ? new Map(list.map((o) => [o.spec.targetRef.name, o.metadata.name ?? '']))
        : undefined;
    });
    const op = (target: string) => byTarget.get(target) ?? '';
    const targetsLeft = async () => (await ops(space)).map((o) => o.spec.targetRef.name).sort();

    // a keeps running; b and c succeed, d fails, e is cancelled, one after the other.
    const finish = async (target: string, phase: string, expected: string[]) => {
      await clock.advance(MINUTE);
      await finishOperation(raw, space, op(target), phase, clock.now());
      await eventually(`${target} ${phase}: Operations of ${expected.join(', ')} left`, async () =>
        JSON.stringify(await targetsLeft()) === JSON.stringify(expected) ? true : undefined,
      );
    };
    await finish('b', 'Succeeded', ['a', 'b', 'c', 'd', 'e']);
    await finish('c', 'Succeeded', ['a', 'c', 'd', 'e']);
    await finish('d', 'Failed', ['a', 'c', 'd', 'e']);
    await finish('e', 'Cancelled', ['a', 'c', 'e']);
    const status = await eventually('status settled', async () => {
      const s = (await getWatch(space, 'pruner')).status;
      return s?.active?.length === 1 ? s : undefined;
    });
    expect(status.active).toEqual([{ name: op('a'), target: 'a' }]);
  });
});
