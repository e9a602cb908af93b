// The live catalog: an informer on the ConfigMaps labelled ops.vworkspace.io/catalog: "true" in the
// operator namespace. On every change all of them are parsed again (parseCatalog) and merged with the
// built-in templates, so an edit applies without a restart. Each skipped entry becomes one Warning Event
// on its ConfigMap and one count in vworkspace_catalog_problems_total, once per distinct problem: a
// resync or an unrelated edit does not repeat it; a problem that was fixed and comes back is reported
// again. vworkspace_catalog_problems{configmap} is the number of current problems.
//
// The webhook and the reconcilers read templates from here. Reading is synchronous and cheap: the
// merged result is computed once per change, never per request.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient, KubeConfigLike } from '@vworkspace/runtime';
import { createInformer, type Informer, type Logger, silentLogger } from '@vworkspace/runtime';
import { Counter, Gauge, type Registry } from 'prom-client';
import { LABEL_CATALOG } from '../api/annotations.ts';
import { validateWindow } from '../time/window.ts';
import { type Catalog, emptyCatalog } from './catalog-schema.ts';
import type { Lookup } from './lookup.ts';
import { mergeTemplates } from './merge.ts';
import { type CatalogProblem, type ConfigMapLike, parseCatalog } from './parse.ts';
import type { EffectiveTemplate, Template } from './template.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

export type CatalogConfigMap = ConfigMapLike & KubernetesObject;

/** Event reason on a ConfigMap whose catalog entry was skipped. */
export const CATALOG_ENTRY_SKIPPED = 'CatalogEntrySkipped';
export const CATALOG_SELECTOR = `${LABEL_CATALOG}=true`;

/** What the store needs to report a problem (EventRecorder fits). */
export interface ProblemEvents {
  event(regarding: KubernetesObject, type: 'Warning', reason: string, note: string): Promise<void>;
}

export interface CatalogStoreOptions {
  /** The informer over the catalog ConfigMaps; see createCatalogInformer. */
  informer: Informer<CatalogConfigMap>;
  events?: ProblemEvents;
  registry?: Registry;
  logger?: Logger;
  builtins?: readonly Template[];
}

export function createCatalogInformer(
  kc: KubeConfigLike,
  namespace: string,
  opts: { client?: KubeClient; logger?: Logger } = {},
): Informer<CatalogConfigMap> {
  return createInformer<CatalogConfigMap>(
    kc,
    { group: '', version: 'v1', plural: 'configmaps', namespace },
    { name: 'catalog-configmaps', labelSelector: CATALOG_SELECTOR, ...opts },
  );
}

function windowProblem(w: Parameters<typeof validateWindow>[0]): string | undefined {
  const v = validateWindow(w);
  return v.ok ? undefined : `${v.field}: ${v.message}`;
}

const problemKey = (p: CatalogProblem) => JSON.stringify([p.configMap, p.path, p.message]);

export class CatalogStore {
  readonly informer: Informer<CatalogConfigMap>;
  readonly #events: ProblemEvents | undefined;
  readonly #log: Logger;
  readonly #builtins: readonly Template[];
  readonly #problemsTotal: Counter<'configmap'> | undefined;
  readonly #problemsNow: Gauge<'configmap'> | undefined;
  #templates: readonly EffectiveTemplate[];
  #catalog: Catalog = emptyCatalog();
  #problems: CatalogProblem[] = [];
  #reported = new Set<string>();
  #scheduled = false;
  #generation = 0;
  #listeners: (() => void)[] = [];

  constructor(opts: CatalogStoreOptions) {
    this.informer = opts.informer;
    this.#events = opts.events;
    this.#log = (opts.logger ?? silentLogger).child({ component: 'catalog' });
    this.#builtins = opts.builtins ?? BUILTIN_TEMPLATES;
    this.#templates = mergeTemplates(this.#builtins, []);
    if (opts.registry) {
      this.#problemsTotal = new Counter({
        name: 'vworkspace_catalog_problems_total',
        help: 'Catalog entries skipped because they are invalid, counted once per distinct problem',
        labelNames: ['configmap'],
        registers: [opts.registry],
      });
      this.#problemsNow = new Gauge({
        name: 'vworkspace_catalog_problems',
        help: 'Catalog entries currently skipped because they are invalid',
        labelNames: ['configmap'],
        registers: [opts.registry],
      });
    }
    const changed = () => this.#schedule();
    this.informer.addEventHandler({
      add: changed,
      // A resync delivers update(o, o): nothing changed, nothing to do.
      update: (o, n) => {
        if (o.metadata?.resourceVersion !== n.metadata?.resourceVersion) changed();
      },
      delete: changed,
    });
    // An empty catalog delivers no event: the first sync must still count as a load.
    void this.informer.waitForSync().then((ok) => {
      if (ok) this.#schedule();
    });
  }

  /** Loaded once the informer's first list arrived. Before that, only the built-ins are known. */
  hasSynced(): boolean {
    return this.informer.hasSynced();
  }

  /** The effective templates: built-ins merged with every valid catalog entry. */
  templates(): readonly EffectiveTemplate[] {
    return this.#templates;
  }

  /** For the webhook: the templates, or why they cannot be trusted yet (deny with "retry"). */
  lookupTemplates(): Lookup<readonly Template[]> {
    return this.hasSynced()
      ? { ok: true, value: this.#templates }
      : { ok: false, message: 'the catalog ConfigMaps have not been listed yet' };
  }

  /** The applications of the catalog (capabilities, chart annotations, maintenance windows). */
  catalog(): Catalog {
    return this.#catalog;
  }

  /** The current problems (every skipped entry). */
  problems(): readonly CatalogProblem[] {
    return this.#problems;
  }

  /** Counts reloads; tests wait on it. */
  get generation(): number {
    return this.#generation;
  }

  /** Called after each reload (e.g. the reconcilers requeue Operations waiting for a template). */
  onChange(fn: () => void): () => void {
    this.#listeners.push(fn);
    return () => {
      this.#listeners = this.#listeners.filter((f) => f !== fn);
    };
  }

  /** Re-parses now. The informer's handlers call it (batched per microtask); tests may too. */
  reload(): void {
    const configMaps = this.informer.list();
    const { catalog, problems } = parseCatalog(configMaps, { validateWindow: windowProblem });
    this.#catalog = catalog;
    this.#templates = mergeTemplates(this.#builtins, catalog);
    this.#problems = problems;
    this.#generation++;
    this.#report(configMaps, problems);
    this.#log.info(
      { configMaps: configMaps.length, templates: this.#templates.length, problems: problems.length },
      'catalog loaded',
    );
    for (const fn of this.#listeners) {
      try {
        fn();
      } catch (err) {
        this.#log.error({ err }, 'catalog change listener failed');
      }
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // The initial list arrives as one add per ConfigMap: parse once for all of them.
    queueMicrotask(() => {
      this.#scheduled = false;
      this.reload();
    });
  }

  #report(configMaps: readonly CatalogConfigMap[], problems: readonly CatalogProblem[]): void {
    const byId = new Map(
      configMaps.map((c) => [`${c.metadata?.namespace ?? ''}/${c.metadata?.name ?? ''}`, c]),
    );
    const current = new Set<string>();
    const counts = new Map<string, number>();
    for (const p of problems) {
      const key = problemKey(p);
      current.add(key);
      counts.set(p.configMap, (counts.get(p.configMap) ?? 0) + 1);
      if (this.#reported.has(key)) continue;
      this.#problemsTotal?.inc({ configmap: p.configMap });
      const note = p.path ? `catalog.yaml ${p.path}: ${p.message}` : `catalog.yaml: ${p.message}`;
      this.#log.warn({ configMap: p.configMap, path: p.path }, note);
      const cm = byId.get(p.configMap);
      if (cm && this.#events) {
        void this.#events.event(
          { apiVersion: 'v1', kind: 'ConfigMap', ...cm, metadata: cm.metadata ?? {} },
          'Warning',
          CATALOG_ENTRY_SKIPPED,
          note,
        );
      }
    }
    this.#reported = current;
    this.#problemsNow?.reset();
    for (const [configmap, n] of counts) this.#problemsNow?.set({ configmap }, n);
  }
}
