// Pull mode against the real API server: the instance controller projects the catalog entry's
// capabilities (and the chart's own annotations, where the entry opts in) onto ApplicationInstances
// with server-side apply under its field manager, never overrides an annotation another manager
// (GitOps) owns, follows catalog reloads, and reports the effective set in status.capabilities.

import {
  createLogger,
  EventRecorder,
  FIELD_MANAGER,
  InformerFactory,
  Manager,
  PATCH_TYPES,
  RestMapper,
  RuntimeMetrics,
  resourcePath,
  silentLogger,
} from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../../../operator/src/api/index.ts';
import { CatalogStore, createCatalogInformer } from '../../../operator/src/catalog/store.ts';
import { setupInstanceController } from '../../../operator/src/instance/controller.ts';
import { CAPABILITY_NOT_PROJECTED } from '../../../operator/src/instance/reconciler.ts';
import { testClient } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

const a = (verb: string) => `ops.vworkspace.io/${verb}`;

describe('ApplicationInstance capabilities (Pull mode)', () => {
  const kubeconfig = inject('kubeconfig');
  const kc = adminKubeConfig();
  const client = testClient(kc);
  const manager = new Manager({
    leaderElection: false,
    metricsPort: false,
    probePort: false,
    metrics: new RuntimeMetrics(),
    logger: process.env.VWS_DEBUG ? createLogger({ level: 'debug' }) : silentLogger,
    cache: new InformerFactory({ kc, client }),
  });
  let running: Promise<void>;
  let ns: string;
  let operatorNs: string;
  let store: CatalogStore;

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
  const getInstance = (name: string) =>
    client.request<ApplicationInstance>({ method: 'GET', path: instancePath(name) });

  const putCatalog = async (applications: unknown) => {
    const before = store.generation;
    await client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${operatorNs}/configmaps/catalog`,
      query: { fieldManager: 'platform-team', force: true },
      contentType: PATCH_TYPES.apply,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'catalog', namespace: operatorNs, labels: { 'ops.vworkspace.io/catalog': 'true' } },
        data: { 'catalog.yaml': YAML.stringify({ applications }) },
      },
    });
    await eventually('the catalog reload', async () => store.generation > before || undefined);
  };

  /** Creates an instance by server-side apply as `fieldManager` (GitOps tooling applies this way). */
  const applyInstance = (name: string, fieldManager: string, annotations?: Record<string, string>) =>
    client.request({
      method: 'PATCH',
      path: instancePath(name),
      query: { fieldManager, force: true },
      contentType: PATCH_TYPES.apply,
      body: {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
        spec: { appRef: { catalogId: 'shop' }, release: { name: 'web' } },
      },
    });

  /** The instance once it reports `n` capabilities; otherwise throws what it has (shown on timeout). */
  const withCapabilities = (name: string, n: number) => async () => {
    const i = await getInstance(name);
    if (i.status?.capabilities?.length === n) return i;
    throw new Error(
      `annotations ${JSON.stringify(i.metadata.annotations ?? {})}, status.capabilities ${JSON.stringify(i.status?.capabilities ?? [])}`,
    );
  };

  const notProjectedEvent = (name: string) => async () => {
    const list = await client.request<{
      items: { type?: string; reason?: string; note?: string; regarding?: { name?: string } }[];
    }>({
      method: 'GET',
      path: resourcePath({ group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: ns }),
    });
    return list.items.find((e) => e.regarding?.name === name && e.reason === CAPABILITY_NOT_PROJECTED);
  };

  const capabilityAnnotations = (i: ApplicationInstance) =>
    Object.fromEntries(
      Object.entries(i.metadata.annotations ?? {}).filter(([k]) => k.startsWith('ops.vworkspace.io/')),
    );

  beforeAll(async () => {
    ns = await createNamespace(kc, 'pull');
    operatorNs = await createNamespace(kc, 'pull-operator');
    store = new CatalogStore({ informer: createCatalogInformer(kc, operatorNs, { client }) });
    manager.addInformer(store.informer);
    const events = new EventRecorder({ client });
    setupInstanceController(manager, { client, mapper: new RestMapper(client), events, catalog: store });
    running = manager.start();
    await eventually('the catalog informer synced', async () => store.hasSynced() || undefined);
    // The tiny chart's Chart.yaml annotates backup: velero and runcommand: job.
    await helm(kubeconfig, ['install', 'web', TINY_CHART, '-n', ns]);
  });

  afterAll(async () => {
    await manager.stop();
    await running;
  });

  it('projects the catalog entry and opted-in chart annotations under its field manager, and follows catalog changes', async () => {
    await putCatalog({
      shop: { capabilities: { backup: 'velero', restore: 'velero' }, chartAnnotations: true },
    });
    await applyInstance('pulled', 'platform-team');

    const projected = await eventually(
      'capabilities projected with sources in status',
      withCapabilities('pulled', 3),
    );
    expect(capabilityAnnotations(projected)).toEqual({
      [a('backup')]: 'velero',
      [a('restore')]: 'velero',
      [a('runcommand')]: 'job',
    });
    expect(projected.status?.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
      { verb: 'runcommand', engine: 'job', source: 'chart' },
    ]);
    const applied = projected.metadata.managedFields?.find(
      (m) => m.manager === FIELD_MANAGER && m.operation === 'Apply',
    );
    type Fields = { 'f:metadata'?: { 'f:annotations'?: Record<string, unknown> } };
    const owned = (applied?.fieldsV1 as Fields | undefined)?.['f:metadata']?.['f:annotations'] ?? {};
    expect(Object.keys(owned).sort()).toEqual([
      `f:${a('backup')}`,
      `f:${a('restore')}`,
      `f:${a('runcommand')}`,
    ]);
    // The spec is still the platform team's: the operator only applied annotations.
    expect(projected.spec).toEqual({ appRef: { catalogId: 'shop' }, release: { name: 'web' } });

    // The entry drops restore and the chart opt-in: the projection shrinks with it.
    await putCatalog({ shop: { capabilities: { backup: 'velero' } } });
    const shrunk = await eventually('the projection follows the catalog', withCapabilities('pulled', 1));
    expect(capabilityAnnotations(shrunk)).toEqual({ [a('backup')]: 'velero' });
    expect(shrunk.status?.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
  });

  it('never overrides an annotation GitOps owns, says so with a Warning Event, and reports its value as manual', async () => {
    await putCatalog({ shop: { capabilities: { backup: 'velero', restore: 'velero' } } });
    await applyInstance('gitops', 'argocd-controller', { [a('backup')]: 'volsync' });

    const inst = await eventually(
      'restore projected beside the GitOps-owned backup',
      withCapabilities('gitops', 2),
    );
    expect(capabilityAnnotations(inst)).toEqual({ [a('backup')]: 'volsync', [a('restore')]: 'velero' });
    expect(inst.status?.capabilities).toEqual([
      { verb: 'backup', engine: 'volsync', source: 'manual' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
    ]);
    const event = await eventually('a CapabilityNotProjected Warning', notProjectedEvent('gitops'));
    expect(event.type).toBe('Warning');
    expect(event.note).toContain(
      'backup: the catalog wants velero (catalog) but argocd-controller set volsync',
    );

    // GitOps stops managing the annotation: the catalog's value applies.
    await applyInstance('gitops', 'argocd-controller');
    const after = await eventually('the catalog value once GitOps let go', async () => {
      const i = await getInstance('gitops');
      return i.status?.capabilities?.[0]?.source === 'catalog' ? i : undefined;
    });
    expect(capabilityAnnotations(after)).toEqual({ [a('backup')]: 'velero', [a('restore')]: 'velero' });
  });

  it('a manager that applied an empty annotations map owns it: a Warning saying how to fix it, status from the annotations as they are', async () => {
    await putCatalog({ shop: { capabilities: { backup: 'velero' } } });
    await applyInstance('emptymap', 'platform-team', {});
    const event = await eventually('a CapabilityNotProjected Warning', notProjectedEvent('emptymap'));
    expect(event.type).toBe('Warning');
    expect(event.note).toContain('the API server refused the projection (409 Conflict');
    expect(event.note).toContain('leave the field out');
    const inst = await eventually('Ready written despite the refused projection', async () => {
      const i = await getInstance('emptymap');
      return i.status?.conditions?.some((c) => c.type === 'Ready') ? i : undefined;
    });
    expect(inst.status?.capabilities).toBeUndefined();
    expect(capabilityAnnotations(inst)).toEqual({});

    // The platform team stops applying the empty map: the next change projects.
    await applyInstance('emptymap', 'platform-team');
    const projected = await eventually('projected after the fix', withCapabilities('emptymap', 1));
    expect(capabilityAnnotations(projected)).toEqual({ [a('backup')]: 'velero' });
  });
});
