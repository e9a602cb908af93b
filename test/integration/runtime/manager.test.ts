// The pieces together on the shared real API server: a Manager that wins a real Lease, starts an
// informer and a controller, reconciles a Widget to Ready through the status subresource, serves
// /readyz and /metrics, and on stop releases the Lease.

import {
  createInformer,
  EventRecorder,
  isAlreadyExists,
  Manager,
  ObjectWriter,
  RestMapper,
  setCondition,
} from '@vworkspace/runtime';
import { describe, expect, inject, it } from 'vitest';
import { createNamespace, eventually, loadKubeConfig, randomName, restClient } from './support.ts';

const GROUP = 'runtimetest.vworkspace.io';

interface Gadget {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; generation?: number };
  status?: { observedGeneration?: number; conditions?: ReturnType<typeof setCondition> };
}

const gadgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `gadgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
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
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

describe('Manager on a real API server', () => {
  it('leads, reconciles to Ready, reports ready and metrics, and releases the Lease on stop', async () => {
    const kc = loadKubeConfig(inject('kubeconfig'));
    const client = restClient(inject('kubeconfig'));
    try {
      await client.request({
        method: 'POST',
        path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
        body: gadgetCrd,
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const ns = await createNamespace(client);
    await eventually('Gadgets served', () =>
      client.request({ method: 'GET', path: `/apis/${GROUP}/v1/namespaces/${ns}/gadgets` }).then(() => true),
    );

    const writer = new ObjectWriter(client, new RestMapper(client));
    const events = new EventRecorder({ client });
    const informer = createInformer<Gadget>(kc, {
      group: GROUP,
      version: 'v1',
      plural: 'gadgets',
      namespace: ns,
    });
    const mgr = new Manager({
      client,
      metricsPort: 0,
      probePort: 0,
      bindHost: '127.0.0.1',
      leaderElection: {
        namespace: ns,
        name: 'runtime-manager',
        leaseDurationMs: 4_000,
        renewDeadlineMs: 3_000,
        retryPeriodMs: 500,
      },
    });
    mgr.addInformer(informer);
    const controller = mgr.newController({
      name: 'gadget',
      reconcile: async (ctx) => {
        const g = informer.get(ctx.name, ctx.namespace);
        if (!g) return undefined;
        const gen = g.metadata?.generation ?? 0;
        const conditions = setCondition(
          g.status?.conditions,
          { type: 'Ready', status: 'True', reason: 'GadgetReady', message: 'ready', observedGeneration: gen },
          Date.now(),
        );
        const wrote = await writer.applyStatusIfChanged(
          {
            apiVersion: `${GROUP}/v1`,
            kind: 'Gadget',
            metadata: { name: ctx.name, namespace: ns },
            status: g.status,
          },
          { observedGeneration: gen, conditions },
        );
        if (wrote) await events.event(g, 'Normal', 'GadgetReady', 'the gadget is ready');
        return undefined;
      },
    });
    controller.watch(informer);
    const done = mgr.start();

    await mgr.elected;
    const name = randomName('g');
    await client.request({
      method: 'POST',
      path: `/apis/${GROUP}/v1/namespaces/${ns}/gadgets`,
      body: { apiVersion: `${GROUP}/v1`, kind: 'Gadget', metadata: { name }, spec: { x: 1 } },
    });
    const ready = await eventually('the gadget is Ready', async () => {
      const g = await client.request<Gadget>({
        method: 'GET',
        path: `/apis/${GROUP}/v1/namespaces/${ns}/gadgets/${name}`,
      });
      return g.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') ? g : undefined;
    });
    expect(ready.status?.observedGeneration).toBe(1);

    const probes = mgr.ports.probes!;
    expect((await fetch(`http://127.0.0.1:${probes}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${mgr.ports.metrics}/metrics`)).text();
    expect(metrics).toMatch(
      /controller_runtime_reconcile_total\{controller="gadget",result="success"\} [1-9]/,
    );
    expect(metrics).toContain('leader_election_master_status{name="runtime-manager"} 1');

    await mgr.stop();
    await done;
    const lease = await client.request<{ spec: { holderIdentity?: string } }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/runtime-manager`,
    });
    expect(lease.spec.holderIdentity ?? '').toBe('');
  });
});
