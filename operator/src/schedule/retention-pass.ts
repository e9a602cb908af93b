// A Backup CronOperation's retention pass, the I/O: list the backups it made through the engine's own API,
// decide (retention-units.ts, retention.ts), delete what the policy lets go through the engine's own API,
// and say so (status.retention, the Retention condition, an Event per deletion). Run by the CronOperation
// controller after each run's bookkeeping and on every other reconcile (a backup finishing, a resync), so
// it is idempotent: a DeleteBackupRequest has a name derived from its Backup (AlreadyExists is "asked
// already", never a second request), a VolumeSnapshot is deleted with its uid as precondition, and what is
// being deleted already is not judged again.
//
// Deletions (docs/adr/0053-retention-through-each-engine.md):
//   - velero: a DeleteBackupRequest <backup>-retention in Velero's namespace; Velero deletes the Backup
//     with its files in the bucket and its volume snapshots. Deleting the Backup object itself would leave
//     the files, and Velero's backup sync would bring the object back.
//   - snapshot: the VolumeSnapshots of the Backup; their VolumeSnapshotContent (and the storage's snapshot)
//     follows the class's deletionPolicy: Delete removes the data, Retain keeps it for an admin.
// Whose authority: the webhook admitted spec.retention only from a requester who may delete those backups
// themselves (admission/schedules.ts); here the operator's own RBAC (profile backup.velero or
// backup.snapshot) is what may be missing, and a 403 is RetentionBlocked with the rule to grant.
//
// RBAC: velero.io backups list and deletebackuprequests get/create in Velero's namespace (backup.velero),
// snapshot.storage.k8s.io volumesnapshots list/delete in the CronOperation's namespace (backup.snapshot).

import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type Client,
  type Condition,
  type EventRecorder,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeClient,
  type Logger,
  resourcePath,
  setCondition,
  statusCode,
} from '@vworkspace/runtime';
import {
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CONDITION_RETENTION,
  CRON_OPERATION,
  type CronOperation,
  type CronOperationStatus,
  deleteBackupRequest,
  LABEL_CRON_OPERATION,
  LABEL_MANAGED_BY,
  LABEL_OPERATION_NAMESPACE,
  MANAGED_BY,
  OPERATION,
  type Operation,
  RETENTION_ENGINES,
  Reason,
  type RetentionStatus,
} from '../api/index.ts';
import { retentionPolicyProblems } from './retention.ts';
import {
  planRetention,
  type RetentionDeletion,
  type RetentionEngine,
  type RetentionUnit,
  retentionStatus,
  snapshotUnits,
  veleroUnits,
} from './retention-units.ts';
import { withoutUndefined } from './run-plan.ts';

const VELERO = { group: 'velero.io', version: 'v1' };
const SNAPSHOTS = { group: 'snapshot.storage.k8s.io', version: 'v1', plural: 'volumesnapshots' };

/** The Event reason of each deletion a pass asks for. */
export const RETENTION_EVENT = {
  BackupDeleted: 'BackupDeleted',
  RetentionBlocked: 'RetentionBlocked',
} as const;

/** A DeleteBackupRequest's name: one per Backup, so a second pass never files a second one. */
export function retentionRequestName(backup: string): string {
  return `${backup}-retention`;
}

const REASON_WORDS: Record<RetentionDeletion['reason'], string> = {
  'older-than-max-age': 'older than spec.retention.maxAge',
  'not-selected': 'no rule of spec.retention keeps it',
  'failed-superseded': 'a failed backup older than the newest successful one',
};

/** A pass that could not run: the condition's message, already saying what to do. */
class Blocked extends Error {}

export interface RetentionPassDeps {
  /** The controller's client: the cache (instances, Operations) and the status write. */
  client: Client;
  /** Raw API access: the engine's objects are not cached by the CronOperation controller. */
  kube: KubeClient;
  events: EventRecorder;
  veleroNamespace: string;
}

export class RetentionPass {
  readonly #d: RetentionPassDeps;
  constructor(deps: RetentionPassDeps) {
    this.#d = deps;
  }

  /** Runs the pass for `cron` (as the cache holds it now) and writes what it did into its status. */
  async run(cron: CronOperation, now: Date, log: Logger, signal?: AbortSignal): Promise<void> {
    const policy = cron.spec.retention;
    const status = cron.status ?? {};
    if (!policy) {
      // Removed from the spec: so is what the last pass said.
      if (status.retention || status.conditions?.some((c) => c.type === CONDITION_RETENTION))
        await this.#write(cron, now, { retention: undefined, condition: undefined });
      return;
    }
    let outcome: { retention: RetentionStatus; message: string; asked: number };
    try {
      outcome = await this.#apply(cron, now, log, signal);
    } catch (err) {
      if (!(err instanceof Blocked)) throw err;
      const before = status.conditions?.find((c) => c.type === CONDITION_RETENTION);
      if (before?.reason !== Reason.RetentionBlocked || before.message !== err.message)
        await this.#d.events.event(cron, 'Warning', RETENTION_EVENT.RetentionBlocked, err.message);
      await this.#write(cron, now, {
        retention: status.retention,
        condition: { status: 'False', reason: Reason.RetentionBlocked, message: err.message },
      });
      return;
    }
    await this.#write(cron, now, {
      // The record of the last pass that asked for a deletion: a pass that finds nothing new to delete
      // (the next reconcile, Velero still deleting) leaves it, and says its counts in the condition.
      retention: outcome.asked === 0 && status.retention ? status.retention : outcome.retention,
      condition: { status: 'True', reason: Reason.RetentionApplied, message: outcome.message },
    });
  }

  async #apply(
    cron: CronOperation,
    now: Date,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<{ retention: RetentionStatus; message: string; asked: number }> {
    const policy = cron.spec.retention ?? {};
    const engine = cron.spec.operationTemplate.spec.engine;
    const problems = retentionPolicyProblems(policy, 'spec.retention');
    if (problems.length > 0)
      throw new Blocked(`${problems.join('; ')}; nothing is deleted until it is fixed`);
    if (
      !(RETENTION_ENGINES as readonly string[]).includes(engine) ||
      cron.spec.operationTemplate.spec.type !== 'Backup'
    )
      throw new Blocked(
        `spec.retention needs a Backup on engine velero or snapshot (this one runs ${cron.spec.operationTemplate.spec.type} on ${engine}); nothing is deleted: remove spec.retention`,
      );
    const namespace = cron.metadata.namespace ?? '';
    const me = { name: cron.metadata.name ?? '', namespace };
    const facts = {
      instances: this.#d.client.list<ApplicationInstance>(APPLICATION_INSTANCE, { namespace }),
      operations: this.#d.client.list<Operation>(OPERATION),
      now: now.getTime(),
      ...(cron.spec.timeZone ? { timeZone: cron.spec.timeZone } : {}),
    };
    const kind = engine as RetentionEngine;
    const listed = await this.#list(kind, me, signal);
    const { units, deleting } =
      kind === 'velero' ? veleroUnits(me, listed, facts) : snapshotUnits(me, listed, facts);
    let plan: ReturnType<typeof planRetention>;
    try {
      plan = planRetention(policy, units, facts, deleting);
    } catch (err) {
      // An unknown spec.timeZone (Ready says InvalidTimeZone too): no calendar to read the buckets on.
      if (err instanceof RangeError)
        throw new Blocked(`${err.message}; nothing is deleted until it is fixed`);
      throw err;
    }
    const failures: string[] = [];
    let asked = 0;
    for (const d of plan.deletions) {
      if (!(await this.#delete(kind, d.unit, me, signal, failures))) continue;
      asked++;
      const what = kind === 'velero' ? `velero Backup ${d.unit.name}` : `snapshot Backup ${d.unit.name}`;
      log.info(
        { backup: d.unit.name, instance: d.unit.instance, reason: d.reason },
        'retention deletes a backup',
      );
      await this.#d.events.event(
        cron,
        'Normal',
        RETENTION_EVENT.BackupDeleted,
        `deleting ${what} of ${d.unit.instance} (${d.reason}: ${REASON_WORDS[d.reason]})`,
      );
    }
    const retention = retentionStatus(plan, now);
    const message = `kept ${plan.kept}, deleting ${retention.deleting} of ${units.length + deleting} backup(s) this CronOperation made${
      failures.length > 0 ? `; ${failures.join('; ')}` : ''
    }`;
    return { retention, message, asked };
  }

  /** The engine's objects labelled with this CronOperation. */
  async #list(
    kind: RetentionEngine,
    me: { name: string; namespace: string },
    signal?: AbortSignal,
  ): Promise<KubernetesObject[]> {
    const velero = kind === 'velero';
    const where = velero
      ? { ...VELERO, plural: 'backups', namespace: this.#d.veleroNamespace }
      : { ...SNAPSHOTS, namespace: me.namespace };
    const selector = velero
      ? `${LABEL_CRON_OPERATION}=${me.name},${LABEL_OPERATION_NAMESPACE}=${me.namespace}`
      : `${LABEL_CRON_OPERATION}=${me.name}`;
    try {
      const list = await this.#d.kube.request<{ items?: KubernetesObject[] }>({
        method: 'GET',
        path: resourcePath(where),
        query: { labelSelector: selector },
        ...(signal ? { signal } : {}),
      });
      return list.items ?? [];
    } catch (err) {
      throw (
        blockedBy(err, velero ? 'list velero.io backups' : 'list volumesnapshots', where.namespace, kind) ??
        err
      );
    }
  }

  /** Asks the engine to delete one unit; false when it was asked already (or is gone). */
  async #delete(
    kind: RetentionEngine,
    unit: RetentionUnit,
    me: { name: string; namespace: string },
    signal: AbortSignal | undefined,
    failures: string[],
  ): Promise<boolean> {
    const opts = signal ? { signal } : {};
    if (kind === 'velero') {
      const backup = unit.objects[0];
      const ns = this.#d.veleroNamespace;
      const name = retentionRequestName(unit.name);
      const where = { ...VELERO, plural: 'deletebackuprequests', namespace: ns };
      const request = deleteBackupRequest(
        { name: unit.name, namespace: ns, uid: backup?.metadata?.uid },
        name,
        {
          [LABEL_MANAGED_BY]: MANAGED_BY,
          [LABEL_CRON_OPERATION]: me.name,
          [LABEL_OPERATION_NAMESPACE]: me.namespace,
        },
      );
      try {
        await this.#d.kube.request({ method: 'POST', path: resourcePath(where), body: request, ...opts });
        return true;
      } catch (err) {
        if (!isAlreadyExists(err))
          throw blockedBy(err, 'create velero.io deletebackuprequests', ns, kind) ?? err;
        // Asked before. Velero answers once: a request it could not carry out stays Processed with errors.
        const existing = await this.#d.kube.request<KubernetesObject & { status?: { errors?: string[] } }>({
          method: 'GET',
          path: resourcePath(where, name),
          ...opts,
        });
        const errors = existing.status?.errors ?? [];
        if (errors.length > 0)
          failures.push(
            `Velero could not delete Backup ${unit.name}: ${errors.join(', ').slice(0, 256)} (DeleteBackupRequest ${ns}/${name}; delete it to ask again)`,
          );
        return false;
      }
    }
    let asked = false;
    for (const s of unit.objects) {
      const uid = s.metadata?.uid;
      try {
        await this.#d.kube.request({
          method: 'DELETE',
          path: resourcePath({ ...SNAPSHOTS, namespace: me.namespace }, s.metadata?.name ?? ''),
          query: { propagationPolicy: 'Background' },
          ...(uid ? { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } } } : {}),
          ...opts,
        });
        asked = true;
      } catch (err) {
        // Gone, or replaced by another object of that name (the uid precondition): not this backup any more.
        if (isNotFound(err) || isConflict(err)) continue;
        throw blockedBy(err, 'delete volumesnapshots', me.namespace, kind) ?? err;
      }
    }
    return asked;
  }

  async #write(
    cron: CronOperation,
    now: Date,
    next: {
      retention: RetentionStatus | undefined;
      condition: Pick<Condition, 'status' | 'reason' | 'message'> | undefined;
    },
  ): Promise<void> {
    // The status as this replica last wrote it (the run's bookkeeping may have written it a moment ago).
    const current =
      this.#d.client.get<CronOperation>(CRON_OPERATION, {
        namespace: cron.metadata.namespace ?? '',
        name: cron.metadata.name ?? '',
      }) ?? cron;
    const prev: CronOperationStatus = current.status ?? {};
    const others = (prev.conditions ?? []).filter((c) => c.type !== CONDITION_RETENTION);
    const conditions = next.condition
      ? setCondition(
          prev.conditions,
          {
            type: CONDITION_RETENTION,
            ...next.condition,
            ...(cron.metadata.generation !== undefined
              ? { observedGeneration: cron.metadata.generation }
              : {}),
          },
          now,
        )
      : others;
    const status = withoutUndefined<CronOperationStatus>({
      ...prev,
      retention: next.retention,
      conditions: conditions.length > 0 ? conditions : undefined,
    });
    await this.#d.client.status().applyIfChanged(
      {
        apiVersion: CRON_OPERATION.apiVersion,
        kind: CRON_OPERATION.kind,
        metadata: { name: current.metadata.name ?? '', namespace: current.metadata.namespace ?? '' },
        status: current.status,
      },
      status,
    );
  }
}

/** A 403 or a resource that is not served, as a Blocked pass saying what to grant or install. */
function blockedBy(
  err: unknown,
  what: string,
  namespace: string,
  kind: RetentionEngine,
): Blocked | undefined {
  const profile = kind === 'velero' ? 'backup.velero' : 'backup.snapshot';
  const code = statusCode(err);
  if (code === 403)
    return new Blocked(
      `the operator may not ${what} in namespace ${namespace}: bind its RBAC profile ${profile} there (docs/security/rbac.md); nothing was deleted`,
    );
  if (code === 404)
    return new Blocked(
      `${what.replace(/^\w+ /, '')} are not served by the API server (is ${kind === 'velero' ? 'Velero' : 'the CSI snapshot controller'} installed?); nothing was deleted`,
    );
  return undefined;
}
