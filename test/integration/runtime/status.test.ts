// Status and child writes with server-side apply, and Events, against the shared real API server.
// The test installs its own small CRD (group runtimetest.vworkspace.io) with a status subresource,
// so it depends on nothing else in the project.

import {
  type Condition,
  EventRecorder,
  findCondition,
  isAlreadyExists,
  ObjectWriter,
  type RestClient,
  RestMapper,
  setCondition,
} from '@vworkspace/runtime';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, eventually, randomName, restClient } from './support.ts';

const GROUP = 'runtimetest.vworkspace.io';

const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { size: { type: 'integer' } } },
              status: {
                type: 'object',
                properties: {
                  phase: { type: 'string' },
                  observedGeneration: { type: 'integer', format: 'int64' },
                  conditions: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['type'],
                    items: {
                      type: 'object',
                      required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
                      properties: {
                        type: { type: 'string' },
                        status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
                        reason: { type: 'string' },
                        message: { type: 'string' },
                        observedGeneration: { type: 'integer', format: 'int64' },
                        lastTransitionTime: { type: 'string', format: 'date-time' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

interface Widget {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    generation?: number;
    resourceVersion?: string;
    managedFields?: { manager: string; operation: string; subresource?: string }[];
  };
  spec?: { size?: number };
  status?: { phase?: string; observedGeneration?: number; conditions?: Condition[] };
}

let client: RestClient;
let writer: ObjectWriter;

beforeAll(async () => {
  client = restClient(inject('kubeconfig'));
  try {
    await client.request({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: widgetCrd,
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await eventually('the Widget CRD is served', async () => {
    const crd = await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
      method: 'GET',
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${GROUP}`,
    });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
  });
  writer = new ObjectWriter(client, new RestMapper(client));
});

const widgetPath = (ns: string, name = '') =>
  `/apis/${GROUP}/v1/namespaces/${ns}/widgets${name ? `/${name}` : ''}`;

async function createWidget(ns: string): Promise<Widget> {
  return client.request<Widget>({
    method: 'POST',
    path: widgetPath(ns),
    body: {
      apiVersion: `${GROUP}/v1`,
      kind: 'Widget',
      metadata: { name: randomName('w') },
      spec: { size: 1 },
    },
  });
}

const read = (w: Widget) =>
  client.request<Widget>({ method: 'GET', path: widgetPath(w.metadata.namespace, w.metadata.name) });

/** One "reconcile": read, derive the status from what we conclude at `now`, apply it. */
async function reconcile(w: Widget, ready: boolean, now: number): Promise<Widget> {
  const cur = await read(w);
  const gen = cur.metadata.generation ?? 0;
  const conditions = setCondition(
    cur.status?.conditions,
    ready
      ? { type: 'Ready', status: 'True', reason: 'WidgetReady', message: 'all good', observedGeneration: gen }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'WidgetBroken',
          message: 'fix the widget',
          observedGeneration: gen,
        },
    now,
  );
  return writer.applyStatus<Widget>(cur, {
    phase: ready ? 'Ready' : 'Broken',
    observedGeneration: gen,
    conditions,
  });
}

describe('status writes with server-side apply', () => {
  it('keeps lastTransitionTime (and the resourceVersion) when nothing changed; moves it when status changes', async () => {
    const ns = await createNamespace(client);
    const w = await createWidget(ns);
    const t0 = Date.UTC(2025, 0, 1, 12, 0, 0);

    const first = await reconcile(w, true, t0);
    const ready1 = findCondition(first.status?.conditions, 'Ready')!;
    expect(ready1).toMatchObject({ status: 'True', reason: 'WidgetReady', observedGeneration: 1 });
    expect(ready1.lastTransitionTime).toBe('2025-01-01T12:00:00Z');

    // The same conclusion an hour later: an identical apply, which the server treats as a no-op.
    const second = await reconcile(w, true, t0 + 3_600_000);
    expect(findCondition(second.status?.conditions, 'Ready')!.lastTransitionTime).toBe(
      '2025-01-01T12:00:00Z',
    );
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    // And the skip-if-unchanged path makes no request at all.
    expect(await writer.applyStatusIfChanged(second, second.status)).toBe(false);

    // Someone edits the spec: generation moves, Ready stays True, its transition time stays.
    await client.request({
      method: 'PATCH',
      path: widgetPath(ns, w.metadata.name),
      body: { spec: { size: 2 } },
      contentType: 'application/merge-patch+json',
    });
    const third = await reconcile(w, true, t0 + 7_200_000);
    expect(findCondition(third.status?.conditions, 'Ready')).toMatchObject({
      observedGeneration: 2,
      lastTransitionTime: '2025-01-01T12:00:00Z',
    });
    expect(third.status?.observedGeneration).toBe(2);

    // A real change of status moves lastTransitionTime.
    const fourth = await reconcile(w, false, t0 + 10_800_000);
    expect(findCondition(fourth.status?.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WidgetBroken',
      lastTransitionTime: '2025-01-01T15:00:00Z',
    });

    const stored = await read(w);
    expect(stored.spec).toEqual({ size: 2 });
    expect(stored.metadata.managedFields).toContainEqual(
      expect.objectContaining({ manager: 'vworkspace-operator', operation: 'Apply', subresource: 'status' }),
    );
  });
});

describe('server-side apply of children', () => {
  it('creates, takes fields back from another manager with force, and drops fields it stops applying', async () => {
    const ns = await createNamespace(client);
    const cm = (data: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'child',
        namespace: ns,
        labels: { 'app.kubernetes.io/managed-by': 'vworkspace-operator' },
      },
      data,
    });
    const path = `/api/v1/namespaces/${ns}/configmaps/child`;
    const created = await writer.apply(cm({ a: '1', b: '1' }));
    expect((created as { data?: object }).data).toEqual({ a: '1', b: '1' });

    // Another actor changes a field we own.
    await client.request({
      method: 'PATCH',
      path,
      query: { fieldManager: 'someone-else' },
      body: { data: { a: 'tampered', c: 'theirs' } },
      contentType: 'application/merge-patch+json',
    });
    // Without force, SSA reports the conflict; with force (the default) we own it again.
    await expect(writer.apply(cm({ a: '1', b: '1' }), { force: false })).rejects.toMatchObject({ code: 409 });
    // We stop applying `b`: SSA removes it; `c` belongs to someone else and stays.
    await writer.apply(cm({ a: '1' }));
    const got = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path });
    expect(got.data).toEqual({ a: '1', c: 'theirs' });
  });
});

describe('events', () => {
  it('records an Event on the object and turns a repeat into a series on the real API', async () => {
    const ns = await createNamespace(client);
    const w = await createWidget(ns);
    const rec = new EventRecorder({ client, reportingInstance: 'vworkspace-operator-test' });
    await rec.event(w, 'Warning', 'WidgetBroken', 'the widget is broken: fix it');
    await rec.event(w, 'Warning', 'WidgetBroken', 'the widget is broken: fix it');
    await rec.event(w, 'Normal', 'WidgetReady', 'fixed');
    const list = await client.request<{
      items: {
        reason: string;
        note: string;
        reportingController: string;
        regarding: { name: string; kind: string; uid?: string };
        series?: { count: number };
      }[];
    }>({ method: 'GET', path: `/apis/events.k8s.io/v1/namespaces/${ns}/events` });
    expect(list.items).toHaveLength(2);
    const broken = list.items.find((e) => e.reason === 'WidgetBroken')!;
    expect(broken).toMatchObject({
      note: 'the widget is broken: fix it',
      reportingController: 'vworkspace-operator',
      regarding: { name: w.metadata.name, kind: 'Widget' },
      series: { count: 2 },
    });
    // kubectl describe reads core/v1 Events: the same objects.
    const core = await client.request<{ items: { involvedObject: { name: string } }[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
    });
    expect(core.items.map((e) => e.involvedObject.name)).toEqual([w.metadata.name, w.metadata.name]);
  });
});
