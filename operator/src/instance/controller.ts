// The ApplicationInstance controller: keeps status.conditions[Ready], status.release and
// status.observedGeneration in line with the Helm release record of each instance, and in Pull mode
// projects the catalog's capabilities onto the instance's annotations (capabilities.ts) and reports
// the effective set in status.capabilities. It also shows the day-2 work on the instance:
// status.operations (per type: unfinished count, current, last) and status.nextScheduledRun (from the
// CronOperations that target it), see operations-summary.ts.
//
// Watch-driven, no polling: it reconciles an instance when the instance changes and when a Helm
// release Secret of its release is added, updated or deleted (helm install/upgrade/rollback/
// uninstall all write those Secrets), when an Operation on it is created, changes phase or reason, or
// is deleted, when a CronOperation targeting it plans another run, and every instance when the catalog
// reloads. It never installs anything.
//
// Secrets: the release Secrets are watched as METADATA ONLY (PartialObjectMetadata, narrowed on the wire
// by field selector type=helm.sh/release.v1 and label selector owner=helm): the cache holds names and
// Helm's labels, never a payload. A record's payload is read (release-records.ts) only for the newest
// revisions of a release an instance names in its own namespace, once per resourceVersion, and only the
// fields the status needs are kept. RBAC: cluster-wide `list` and `watch` on Secrets; the single-record
// read is a `list` by name, so no `get` is needed. The payload (rendered values, possibly credentials)
// must NEVER be logged or put in an Event: name the Secret at most.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeConfigLike } from '@vworkspace/runtime';
import {
  type Clock,
  Controller,
  type EventRecorder,
  Informer,
  InformerFactory,
  KubeApiError,
  type KubeClient,
  keyOf,
  type ListerWatcher,
  type Logger,
  metadataOnly,
  type ObjectWriter,
  objectKey,
  type PartialObjectMetadata,
  type ReconcileContext,
  type ReconcileResult,
  type RuntimeMetrics,
  realClock,
  resourcePath,
  scopedTo,
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
import type { Catalog } from '../catalog/catalog-schema.ts';
import { HELM_SECRETS_BY_RELEASE, INSTANCES_BY_RELEASE, indexed, OPERATIONS_BY_TARGET } from '../indexes.ts';
import { releaseClaimant, releaseClaimedMessage } from '../release/claim.ts';
import {
  HELM_RELEASE_SECRET_TYPE,
  latestRelease,
  type ReadyReason,
  type SecretLike,
} from '../release/helm-release.ts';
import { releaseRef } from '../release/ref.ts';
import { cronTargets } from '../schedule/targets.ts';
import { planCapabilities } from './capabilities.ts';
import { nextScheduledRun, summarizeOperations } from './operations-summary.ts';
import { type ReadSecret, ReleaseRecords } from './release-records.ts';
import {
  computeInstanceStatus,
  eventTypeFor,
  READY,
  readyReason,
  releaseNamespaceForbidden,
} from './status.ts';

export const INSTANCE_CONTROLLER_NAME = 'applicationinstance';

/** Server-side selectors for Helm's release records (Helm v3 secrets driver). */
export const HELM_SECRET_FIELD_SELECTOR = `type=${HELM_RELEASE_SECRET_TYPE}`;
export const HELM_SECRET_LABEL_SELECTOR = 'owner=helm';
/** How long Operation events wait before the summary (status.operations) is rewritten; see the watch. */
export const OPERATION_SUMMARY_BATCH_MS = 1_000;

/**
 * Event reason when a release record cannot be decoded and an older one can (Ready then comes from it);
 * when none can, it is the Ready condition's reason.
 */
export const RELEASE_RECORD_UNREADABLE = 'ReleaseRecordUnreadable';
/** Event reason when another field manager owns a capability annotation the catalog wants otherwise. */
export const CAPABILITY_NOT_PROJECTED = 'CapabilityNotProjected';

/** The catalog as the controller needs it (CatalogStore). */
export interface CatalogSource {
  catalog(): Catalog;
  /** Called after every reload; returns an unsubscribe function. */
  onChange(fn: () => void): () => void;
}

/** A release Secret as the controller's cache holds it: metadata only. */
export type HelmSecretMetadata = PartialObjectMetadata;

export interface InstanceControllerDeps {
  kc: KubeConfigLike;
  client: KubeClient;
  writer: ObjectWriter;
  events: EventRecorder;
  logger: Logger;
  metrics: RuntimeMetrics;
  clock?: Clock;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. */
  workers?: number;
  /** Shared informers (main passes the process's one factory); default: a factory of its own. */
  informers?: InformerFactory;
  /** Pull mode: the catalog whose application entries are projected. Without it nothing is projected. */
  catalog?: CatalogSource;
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
  /**
   * Tests: list/watch from memory instead of the API server (Secrets in full: the controller keeps their
   * metadata only), and read single Secrets with `readSecret`.
   */
  listerWatchers?: {
    instances: ListerWatcher<ApplicationInstance>;
    secrets: ListerWatcher<KubernetesObject>;
    readSecret: ReadSecret;
    operations: ListerWatcher<Operation>;
    cronOperations: ListerWatcher<CronOperation>;
  };
}

export interface InstanceController {
  controller: Controller;
  /** Register with the Manager (addInformer): it starts them and gates readiness on their sync. */
  informers: readonly [
    Informer<ApplicationInstance>,
    Informer<HelmSecretMetadata>,
    Informer<Operation>,
    Informer<CronOperation>,
  ];
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

const reasonOf = (o: Operation) => o.status?.conditions?.find((c) => c.type === CONDITION_SUCCEEDED)?.reason;

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

export function createInstanceController(deps: InstanceControllerDeps): InstanceController {
  const clock = deps.clock ?? realClock;
  const log = deps.logger.child({ controller: INSTANCE_CONTROLLER_NAME });
  const common = { clock, logger: log };

  const instanceResource = {
    group: APPLICATION_INSTANCE.group,
    version: APPLICATION_INSTANCE.version,
    plural: APPLICATION_INSTANCE.plural,
  };
  const secretResource = { group: '', version: 'v1', plural: 'secrets' };
  const secretSelectors = {
    fieldSelector: HELM_SECRET_FIELD_SELECTOR,
    labelSelector: HELM_SECRET_LABEL_SELECTOR,
  };
  const lw = deps.listerWatchers;
  let shared = deps.informers;
  const factory = () => {
    shared ??= new InformerFactory({ kc: deps.kc, client: deps.client, logger: log, clock });
    return shared;
  };
  const scope = scopedTo(deps.namespaces);
  const instances = lw
    ? new Informer<ApplicationInstance>({
        name: 'applicationinstances',
        listerWatcher: lw.instances,
        ...common,
      })
    : factory().informer<ApplicationInstance>(instanceResource, scope);
  const secrets = lw
    ? new Informer<HelmSecretMetadata>({
        name: 'helm-release-secrets',
        listerWatcher: metadataOnly(lw.secrets),
        ...secretSelectors,
        ...common,
      })
    : factory().metadataInformer(secretResource, {
        name: 'helm-release-secrets',
        ...scope,
        ...secretSelectors,
      });
  const instancesOfRelease = indexed(instances, INSTANCES_BY_RELEASE);
  const releaseSecrets = indexed(secrets, HELM_SECRETS_BY_RELEASE);
  const records = new ReleaseRecords(lw?.readSecret ?? listSecretByName(deps.client));
  secrets.addEventHandler({
    delete: (s) => records.forget(s.metadata.namespace ?? '', s.metadata.name ?? ''),
  });

  const resource = (r: typeof OPERATION) => ({ group: r.group, version: r.version, plural: r.plural });
  const operations = lw
    ? new Informer<Operation>({ name: 'operations.instance', listerWatcher: lw.operations, ...common })
    : factory().informer<Operation>(resource(OPERATION), scope);
  const operationsOn = indexed(operations, OPERATIONS_BY_TARGET);
  const crons = lw
    ? new Informer<CronOperation>({
        name: 'cronoperations.instance',
        listerWatcher: lw.cronOperations,
        ...common,
      })
    : factory().informer<CronOperation>(resource(CRON_OPERATION), scope);

  // What this replica last announced per instance, so a reconcile that runs on a cache that has
  // not yet seen our own status write does not announce the same thing twice. Keyed by uid too:
  // a deleted and recreated instance starts afresh.
  const announced = new Map<string, { uid: string; ready?: string; problems?: string; held?: string }>();

  async function reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const instance = instances.getByKey(ctx.key);
    if (!instance) {
      announced.delete(ctx.key);
      return {};
    }
    const uid = instance.metadata.uid ?? '';
    let seen = announced.get(ctx.key);
    if (seen?.uid !== uid) {
      seen = { uid };
      announced.set(ctx.key, seen);
    }
    const ref = releaseRef(instance);
    // Another namespace's record is never read (status.ts says why), nor the record of a release an older
    // instance describes (release-claim.ts); the status says what to do.
    const claimant = releaseClaimant(instance, instancesOfRelease(ref.namespace, ref.name));
    const claimedBy = claimant && {
      name: claimant.metadata.name ?? '',
      message: releaseClaimedMessage(instance, claimant),
    };
    const { record, problems } =
      releaseNamespaceForbidden(instance) || claimedBy
        ? { record: undefined, problems: [] }
        : await latestRelease(releaseSecrets(ref.namespace, ref.name), ref.name, (meta) =>
            records.record(meta, ctx.signal),
          );

    // With no readable revision at all, Ready says it (ReleaseRecordUnreadable) and its Event follows.
    if (problems.length > 0 && record) {
      const note = `${problems.join('; ')}. Ready is taken from the newest readable revision; inspect the record with \`helm history ${ref.name} -n ${ref.namespace}\`.`;
      if (seen.problems !== note) {
        // The messages name the Secret, never its content.
        ctx.log.warn({ release: ref, problems: problems.length }, 'unreadable Helm release records');
        await deps.events.event(instance, 'Warning', RELEASE_RECORD_UNREADABLE, note);
        seen.problems = note;
      }
    } else {
      delete seen.problems;
    }

    // Pull mode: project first, so the status below describes the annotations as they will be.
    const catalogId = instance.spec.appRef?.catalogId;
    const entry = catalogId ? deps.catalog?.catalog().applications[catalogId] : undefined;
    const plan = planCapabilities(instance, entry, record?.chartAnnotations, deps.writer.fieldManager);
    let capabilities = plan.capabilities;
    let conflict: string | undefined;
    if (plan.apply) {
      try {
        // No force: an annotation another manager owns stays theirs.
        await deps.writer.apply(
          {
            apiVersion: APPLICATION_INSTANCE.apiVersion,
            kind: APPLICATION_INSTANCE.kind,
            metadata: { name: ctx.name, namespace: ctx.namespace ?? '', annotations: plan.apply },
          },
          { force: false, signal: ctx.signal },
        );
        ctx.log.info({ capabilities: Object.keys(plan.apply).length }, 'capabilities projected');
      } catch (err) {
        // A field-manager conflict the plan could not foresee (a manager that applied an empty
        // `metadata.annotations` owns the whole map) is not transient: retrying in a backoff loop
        // cannot fix it. Say so once; the next change of the instance or the catalog tries again.
        if (!(err instanceof KubeApiError && err.code === 409)) throw err;
        conflict = err.message;
        capabilities = plan.unchanged;
      }
    }
    const notes = plan.held.map(
      (h) =>
        `${h.verb}: the catalog wants ${h.wanted.engine} (${h.wanted.source}) but ${h.managers.join(', ')} set ${h.current}, which stays`,
    );
    if (conflict) notes.push(`the API server refused the projection (${conflict})`);
    const heldNote = notes.join('; ');
    if (heldNote && seen.held !== heldNote) {
      await deps.events.event(
        instance,
        'Warning',
        CAPABILITY_NOT_PROJECTED,
        `${heldNote}. Another manager (Push or GitOps) owns the annotation${conflict ? 's' : ''}; change ${conflict ? 'them' : 'it'} there (a manager that applies an empty metadata.annotations owns the whole map: leave the field out), or remove ${conflict ? 'them' : 'it'} to let the catalog's values apply.`,
      );
    }
    if (heldNote) seen.held = heldNote;
    else delete seen.held;

    const { capabilities: _previous, ...computed } = computeInstanceStatus(instance, record, clock.now(), {
      problems,
      ...(claimedBy ? { claimedBy } : {}),
    });
    const ns = ctx.namespace ?? '';
    const summary = summarizeOperations(ctx.name, operationsOn(ns, ctx.name), instance.status?.operations);
    const next = nextScheduledRun(instance, crons.list(ns));
    const status = {
      ...computed,
      ...(capabilities.length > 0 ? { capabilities } : {}),
      ...(summary.length > 0 ? { operations: summary } : {}),
      ...(next ? { nextScheduledRun: next } : {}),
    };
    const wrote = await deps.writer.applyStatusIfChanged(
      {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: { name: ctx.name, ...(ctx.namespace ? { namespace: ctx.namespace } : {}) },
        status: instance.status,
      },
      status,
      { signal: ctx.signal },
    );

    const reason = readyReason(status) as ReadyReason | undefined;
    const before = seen.ready ?? readyReason(instance.status);
    if (reason && reason !== before) {
      const ready = status.conditions?.find((c) => c.type === READY);
      ctx.log.info({ ready: reason, revision: status.release?.revision }, 'Ready changed');
      await deps.events.event(instance, eventTypeFor(reason), reason, ready?.message ?? reason);
    }
    if (reason) seen.ready = reason;
    if (wrote) ctx.log.debug({ ready: reason }, 'status written');
    return {};
  }

  const controller = new Controller({
    name: INSTANCE_CONTROLLER_NAME,
    reconcile,
    clock,
    logger: deps.logger,
    metrics: deps.metrics,
    ...(deps.workers ? { workers: deps.workers } : {}),
  });
  // An instance that changes or goes may free a release another one was refused (ReleaseClaimed): those
  // of its namespace are evaluated again (its old release name is not in the event).
  controller.watch(instances, {
    map: (i) => [
      objectKey(i),
      ...instances
        .list(i.metadata.namespace)
        .filter((o) => o.metadata.name !== i.metadata.name && readyReason(o.status) === 'ReleaseClaimed')
        .map((o) => objectKey(o)),
    ],
  });
  controller.watch(secrets, {
    map: (secret) =>
      instanceKeysForSecret(
        secret,
        instancesOfRelease(secret.metadata?.namespace, secret.metadata?.labels?.name ?? ''),
      ),
  });
  controller.watch(operations, {
    map: (op) => {
      const target = op.spec?.targetRef?.name;
      return target ? keyOf(op.metadata.namespace, target) : undefined;
    },
    // A new Operation without a status has not been seen by the Operation controller yet, whose first
    // status write (phase '' → Pending, Blocked or Running) follows and is the event that rewrites the
    // summary: one write instead of two when that controller lags a burst of creates (bench operations;
    // docs/performance.md). The summary itself still counts it.
    createPredicate: (op) => Boolean(op.status?.phase),
    updatePredicate: (a, b) =>
      a.status?.phase !== b.status?.phase ||
      reasonOf(a) !== reasonOf(b) ||
      a.status?.startedAt !== b.status?.startedAt,
    // An Operation is accepted and started within a fraction of a second: one summary write for both
    // (bench operations: 3 status writes per Operation before).
    batchMs: OPERATION_SUMMARY_BATCH_MS,
  });
  controller.watch(crons, {
    map: (cron) =>
      instances
        .list(cron.metadata.namespace)
        .filter((i) => cronTargets(cron, i))
        .map((i) => objectKey(i)),
    updatePredicate: (a, b) =>
      a.status?.nextScheduleTime !== b.status?.nextScheduleTime ||
      a.metadata.generation !== b.metadata.generation,
  });
  // A catalog reload may change any instance's projection.
  deps.catalog?.onChange(() => {
    for (const i of instances.list()) controller.enqueue(objectKey(i));
  });
  return { controller, informers: [instances, secrets, operations, crons], records };
}
