// The ApplicationInstance reconciler: keeps status.conditions[Ready], status.release and
// status.observedGeneration in line with the Helm release record of each instance, and in Pull mode
// projects the catalog's capabilities onto the instance's annotations (capabilities.ts) and reports the
// effective set in status.capabilities. It also shows the day-2 work on the instance: status.operations
// (per type: unfinished count, current, last) and status.nextScheduledRun (from the CronOperations that
// target it), see operations-summary.ts, and what it remembers of its backups (status.lastSuccessfulBackup,
// backup-record.ts). It never installs anything. What triggers it: controller.ts.
//
// Reads come from the shared cache through the runtime Client (its own writes included); the release
// Secrets from a metadata-only informer, a record's payload only through ReleaseRecords
// (release-records.ts), once per resourceVersion. The payload (rendered values, possibly credentials)
// must NEVER be logged or put in an Event: name the Secret at most.

import {
  type Client,
  type Clock,
  type EventRecorder,
  FIELD_MANAGER,
  KubeApiError,
  keyOf,
  type PartialObjectMetadata,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from '@vworkspace/runtime';
import {
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  type ApplicationInstanceStatus,
  CRON_OPERATION,
  type CronOperation,
  OPERATION,
  type Operation,
} from '../api/index.ts';
import type { Catalog } from '../catalog/catalog-schema.ts';
import { INSTANCES_BY_RELEASE, OPERATIONS_BY_TARGET } from '../indexes.ts';
import { releaseClaimant, releaseClaimedMessage } from '../release/claim.ts';
import type { ReadyReason, ReleaseRecord } from '../release/helm-release.ts';
import { latestRelease } from '../release/helm-release.ts';
import { releaseRef } from '../release/ref.ts';
import { backupRecord } from './backup-record.ts';
import { type CapabilityPlan, planCapabilities } from './capabilities.ts';
import { nextScheduledRun, summarizeOperations } from './operations-summary.ts';
import { type ReadSecret, ReleaseRecords } from './release-records.ts';
import {
  computeInstanceStatus,
  eventTypeFor,
  READY,
  type ReleaseFacts,
  readyReason,
  releaseNamespaceForbidden,
} from './status.ts';

/**
 * Event reason when a release record cannot be decoded and an older one can (Ready then comes from it);
 * when none can, it is the Ready condition's reason.
 */
export const RELEASE_RECORD_UNREADABLE = 'ReleaseRecordUnreadable';
/** Event reason when another field manager owns a capability annotation the catalog wants otherwise. */
export const CAPABILITY_NOT_PROJECTED = 'CapabilityNotProjected';

/** The catalog as the reconciler needs it (CatalogStore). */
export interface CatalogSource {
  catalog(): Catalog;
  /** Called after every reload; returns an unsubscribe function. */
  onChange(fn: () => void): () => void;
}

/** The release Secrets of `release` in `namespace` (metadata only). */
export type ReleaseSecrets = (namespace: string, release: string) => PartialObjectMetadata[];

/** What this replica last announced about one instance (by uid: a recreated instance starts afresh). */
interface Announced {
  uid: string;
  ready?: string;
  problems?: string;
  held?: string;
}

/** The newest readable record of an instance's release, and what else was found about it. */
interface Release extends ReleaseFacts {
  record?: ReleaseRecord;
  problems: string[];
}

export class InstanceReconciler implements Reconciler {
  /** The decoded records read so far (one per release Secret read). */
  readonly records: ReleaseRecords;
  readonly #client: Client;
  readonly #events: EventRecorder;
  readonly #clock: Clock;
  readonly #catalog: CatalogSource | undefined;
  readonly #releaseSecrets: ReleaseSecrets;
  // What this replica last announced per instance, so that an Event is said once per change even when
  // nothing in the status records it (unreadable revisions, held capabilities).
  readonly #announced = new Map<string, Announced>();

  constructor(opts: {
    client: Client;
    events: EventRecorder;
    clock: Clock;
    releaseSecrets: ReleaseSecrets;
    readSecret: ReadSecret;
    /** Pull mode: the catalog whose application entries are projected. Without it nothing is projected. */
    catalog?: CatalogSource;
  }) {
    this.#client = opts.client;
    this.#events = opts.events;
    this.#clock = opts.clock;
    this.#catalog = opts.catalog;
    this.#releaseSecrets = opts.releaseSecrets;
    this.records = new ReleaseRecords(opts.readSecret);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const instance = this.#client.get<ApplicationInstance>(APPLICATION_INSTANCE, req);
    if (!instance) {
      this.#announced.delete(ctx.key);
      return {};
    }
    const seen = this.#seen(ctx.key, instance);
    const release = await this.#release(instance, ctx.signal);
    await this.#announceUnreadable(instance, release, seen, ctx);
    // Pull mode: project first, so the status below describes the annotations as they will be.
    const capabilities = await this.#project(instance, release.record, seen, ctx);
    const status = this.#status(instance, release, capabilities);
    const wrote = await this.#client.status().applyIfChanged(
      {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: { name: req.name, ...(req.namespace ? { namespace: req.namespace } : {}) },
        status: instance.status,
      },
      status,
      { signal: ctx.signal },
    );
    await this.#announceReady(instance, status, seen, ctx);
    if (wrote) ctx.log.debug({ ready: readyReason(status) }, 'status written');
    return {};
  }

  /** The forgotten Secret's record: it is gone (its delete event). */
  forget(secret: PartialObjectMetadata): void {
    this.records.forget(secret.metadata.namespace ?? '', secret.metadata.name ?? '');
  }

  #seen(key: string, instance: ApplicationInstance): Announced {
    const uid = instance.metadata.uid ?? '';
    let seen = this.#announced.get(key);
    if (seen?.uid !== uid) {
      seen = { uid };
      this.#announced.set(key, seen);
    }
    return seen;
  }

  /**
   * The newest readable record. Another namespace's record is never read (status.ts says why), nor the
   * record of a release an older instance describes (release-claim.ts); the status says what to do.
   */
  async #release(instance: ApplicationInstance, signal: AbortSignal): Promise<Release> {
    const ref = releaseRef(instance);
    const peers = this.#client.list<ApplicationInstance>(APPLICATION_INSTANCE, {
      index: [INSTANCES_BY_RELEASE.name, keyOf(ref.namespace, ref.name)],
    });
    const claimant = releaseClaimant(instance, peers);
    if (claimant) {
      const claimedBy = {
        name: claimant.metadata.name ?? '',
        message: releaseClaimedMessage(instance, claimant),
      };
      return { problems: [], claimedBy };
    }
    if (releaseNamespaceForbidden(instance)) return { problems: [] };
    return latestRelease(this.#releaseSecrets(ref.namespace, ref.name), ref.name, (meta) =>
      this.records.record(meta, signal),
    );
  }

  /** With no readable revision at all, Ready says it (ReleaseRecordUnreadable) and its Event follows. */
  async #announceUnreadable(
    instance: ApplicationInstance,
    { record, problems }: Release,
    seen: Announced,
    ctx: ReconcileContext,
  ): Promise<void> {
    if (problems.length === 0 || !record) {
      delete seen.problems;
      return;
    }
    const ref = releaseRef(instance);
    const note = `${problems.join('; ')}. Ready is taken from the newest readable revision; inspect the record with \`helm history ${ref.name} -n ${ref.namespace}\`.`;
    if (seen.problems === note) return;
    // The messages name the Secret, never its content.
    ctx.log.warn({ release: ref, problems: problems.length }, 'unreadable Helm release records');
    await this.#events.event(instance, 'Warning', RELEASE_RECORD_UNREADABLE, note);
    seen.problems = note;
  }

  /** Applies the catalog's capability annotations; returns what the instance advertises afterwards. */
  async #project(
    instance: ApplicationInstance,
    record: ReleaseRecord | undefined,
    seen: Announced,
    ctx: ReconcileContext,
  ): Promise<CapabilityPlan['capabilities']> {
    const catalogId = instance.spec.appRef?.catalogId;
    const entry = catalogId ? this.#catalog?.catalog().applications[catalogId] : undefined;
    const plan = planCapabilities(instance, entry, record?.chartAnnotations, FIELD_MANAGER);
    let conflict: string | undefined;
    if (plan.apply) {
      try {
        // No force: an annotation another manager owns stays theirs.
        await this.#client.apply(
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
      }
    }
    await this.#announceHeld(instance, plan, conflict, seen);
    return conflict ? plan.unchanged : plan.capabilities;
  }

  async #announceHeld(
    instance: ApplicationInstance,
    plan: CapabilityPlan,
    conflict: string | undefined,
    seen: Announced,
  ): Promise<void> {
    const notes = plan.held.map(
      (h) =>
        `${h.verb}: the catalog wants ${h.wanted.engine} (${h.wanted.source}) but ${h.managers.join(', ')} set ${h.current}, which stays`,
    );
    if (conflict) notes.push(`the API server refused the projection (${conflict})`);
    const heldNote = notes.join('; ');
    if (heldNote && seen.held !== heldNote) {
      const [it, them] = conflict ? ['s', 'them'] : ['', 'it'];
      await this.#events.event(
        instance,
        'Warning',
        CAPABILITY_NOT_PROJECTED,
        `${heldNote}. Another manager (Push or GitOps) owns the annotation${it}; change ${them} there (a manager that applies an empty metadata.annotations owns the whole map: leave the field out), or remove ${them} to let the catalog's values apply.`,
      );
    }
    if (heldNote) seen.held = heldNote;
    else delete seen.held;
  }

  /** The complete status: Ready and release (status.ts), capabilities, the day-2 summary. */
  #status(
    instance: ApplicationInstance,
    { record, problems, claimedBy }: Release,
    capabilities: CapabilityPlan['capabilities'],
  ): ApplicationInstanceStatus {
    const { capabilities: _previous, ...computed } = computeInstanceStatus(
      instance,
      record,
      this.#clock.now(),
      {
        problems,
        ...(claimedBy ? { claimedBy } : {}),
      },
    );
    const ns = instance.metadata.namespace ?? '';
    const name = instance.metadata.name ?? '';
    const operations = this.#client.list<Operation>(OPERATION, {
      index: [OPERATIONS_BY_TARGET.name, keyOf(ns, name)],
    });
    const summary = summarizeOperations(name, operations, instance.status?.operations);
    const next = nextScheduledRun(
      instance,
      this.#client.list<CronOperation>(CRON_OPERATION, { namespace: ns }),
    );
    return {
      ...computed,
      ...(capabilities.length > 0 ? { capabilities } : {}),
      ...(summary.length > 0 ? { operations: summary } : {}),
      ...(next ? { nextScheduledRun: next } : {}),
      ...backupRecord(name, operations, instance.status),
    };
  }

  /** An Event when Ready's reason changed since the status (or this replica's last Event) said it. */
  async #announceReady(
    instance: ApplicationInstance,
    status: ApplicationInstanceStatus,
    seen: Announced,
    ctx: ReconcileContext,
  ): Promise<void> {
    const reason = readyReason(status) as ReadyReason | undefined;
    const before = seen.ready ?? readyReason(instance.status);
    if (reason && reason !== before) {
      const ready = status.conditions?.find((c) => c.type === READY);
      ctx.log.info({ ready: reason, revision: status.release?.revision }, 'Ready changed');
      await this.#events.event(instance, eventTypeFor(reason), reason, ready?.message ?? reason);
    }
    if (reason) seen.ready = reason;
  }
}
