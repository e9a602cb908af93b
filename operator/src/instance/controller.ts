// The ApplicationInstance controller: the InstanceReconciler (reconciler.ts) on the manager's shared
// cache, and what makes it run.
//
// Watch-driven, no polling: it reconciles an instance when the instance changes and when a Helm
// release Secret of its release is added, updated or deleted (helm install/upgrade/rollback/
// uninstall all write those Secrets), when an Operation on it is created, changes phase or reason, or
// is deleted, when a CronOperation targeting it plans another run, and every instance when the catalog
// reloads.
//
// Secrets: the release Secrets are watched as METADATA ONLY (PartialObjectMetadata, narrowed on the wire
// by field selector type=helm.sh/release.v1 and label selector owner=helm): the cache holds names and
// Helm's labels, never a payload. A record's payload is read (release-records.ts) only for the newest
// revisions of a release an instance names in its own namespace, once per resourceVersion, and only the
// fields the status needs are kept. RBAC: cluster-wide `list` and `watch` on Secrets; the single-record
// read is a `list` by name, so no `get` is needed.

import type { KubernetesObject } from '@kubernetes/client-node';
import {
  Client,
  type Clock,
  type Controller,
  controllerFor,
  type EventRecorder,
  type Informer,
  type InformerFactory,
  type KubeClient,
  type Manager,
  objectKey,
  type PartialObjectMetadata,
  type Request,
  type RestMapper,
  realClock,
  resourcePath,
  splitKey,
  type TrailOptions,
  type WatchSource,
} from '@vworkspace/runtime';
import {
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CONDITION_SUCCEEDED,
  CRON_OPERATION,
  type CronOperation,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import {
  HELM_SECRETS_BY_RELEASE,
  INSTANCES_BY_RELEASE,
  INSTANCES_REFUSED_A_RELEASE,
  indexed,
  OPERATIONS_BY_TARGET,
} from '../indexes.ts';
import { HELM_RELEASE_SECRET_TYPE, type SecretLike } from '../release/helm-release.ts';
import { releaseRef } from '../release/ref.ts';
import { cronTargets } from '../schedule/targets.ts';
import { registerBackupMetrics } from './backup-metrics.ts';
import { type CatalogSource, InstanceReconciler } from './reconciler.ts';
import type { ReadSecret, ReleaseRecords } from './release-records.ts';

export const INSTANCE_CONTROLLER_NAME = 'applicationinstance';

/** Server-side selectors for Helm's release records (Helm v3 secrets driver). */
export const HELM_SECRET_FIELD_SELECTOR = `type=${HELM_RELEASE_SECRET_TYPE}`;
export const HELM_SECRET_LABEL_SELECTOR = 'owner=helm';
/** How long Operation events wait before the summary (status.operations) is rewritten; see the watch. */
export const OPERATION_SUMMARY_BATCH_MS = 1_000;

/** A release Secret as the controller's cache holds it: metadata only. */
export type HelmSecretMetadata = PartialObjectMetadata;

/** What the instance controller is set up with (the cache, logger and metrics are the manager's). */
export interface InstanceControllerDeps {
  /** The controller's own API client (its connection pool and QPS budget). */
  client: KubeClient;
  mapper: RestMapper;
  events: EventRecorder;
  /** Pull mode: the catalog whose application entries are projected. Without it nothing is projected. */
  catalog?: CatalogSource;
  /** "now" of the Ready condition's transitions and the work queue's clock. */
  clock?: Clock;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. */
  workers?: number;
  /**
   * What the summary (status.operations) trails: Operation events rewrite it after a lull of the
   * Operation controllers' work, at most `maxMs` later (activity.ts; docs/adr/0062).
   */
  trail?: TrailOptions;
}

export interface InstanceController {
  controller: Controller;
  /** The decoded records read so far (one per release Secret read). */
  records: ReleaseRecords;
}

/**
 * Reads one Secret by name with `list` (a field selector on metadata.name): the operator's RBAC has
 * `list` and `watch` on Secrets for its informers anyway, and no `get`.
 */
export function listSecretByName(client: KubeClient): ReadSecret {
  return async (namespace, name, signal) => {
    const list = await client.request<{ items?: SecretLike[] }>({
      method: 'GET',
      path: resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace }),
      query: { fieldSelector: `metadata.name=${name}` },
      ...(signal ? { signal } : {}),
    });
    return list.items?.[0];
  };
}

/** The shared metadata-only informer of Helm's release Secrets (in the factory's namespaces). */
export function helmReleaseSecrets(cache: InformerFactory): Informer<HelmSecretMetadata> {
  return cache.metadataInformer(
    { group: '', version: 'v1', plural: 'secrets' },
    {
      name: 'helm-release-secrets',
      fieldSelector: HELM_SECRET_FIELD_SELECTOR,
      labelSelector: HELM_SECRET_LABEL_SELECTOR,
    },
  );
}

const reasonOf = (o: Operation) => o.status?.conditions?.find((c) => c.type === CONDITION_SUCCEEDED)?.reason;

const requestOf = (namespace: string | undefined, name: string): Request => ({
  ...(namespace ? { namespace } : {}),
  name,
});

/** Keys of the instances whose release (name + namespace, defaulted) the Secret records. */
export function instanceKeysForSecret(
  secret: KubernetesObject,
  instances: readonly ApplicationInstance[],
): string[] {
  const release = secret.metadata?.labels?.name;
  const ns = secret.metadata?.namespace;
  if (!release || !ns) return [];
  return instances
    .filter((i) => {
      const ref = releaseRef(i);
      return ref.name === release && ref.namespace === ns;
    })
    .map((i) => objectKey(i));
}

/** Every cached instance, each time the catalog reloads (a reload may change any projection). */
function catalogReloads(
  catalog: CatalogSource,
  instances: Informer<ApplicationInstance>,
): WatchSource<ApplicationInstance> {
  return {
    name: 'catalog-reloads',
    waitForSync: async () => true,
    addEventHandler: (h) =>
      catalog.onChange(() => {
        for (const i of instances.list()) void h.add?.(i);
      }),
  };
}

/** The ApplicationInstance controller on `mgr`'s shared cache, registered with `mgr`. */
export function setupInstanceController(mgr: Manager, deps: InstanceControllerDeps): InstanceController {
  const clock = deps.clock ?? realClock;
  const b = controllerFor<ApplicationInstance>(mgr, APPLICATION_INSTANCE).named(INSTANCE_CONTROLLER_NAME);
  const instances = b.informer<ApplicationInstance>(APPLICATION_INSTANCE);
  const instancesOfRelease = indexed(instances, INSTANCES_BY_RELEASE);
  b.informer<Operation>(OPERATION).addIndexer(OPERATIONS_BY_TARGET.name, OPERATIONS_BY_TARGET.fn);
  const secrets = helmReleaseSecrets(mgr.cache);
  const reconciler = new InstanceReconciler({
    client: new Client({ client: deps.client, mapper: deps.mapper, cache: mgr.cache }),
    events: deps.events,
    clock,
    releaseSecrets: indexed(secrets, HELM_SECRETS_BY_RELEASE),
    readSecret: listSecretByName(deps.client),
    ...(deps.catalog ? { catalog: deps.catalog } : {}),
  });
  secrets.addEventHandler({ delete: (s) => reconciler.forget(s) });
  // Per-instance backup gauges, read from the caches at scrape time (backup-metrics.ts).
  const crons = b.informer<CronOperation>(CRON_OPERATION);
  registerBackupMetrics(
    mgr.metrics.registry,
    () => instances.list(),
    () => crons.list(),
  );

  // An instance that changes or goes may free a release another one was refused (ReleaseClaimed): those
  // of its namespace are evaluated again (its old release name is not in the event).
  // Found by index: reading every instance of the namespace on every instance event made a namespace
  // of N instances cost N² per round of status writes (issue 26).
  const refused = indexed(instances, INSTANCES_REFUSED_A_RELEASE);
  b.watches<ApplicationInstance>(APPLICATION_INSTANCE, (i) =>
    refused(i.metadata.namespace, 'ReleaseClaimed')
      .filter((o) => o.metadata.name !== i.metadata.name)
      .map((o) => requestOf(o.metadata.namespace, o.metadata.name ?? '')),
  );
  b.watchesSource(secrets, (secret) =>
    instanceKeysForSecret(
      secret,
      instancesOfRelease(secret.metadata.namespace, secret.metadata.labels?.name ?? ''),
    ).map(splitKey),
  );
  b.watches<Operation>(
    OPERATION,
    (op) => (op.spec?.targetRef?.name ? requestOf(op.metadata.namespace, op.spec.targetRef.name) : undefined),
    {
      predicates: [
        {
          // A new Operation without a status has not been seen by the Operation controller yet, whose
          // first status write (phase '' → Pending, Blocked or Running) follows and is the event that
          // rewrites the summary: one write instead of two when that controller lags a burst of creates
          // (bench operations; docs/performance.md). The summary itself still counts it.
          create: (op) => Boolean(op.status?.phase),
          update: (a, b) =>
            a.status?.phase !== b.status?.phase ||
            reasonOf(a) !== reasonOf(b) ||
            a.status?.startedAt !== b.status?.startedAt,
        },
      ],
      // An Operation is accepted and started within a fraction of a second: one summary write for both.
      batch: OPERATION_SUMMARY_BATCH_MS,
      ...(deps.trail ? { trail: deps.trail } : {}),
    },
  );
  b.watches<CronOperation>(
    CRON_OPERATION,
    (cron) =>
      instances
        .list(cron.metadata.namespace)
        .filter((i) => cronTargets(cron, i))
        .map((i) => requestOf(i.metadata.namespace, i.metadata.name ?? '')),
    {
      predicates: [
        {
          update: (a, b) =>
            a.status?.nextScheduleTime !== b.status?.nextScheduleTime ||
            a.metadata.generation !== b.metadata.generation,
        },
      ],
    },
  );
  if (deps.catalog)
    b.watchesSource(catalogReloads(deps.catalog, instances), (i) =>
      requestOf(i.metadata.namespace, i.metadata.name ?? ''),
    );
  const controller = b
    .withOptions({ clock, ...(deps.workers ? { workers: deps.workers } : {}) })
    .complete(reconciler);
  return { controller, records: reconciler.records };
}
