// The ApplicationInstance controller: keeps status.conditions[Ready], status.release and
// status.observedGeneration in line with the Helm release record of each instance, and in Pull mode
// projects the catalog's capabilities onto the instance's annotations (capabilities.ts) and reports
// the effective set in status.capabilities.
//
// Watch-driven, no polling: it reconciles an instance when the instance changes and when a Helm
// release Secret of its release is added, updated or deleted (helm install/upgrade/rollback/
// uninstall all write those Secrets), and every instance when the catalog reloads. It never installs
// anything.
//
// RBAC: the Secret informer needs cluster-wide `list` and `watch` on core Secrets (read-only, no
// `get` of other Secrets, no writes), narrowed on the wire to Helm's records by field selector
// type=helm.sh/release.v1 and label selector owner=helm. Secret data (the gzipped release, which
// holds the rendered values and so possibly credentials) must NEVER be logged or put in an Event:
// log the Secret's namespace/name at most.

import type { KubeConfig, KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../api/index.ts';
import type { Catalog } from '../catalog/catalog-schema.ts';
import { HELM_SECRETS_BY_RELEASE, INSTANCES_BY_RELEASE, indexed } from '../indexes.ts';
import {
  type Clock,
  Controller,
  type EventRecorder,
  Informer,
  InformerFactory,
  KubeApiError,
  type KubeClient,
  type ListerWatcher,
  type Logger,
  type ObjectWriter,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  type RuntimeMetrics,
  realClock,
} from '../runtime/index.ts';
import { planCapabilities } from './capabilities.ts';
import { HELM_RELEASE_SECRET_TYPE, latestRelease, type ReadyReason } from './helm-release.ts';
import { computeInstanceStatus, eventTypeFor, READY, readyReason, releaseRef } from './status.ts';

export const INSTANCE_CONTROLLER_NAME = 'applicationinstance';

/** Server-side selectors for Helm's release records (Helm v3 secrets driver). */
export const HELM_SECRET_FIELD_SELECTOR = `type=${HELM_RELEASE_SECRET_TYPE}`;
export const HELM_SECRET_LABEL_SELECTOR = 'owner=helm';

/** Event reason when a release record cannot be decoded (Ready then comes from the next readable one). */
export const RELEASE_RECORD_UNREADABLE = 'ReleaseRecordUnreadable';
/** Event reason when another field manager owns a capability annotation the catalog wants otherwise. */
export const CAPABILITY_NOT_PROJECTED = 'CapabilityNotProjected';

/** The catalog as the controller needs it (CatalogStore). */
export interface CatalogSource {
  catalog(): Catalog;
  /** Called after every reload; returns an unsubscribe function. */
  onChange(fn: () => void): () => void;
}

export type HelmSecret = V1Secret & KubernetesObject;

export interface InstanceControllerDeps {
  kc: KubeConfig;
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
  /** Tests: list/watch from memory instead of the API server. */
  listerWatchers?: {
    instances: ListerWatcher<ApplicationInstance>;
    secrets: ListerWatcher<HelmSecret>;
  };
}

export interface InstanceController {
  controller: Controller;
  /** Register with the Manager (addInformer): it starts them and gates readiness on their sync. */
  informers: readonly [Informer<ApplicationInstance>, Informer<HelmSecret>];
}

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
  const instances = lw
    ? new Informer<ApplicationInstance>({
        name: 'applicationinstances',
        listerWatcher: lw.instances,
        ...common,
      })
    : factory().informer<ApplicationInstance>(instanceResource);
  const secrets = lw
    ? new Informer<HelmSecret>({
        name: 'helm-release-secrets',
        listerWatcher: lw.secrets,
        ...secretSelectors,
        ...common,
      })
    : factory().informer<HelmSecret>(secretResource, { name: 'helm-release-secrets', ...secretSelectors });
  const instancesOfRelease = indexed(instances, INSTANCES_BY_RELEASE);
  const releaseSecrets = indexed(secrets, HELM_SECRETS_BY_RELEASE);

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
    const { record, problems } = latestRelease(releaseSecrets(ref.namespace, ref.name), ref.name);

    if (problems.length > 0) {
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

    const { capabilities: _previous, ...computed } = computeInstanceStatus(instance, record, clock.now());
    const status = {
      ...computed,
      ...(capabilities.length > 0 ? { capabilities } : {}),
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
  controller.watch(instances);
  controller.watch(secrets, {
    map: (secret) =>
      instanceKeysForSecret(
        secret,
        instancesOfRelease(secret.metadata?.namespace, secret.metadata?.labels?.name ?? ''),
      ),
  });
  // A catalog reload may change any instance's projection.
  deps.catalog?.onChange(() => {
    for (const i of instances.list()) controller.enqueue(objectKey(i));
  });
  return { controller, informers: [instances, secrets] };
}
