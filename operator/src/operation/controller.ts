// The Operation controller: the OperationReconciler (reconciler.ts) on the manager's shared cache, and
// what makes it run.
//
// Wake-ups are events, not polling:
//   target changes (Ready)          ApplicationInstance informer → Operations on that target
//   a conflicting Operation ends    Operation informer → the waiting queue of the same target
//   Secret / ServiceAccount appears NameWatcher (narrow watch per waited-for name) → the waiting Operations
//   a profile is granted            RoleBinding / ClusterRoleBinding informers → Operations RbacProfileMissing
//   the catalog changes             CatalogStore.onChange → Operations not started yet
//   a dependency / source succeeds  Operation informer → the target's queue and operationRef readers
//   an engine's CRDs get installed  discovery re-read every ENGINE_RECHECK_MS while EngineNotInstalled
//   the target is (un)paused        ApplicationInstance informer → its waiting and running Operations
//   window opens, deadline, TTL,    requeueAfter at the exact instant (clock)
//   retry backoff, grace period
//   approval, cancel, reconcile     the Operation's own update events
//   a child changes                 ChildWatcher (on-demand informer per child kind) → its Operation
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type Activity,
  Client,
  type Clock,
  type Controller,
  controllerFor,
  type EventRecorder,
  type Informer,
  type KubeClient,
  type KubeConfigLike,
  keyOf,
  type Logger,
  type Manager,
  type ObjectWriter,
  objectKey,
  type Request,
  type RestMapper,
  type RuntimeMetrics,
  realClock,
  splitKey,
  type WatchSource,
} from '@vworkspace/runtime';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { APPLICATION_INSTANCE, DEFAULT_VELERO_NAMESPACE, OPERATION } from '../api/constants.ts';
import type { Engine } from '../api/enums.ts';
import type { Operation } from '../api/operation.ts';
import { CONDITION_ACCEPTED } from '../api/reasons.ts';
import type { Catalog } from '../catalog/catalog-schema.ts';
import type { Template } from '../catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import type { EngineAdapter } from '../engines/types.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import {
  INSTANCES_BY_RELEASE,
  indexed,
  OPERATIONS_BY_PARAMETER_SOURCE,
  OPERATIONS_BY_TARGET,
} from '../indexes.ts';
import { AccessCache, SelfAccessReviewer, SubjectAccessReviewer } from './access.ts';
import { OperationChildren } from './children.ts';
import { isRunning, waitingQueue } from './conflicts.ts';
import { isTerminalPhase } from './decide.ts';
import { EngineDiscovery } from './engine-install.ts';
import { EnvironmentReader } from './environment.ts';
import { PreconditionReader } from './facts.ts';
import { OperationMetrics } from './metrics.ts';
import { resolveOperation, resolveRequest } from './preconditions.ts';
import { OperationReconciler } from './reconciler.ts';
import { ChildWatcher, NameWatcher } from './watchers.ts';

export const OPERATION_CONTROLLER_NAME = 'operation';
export { DEFAULT_VELERO_NAMESPACE };

/** Where templates and catalog applications come from (CatalogStore fits). */
export interface TemplateSource {
  templates(): readonly Template[];
  catalog?(): Catalog;
  onChange?(fn: () => void): () => void;
}

/** What the Operation controller is set up with (the cache is the manager's). */
export interface OperationControllerDeps {
  kc: KubeConfigLike;
  /** The controller's own API client (its connection pool and QPS budget). */
  client: KubeClient;
  writer: ObjectWriter;
  mapper: RestMapper;
  events: EventRecorder;
  logger: Logger;
  metrics: RuntimeMetrics;
  adapterFor: (engine: Engine) => EngineAdapter | undefined;
  templates?: TemplateSource;
  clock?: Clock;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. Operations on one
   * target are still decided one at a time (the conflict queue), whatever the number. */
  workers?: number;
  /** Foreground work (activity.ts): touched whenever this controller queues or reconciles a key. */
  activity?: Activity;
  veleroNamespace?: string;
  helmImage?: string;
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
  /** How long TargetNotFound / RbacProfileMissing / EngineNotInstalled wait before failing (default 5 min). */
  graceMs?: number;
  /** How often an Operation waiting for its engine's CRDs re-reads discovery (default 15 s). */
  engineRecheckMs?: number;
  /**
   * Check the signed admission record and re-review the stamped requester and approver before anything
   * starts (admitted.ts; main always sets it). Unset: not checked (controller tests without webhooks).
   */
  admission?: {
    keys: SigningKeySource;
    /**
     * The operator's own user name (SelfSubjectReview; undefined while unknown): an Operation carries a
     * scheduler's authority only when the operator created it for that scheduler.
     */
    self: () => Promise<string | undefined>;
  };
}

export interface OperationController {
  controller: Controller;
}

/** Operations not started yet (or Failed and asked to re-run) that re-evaluate on outside events. */
function waiting(op: Operation): boolean {
  return !isTerminalPhase(op.status?.phase) && !isRunning(op);
}

function rbacMissing(op: Operation): boolean {
  const c = op.status?.conditions?.find((x) => x.type === CONDITION_ACCEPTED);
  return c?.status === 'False' && c.reason === 'RbacProfileMissing';
}

const requestOf = (o: KubernetesObject): Request => splitKey(objectKey(o));

/** The Operation controller on `mgr`'s shared cache, registered with `mgr`. */
export function setupOperationController(mgr: Manager, deps: OperationControllerDeps): OperationController {
  const clock = deps.clock ?? realClock;
  const log = deps.logger.child({ controller: OPERATION_CONTROLLER_NAME });
  const veleroNamespace = deps.veleroNamespace ?? DEFAULT_VELERO_NAMESPACE;
  const templates = (): readonly Template[] => deps.templates?.templates() ?? BUILTIN_TEMPLATES;
  const b = controllerFor<Operation>(mgr, OPERATION).named(OPERATION_CONTROLLER_NAME);
  const operations = b.informer<Operation>(OPERATION);
  const instances = b.informer<ApplicationInstance>(APPLICATION_INSTANCE);
  const onTarget = indexed(operations, OPERATIONS_BY_TARGET);
  const readersOf = indexed(operations, OPERATIONS_BY_PARAMETER_SOURCE);
  const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
  const roleBindings = b.informer<KubernetesObject>({ ...rbac, plural: 'rolebindings', kind: 'RoleBinding' });
  const clusterRoleBindings = mgr.cache.informer<KubernetesObject>(
    { ...rbac, plural: 'clusterrolebindings' },
    { clusterScoped: true },
  );

  // The on-demand watchers wake Operations by key; the controller they enqueue into is built last.
  let controller: Controller | undefined;
  const wake = (key: string) => controller?.enqueue(key);
  const watcherDeps = {
    kc: deps.kc,
    client: deps.client,
    mapper: deps.mapper,
    clock,
    logger: log,
    // Velero's children live in its own namespace; every other engine's in the Operation's.
    ...(deps.namespaces?.length
      ? {
          childNamespaces: (apiVersion: string) =>
            apiVersion.startsWith('velero.io/') ? [veleroNamespace] : (deps.namespaces ?? []),
        }
      : {}),
  };
  const childWatcher = new ChildWatcher(watcherDeps, wake);
  const names = new NameWatcher(watcherDeps, (kind, ns, name) => {
    // Wake every Operation of the namespace that still waits: the cheap, always-correct mapping.
    for (const op of operations.list(ns)) if (waiting(op)) wake(objectKey(op));
    log.debug({ kind, namespace: ns, name }, 'waited-for object changed');
  });
  // What deciding about one Operation reads: the Operations on its target (conflicts, dependencies,
  // parametersFrom `latest`) and those its parametersFrom names (operationRef). An index lookup, not a
  // scan of the namespace: a namespace of many instances holds all their Operations, and a scan per
  // reconcile made a burst of N Operations there cost N² (issue 26).
  const concerning = (op: Operation): readonly Operation[] => {
    const ns = op.metadata.namespace ?? '';
    const same = onTarget(ns, op.spec.targetRef.name);
    const named = (op.spec.parametersFrom ?? []).flatMap((s) => {
      const source = s.operationRef ? operations.getByKey(keyOf(ns, s.operationRef.name)) : undefined;
      return source && source.spec.targetRef.name !== op.spec.targetRef.name ? [source] : [];
    });
    return named.length > 0 ? [...same, ...named] : same;
  };
  const access = new AccessCache(new SelfAccessReviewer(deps.client), { clock });
  const requesters = deps.admission && new AccessCache(new SubjectAccessReviewer(deps.client), { clock });
  /** spec.parameters after parametersFrom and the template's defaults; {} when they do not resolve (decide reports that). */
  const parametersOf = (op: Operation): Record<string, unknown> => {
    // The resolution decide materializes with: parametersFrom may supply backupName or configMapName.
    const r = resolveRequest(op, templates(), concerning(op), new Date(clock.now()));
    return r.ok ? r.parameters : {};
  };
  const reconciler = new OperationReconciler({
    operations,
    instances,
    // Status writes through the runtime Client: the cache shows what this replica wrote until the watch
    // does, so events and metrics fire once on a lagging cache and the conflict queue sees the other
    // Operations' latest state.
    client: new Client({ client: deps.client, mapper: deps.mapper, cache: mgr.cache }),
    kube: deps.client,
    writer: deps.writer,
    events: deps.events,
    clock,
    adapterFor: deps.adapterFor,
    templates,
    facts: new PreconditionReader({
      operations: concerning,
      instancesOfRelease: indexed(instances, INSTANCES_BY_RELEASE),
      templates,
      catalog: deps.templates?.catalog?.bind(deps.templates),
      now: () => clock.now(),
      access,
      names,
      discovery: new EngineDiscovery(deps.client, clock),
      veleroNamespace,
      ...(deps.admission && requesters ? { admission: { ...deps.admission, requesters } } : {}),
    }),
    environment: new EnvironmentReader({
      client: deps.client,
      veleroNamespace,
      helmImage: deps.helmImage,
      parametersOf,
      operations: concerning,
      safetyOf: (op) => {
        const r = resolveOperation(op, templates());
        return r.ok ? r.template.safety : undefined;
      },
    }),
    children: new OperationChildren({
      client: deps.client,
      mapper: deps.mapper,
      writer: deps.writer,
      watcher: childWatcher,
    }),
    names,
    metrics: new OperationMetrics(deps.metrics.registry, () => operations.list()),
    graceMs: deps.graceMs,
    engineRecheckMs: deps.engineRecheckMs,
  });

  // When an Operation runs, ends or goes away: the queue of its target (which also holds those waiting
  // for a dependency on it) and those reading its outputs through operationRef.
  b.watches<Operation>(OPERATION, (o) => {
    if (waiting(o) && !o.metadata.deletionTimestamp) return undefined;
    const ns = o.metadata.namespace ?? '';
    const queue = waitingQueue(onTarget(ns, o.spec.targetRef.name), ns, o.spec.targetRef.name);
    return [...queue, ...readersOf(ns, o.metadata.name ?? '').filter(waiting)].map(requestOf);
  });
  b.watches<ApplicationInstance>(APPLICATION_INSTANCE, (i) =>
    onTarget(i.metadata.namespace, i.metadata.name ?? '')
      .filter((o) => waiting(o) || isRunning(o))
      .map(requestOf),
  );
  const onBinding = (ns: string | undefined) => {
    // A grant in the Velero namespace (or cluster-wide) can unblock Operations of every namespace.
    const everywhere = ns === undefined || ns === veleroNamespace;
    access.invalidate(everywhere ? undefined : ns);
    // A revoked verb counts from its binding's watch event on.
    requesters?.invalidate(ns === undefined ? undefined : ns);
    return operations
      .list(everywhere ? undefined : ns)
      .filter((o) => waiting(o) && rbacMissing(o))
      .map(requestOf);
  };
  b.watchesSource(roleBindings, (rb) => onBinding(rb.metadata?.namespace ?? ''));
  b.watchesSource(clusterRoleBindings, () => onBinding(undefined));
  const templatesChanged = deps.templates?.onChange;
  if (templatesChanged) b.watchesSource(catalogReloads(deps.templates!, operations), requestOf);

  // The on-demand informers (children, waited-for names) are the controller's, not the cache's: stopped
  // with the leadership term.
  mgr.add({
    name: 'operation-on-demand-informers',
    needLeaderElection: true,
    async start(signal: AbortSignal) {
      await new Promise<void>((ok) => {
        if (signal.aborted) ok();
        else signal.addEventListener('abort', () => ok(), { once: true });
      });
      await Promise.all([childWatcher.stop(), names.stop()]);
    },
  });
  controller = b
    .withOptions({
      clock,
      ...(deps.workers ? { workers: deps.workers } : {}),
      ...(deps.activity ? { activity: deps.activity } : {}),
    })
    .complete(reconciler);
  return { controller };
}

/** The Operations not started yet, each time the catalog reloads (a template may have changed). */
function catalogReloads(source: TemplateSource, operations: Informer<Operation>): WatchSource<Operation> {
  return {
    name: 'catalog-reloads',
    waitForSync: async () => true,
    addEventHandler: (h) =>
      source.onChange?.(() => {
        for (const o of operations.list()) if (waiting(o)) void h.add?.(o);
      }) ?? (() => {}),
  };
}
