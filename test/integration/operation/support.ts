// Helpers for the Operation controller's integration tests: an in-process controller (Manager with
// leader election off and no ports), object helpers on the real API server, and test templates that run
// every type on the `workflow` engine so a fake adapter (ConfigMap children) can stand in for it.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  type Clock,
  type Controller,
  EventRecorder,
  InformerFactory,
  type KubeClient,
  Manager,
  ObjectWriter,
  PATCH_TYPES,
  RestMapper,
  RuntimeMetrics,
  resourcePath,
  silentLogger,
} from '@vworkspace/runtime';
import { APPLICATION_INSTANCE, OPERATION } from '../../../operator/src/api/constants.ts';
import type { Engine, OperationType } from '../../../operator/src/api/enums.ts';
import type { Operation, OperationSpec } from '../../../operator/src/api/operation.ts';
import { standardPreconditions, type Template } from '../../../operator/src/catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../../../operator/src/catalog/templates/index.ts';
import type { EngineAdapter } from '../../../operator/src/engines/types.ts';
import { setupInstanceController } from '../../../operator/src/instance/controller.ts';
import { setupOperationController, type TemplateSource } from '../../../operator/src/operation/controller.ts';
import { testClient } from '../../support/clients.ts';

import { eventually } from '../runtime/support.ts';

export { eventually };

/** Test templates: <type>/workflow for every type but Runbook (the built-in covers it). */
export const FAKE_TEMPLATES: Template[] = (['Backup', 'Restore', 'Upgrade'] as OperationType[]).map(
  (type) => ({
    name: `fake-${type.toLowerCase()}`,
    type,
    engine: 'workflow',
    inputSchema: { type: 'object', properties: { note: { type: 'string' } } },
    rbacProfile: 'runbook.workflow',
    preconditions: standardPreconditions(),
  }),
);

export interface RunningController {
  manager: Manager;
  controller: Controller;
  metrics: RuntimeMetrics;
  stop(): Promise<void>;
}

/** A Manager with leader election off, no ports, and a shared cache of its own. */
function inProcessManager(kc: KubeConfig, clock?: Clock) {
  const client = testClient(kc);
  const metrics = new RuntimeMetrics();
  const manager = new Manager({
    leaderElection: false,
    metricsPort: false,
    probePort: false,
    metrics,
    cache: new InformerFactory({ kc, client, ...(clock ? { clock } : {}) }),
  });
  return { client, metrics, manager };
}

export function startController(
  kc: KubeConfig,
  adapterFor: (e: Engine) => EngineAdapter | undefined,
  opts: {
    veleroNamespace?: string;
    graceMs?: number;
    engineRecheckMs?: number;
    clock?: Clock;
    templates?: TemplateSource;
    /** The helm CLI runner image (RELATED_IMAGE_HELM) for the helm engine. */
    helmImage?: string;
  } = {},
): RunningController {
  const { client, metrics, manager } = inProcessManager(kc, opts.clock);
  const mapper = new RestMapper(client);
  const ctl = setupOperationController(manager, {
    kc,
    client,
    mapper,
    writer: new ObjectWriter(client, mapper),
    events: new EventRecorder({ client }),
    logger: silentLogger,
    metrics,
    adapterFor,
    templates: opts.templates ?? { templates: () => [...BUILTIN_TEMPLATES, ...FAKE_TEMPLATES] },
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.veleroNamespace ? { veleroNamespace: opts.veleroNamespace } : {}),
    ...(opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}),
    ...(opts.engineRecheckMs !== undefined ? { engineRecheckMs: opts.engineRecheckMs } : {}),
    ...(opts.helmImage ? { helmImage: opts.helmImage } : {}),
  });
  const running = manager.start();
  return {
    manager,
    controller: ctl.controller,
    metrics,
    async stop() {
      await manager.stop();
      await running;
    },
  };
}

/** The ApplicationInstance controller in this process (Ready and status.release from the real release records). */
export function startInstanceController(kc: KubeConfig): { stop(): Promise<void>; metrics: RuntimeMetrics } {
  const { client, metrics, manager } = inProcessManager(kc);
  setupInstanceController(manager, {
    client,
    mapper: new RestMapper(client),
    events: new EventRecorder({ client }),
  });
  const running = manager.start();
  return {
    metrics,
    async stop() {
      await manager.stop();
      await running;
    },
  };
}

export class Api {
  readonly client: KubeClient;
  constructor(kc: KubeConfig) {
    this.client = testClient(kc);
  }

  /** The Operation once it ended (Succeeded, Failed or Cancelled), polled every 500 ms. */
  finished(ns: string, name: string, timeoutMs = 240_000): Promise<Operation> {
    return eventually(
      `Operation ${name} finished`,
      async () => {
        const op = await this.getOperation(ns, name);
        return ['Succeeded', 'Failed', 'Cancelled'].includes(op.status?.phase ?? '') ? op : undefined;
      },
      timeoutMs,
      500,
    );
  }

  opPath(ns: string, name?: string, sub?: string) {
    return resourcePath({ ...OPERATION, namespace: ns }, name, sub);
  }
  instancePath(ns: string, name?: string, sub?: string) {
    return resourcePath({ ...APPLICATION_INSTANCE, namespace: ns }, name, sub);
  }

  async createInstance(
    ns: string,
    name: string,
    capabilities: Record<string, string>,
    ready?: boolean,
  ): Promise<void> {
    await this.client.request({
      method: 'POST',
      path: this.instancePath(ns),
      body: {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: {
          name,
          annotations: Object.fromEntries(
            Object.entries(capabilities).map(([v, e]) => [`ops.vworkspace.io/${v}`, e]),
          ),
        },
        spec: {
          appRef: {
            catalogId: 'demo',
            // The chart the crash fixture installs (tiny): the release record names it, so the instance
            // controller records this as where the release came from and an Upgrade may run.
            chart: { sourceType: 'oci', url: 'oci://example.com/charts', name: 'tiny', version: '1.0.0' },
          },
          release: { name },
        },
      },
    });
    if (ready !== undefined) await this.setReady(ns, name, ready);
  }

  /** Merge-patches the instance's annotations (null removes one). */
  async annotateInstance(
    ns: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<void> {
    await this.client.request({
      method: 'PATCH',
      path: this.instancePath(ns, name),
      contentType: PATCH_TYPES.merge,
      body: { metadata: { annotations } },
    });
  }

  /** Writes status.observedGeneration as the instance controller would; returns metadata.generation. */
  async observeGeneration(ns: string, name: string, lag = 0): Promise<number> {
    const ai = await this.client.request<{ metadata: { generation: number } }>({
      method: 'GET',
      path: this.instancePath(ns, name),
    });
    await this.client.request({
      method: 'PATCH',
      path: this.instancePath(ns, name, 'status'),
      contentType: PATCH_TYPES.merge,
      body: { status: { observedGeneration: ai.metadata.generation - lag } },
    });
    return ai.metadata.generation;
  }

  async setReady(ns: string, name: string, ready: boolean): Promise<void> {
    await this.client.request({
      method: 'PATCH',
      path: this.instancePath(ns, name, 'status'),
      contentType: PATCH_TYPES.merge,
      body: {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: ready ? 'True' : 'False',
              reason: ready ? 'ReleaseDeployed' : 'ReleasePending',
              message: ready ? 'deployed' : 'pending-upgrade',
              lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
            },
          ],
        },
      },
    });
  }

  async createOperation(
    ns: string,
    name: string,
    spec: Partial<OperationSpec>,
    annotations?: Record<string, string>,
  ): Promise<void> {
    await this.client.request({
      method: 'POST',
      path: this.opPath(ns),
      body: {
        apiVersion: OPERATION.apiVersion,
        kind: OPERATION.kind,
        metadata: { name, ...(annotations ? { annotations } : {}) },
        spec: { type: 'Backup', engine: 'workflow', targetRef: { name: 'app' }, ...spec },
      },
    });
  }

  getOperation(ns: string, name: string): Promise<Operation> {
    return this.client.request<Operation>({ method: 'GET', path: this.opPath(ns, name) });
  }

  async patchOperation(ns: string, name: string, patch: unknown): Promise<void> {
    await this.client.request({
      method: 'PATCH',
      path: this.opPath(ns, name),
      contentType: PATCH_TYPES.merge,
      body: patch,
    });
  }

  async configMaps(ns: string): Promise<KubernetesObject[]> {
    const list = await this.client.request<{ items: KubernetesObject[] }>({
      method: 'GET',
      path: resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: ns }),
      query: { labelSelector: 'ops.vworkspace.io/operation' },
    });
    return list.items;
  }

  async setChild(ns: string, name: string, data: Record<string, string>): Promise<void> {
    await this.client.request({
      method: 'PATCH',
      path: resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: ns }, name),
      contentType: PATCH_TYPES.merge,
      body: { data },
    });
  }
}

export function cond(op: Operation, type: string) {
  return op.status?.conditions?.find((c) => c.type === type);
}
