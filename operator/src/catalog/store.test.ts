import { Informer } from '@vworkspace/runtime';
import { MemoryResource } from '@vworkspace/runtime/testing';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { aTemplate, catalogConfigMap } from '../../../test/support/builders/catalog.ts';
import { CATALOG_ENTRY_SKIPPED, type CatalogConfigMap, CatalogStore } from './store.ts';

function setup() {
  const api = new MemoryResource<CatalogConfigMap>();
  const informer = new Informer<CatalogConfigMap>({ name: 'catalog', listerWatcher: api });
  const events: { name: string | undefined; reason: string; note: string }[] = [];
  const registry = new Registry();
  const store = new CatalogStore({
    informer,
    registry,
    events: {
      event: async (o, _type, reason, note) => {
        events.push({ name: o.metadata?.name, reason, note });
      },
    },
  });
  const put = (name: string, catalog: unknown) =>
    api.put({ apiVersion: 'v1', kind: 'ConfigMap', ...catalogConfigMap(name, catalog) } as CatalogConfigMap);
  const settle = async (generation: number) => {
    for (let i = 0; i < 200 && store.generation < generation; i++) await new Promise((r) => setTimeout(r, 5));
    expect(store.generation).toBeGreaterThanOrEqual(generation);
  };
  const metric = async () =>
    (await registry.getSingleMetricAsString('vworkspace_catalog_problems_total')).trim();
  return { api, informer, store, events, put, settle, metric };
}

describe('CatalogStore', () => {
  it('serves built-ins before sync but reports it is not loaded', () => {
    const { store } = setup();
    expect(store.templates().some((t) => t.name === 'velero-backup')).toBe(true);
    expect(store.lookupTemplates().ok).toBe(false);
  });

  it('loads an empty catalog on sync, then applies changes without restart', async () => {
    const { informer, store, put, api, settle } = setup();
    informer.start();
    await settle(1);
    expect(store.lookupTemplates().ok).toBe(true);
    expect(store.templates().some((t) => t.name === 'custom-backup')).toBe(false);

    put('extra', { templates: [aTemplate()] });
    await settle(2);
    expect(store.templates().find((t) => t.name === 'custom-backup')?.source).toBe(
      'configmap vworkspace-system/extra',
    );

    put('extra', { templates: [{ name: 'velero-backup', disabled: true }] });
    await settle(3);
    expect(store.templates().map((t) => t.name)).not.toContain('velero-backup');
    expect(store.templates().map((t) => t.name)).not.toContain('custom-backup');

    api.remove('vworkspace-system', 'extra');
    await settle(4);
    expect(store.templates().map((t) => t.name)).toContain('velero-backup');
    await informer.stop();
  });

  it('reports each bad entry once with an Event and a metric, again only after it was fixed and broken again', async () => {
    const { informer, store, put, events, settle, metric } = setup();
    informer.start();
    await settle(1);
    const bad = { ...aTemplate({ name: 'broken' }), engine: 'teleport' };
    put('cat', { templates: [aTemplate(), bad] });
    await settle(2);
    expect(store.problems()).toHaveLength(1);
    expect(events).toEqual([
      {
        name: 'cat',
        reason: CATALOG_ENTRY_SKIPPED,
        note: expect.stringContaining(
          'catalog.yaml templates[1]: template (broken) skipped: templates[1].engine: Unsupported value: "teleport"',
        ),
      },
    ]);
    expect(store.templates().map((t) => t.name)).toContain('custom-backup');

    // an unrelated edit and a reload: the same problem is not reported again
    put('cat', { templates: [aTemplate({ description: 'edited' }), bad] });
    await settle(3);
    store.reload();
    expect(events).toHaveLength(1);
    expect(await metric()).toContain(
      'vworkspace_catalog_problems_total{configmap="vworkspace-system/cat"} 1',
    );

    put('cat', { templates: [aTemplate()] });
    await settle(5);
    expect(store.problems()).toHaveLength(0);
    put('cat', { templates: [aTemplate(), bad] });
    await settle(6);
    expect(events).toHaveLength(2);
    await informer.stop();
  });
});
