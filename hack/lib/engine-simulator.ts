// A stand-in for the controllers of Velero, Argo Workflows, VolSync and the CSI external-snapshotter,
// for tests and the demo only. It polls their REAL custom resources on a REAL API server and moves
// their status one step per pass, the way each real controller does, so the operator's adapters and
// reconciler meet the same objects and the same state sequence they meet in a cluster.
//
// Transitions (one per pass; `outcome` is the annotation `simulator.vworkspace.io/outcome` on the
// child, else on the Operation the child belongs to, else success; outcome Hold keeps every kind in
// its in-progress state, for tests of cancel and deadlines):
//
// velero.io/v1 Backup   (no status subresource: the whole object is patched, as Velero does)
//   "" → New → InProgress → Finalizing → Completed | PartiallyFailed | Failed        (outcome picks)
//   New → FailedValidation                                     (outcome FailedValidation)
//   Velero's backup controller validates a New backup (FailedValidation with status.validationErrors),
//   runs it (InProgress, status.progress), waits for async plugin work (WaitingForPluginOperations…,
//   Finalizing) and ends Completed, PartiallyFailed (status.errors > 0) or Failed (status.failureReason).
//   pkg/controller/backup_controller.go, backup_finalizer_controller.go.
// velero.io/v1 Restore: "" → New → InProgress → Finalizing → Completed | PartiallyFailed | Failed,
//   New → FailedValidation; pkg/controller/restore_controller.go.
// velero.io/v1 DeleteBackupRequest: "" → Processed. Deletes the named Backup unless it is InProgress,
//   in which case it records the error "backup deletion failed: backup is still in progress", as
//   pkg/controller/backup_deletion_controller.go does (Velero cannot cancel a running backup).
// argoproj.io/v1alpha1 Workflow   (no status subresource)
//   "" → Running (a Steps root node and one Pod node Running) → Succeeded | Failed | Error, the Pod
//   node carrying the phase and message; `spec.shutdown: Stop | Terminate` → Failed with Argo's message
//   "Stopped with strategy '<strategy>'" (no exit handler is simulated). workflow/controller/operator.go.
// volsync.backube/v1alpha1 ReplicationSource / ReplicationDestination   (status subresource)
//   trigger.manual ≠ status.lastManualSync → Synchronizing=True/SyncInProgress → lastManualSync =
//   trigger, latestMoverStatus.result Successful, Synchronizing=False/WaitingForManual. With outcome
//   Failed: latestMoverStatus.result Failed with logs and the sync stays unfinished (VolSync retries
//   the mover). controllers/mover/*/mover.go, controllers/replicationsource_controller.go.
// snapshot.storage.k8s.io/v1 VolumeSnapshot   (status subresource)
//   "" → readyToUse false, boundVolumeSnapshotContentName snapcontent-<uid> → readyToUse true,
//   creationTime, restoreSize; outcome Failed → status.error.message. The snapshot controller binds a
//   VolumeSnapshotContent and copies readyToUse from it. pkg/common-controller/snapshot_controller.go.
//
// batch/v1 Jobs are not simulated: the integration harness has no controller-manager, and creating a
// Job is what those tests check.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_OPERATION, LABEL_OPERATION_NAMESPACE, OPERATION } from '@vworkspace/operator/api';
import { isNotFound, type KubeClient, PATCH_TYPES, resourcePath } from '@vworkspace/runtime';

export const ANNOTATION_OUTCOME = 'simulator.vworkspace.io/outcome';
/** The outcome that never finishes: the object stays in progress until cancelled or deleted. */
export const HOLD = 'Hold';

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Status = Record<string, unknown>;

/** What one pass does to one object. */
export type Step =
  | { kind: 'status'; status: Status }
  | { kind: 'delete-backup'; backupName: string; status: Status }
  | { kind: 'none' };

export interface SimulatedKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** The CRD has `subresources.status` (bin/crds/*.yaml): status is written through /status. */
  statusSubresource: boolean;
  step(obj: Obj, outcome: string | undefined, now: string): Step;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const status = (s: Status): Step => ({ kind: 'status', status: s });
const NONE: Step = { kind: 'none' };

function veleroStep(kindName: 'Backup' | 'Restore') {
  return (obj: Obj, outcome: string | undefined, now: string): Step => {
    const s = obj.status ?? {};
    const phase = str(s.phase) ?? '';
    const itemsKey = kindName === 'Backup' ? 'itemsBackedUp' : 'itemsRestored';
    switch (phase) {
      case '':
        return status({ ...s, phase: 'New' });
      case 'New':
        if (outcome === 'FailedValidation') {
          return status({
            ...s,
            phase: 'FailedValidation',
            validationErrors: ['simulated validation error'],
          });
        }
        return status({
          ...s,
          phase: 'InProgress',
          startTimestamp: now,
          progress: { totalItems: 10, [itemsKey]: 5 },
        });
      case 'InProgress':
        if (outcome === HOLD) return NONE;
        return status({ ...s, phase: 'Finalizing', progress: { totalItems: 10, [itemsKey]: 10 } });
      case 'Finalizing': {
        const end = { ...s, completionTimestamp: now };
        if (outcome === 'PartiallyFailed')
          return status({ ...end, phase: 'PartiallyFailed', errors: 2, warnings: 1 });
        if (outcome === 'Failed')
          return status({ ...end, phase: 'Failed', failureReason: 'simulated failure' });
        return status({ ...end, phase: 'Completed', errors: 0, warnings: 0 });
      }
      default:
        return NONE;
    }
  };
}

function deleteBackupRequestStep(obj: Obj): Step {
  if (obj.status?.phase === 'Processed') return NONE;
  return {
    kind: 'delete-backup',
    backupName: str(obj.spec?.backupName) ?? '',
    status: { phase: 'Processed' },
  };
}

function workflowStep(obj: Obj, outcome: string | undefined, now: string): Step {
  const s = obj.status ?? {};
  const phase = str(s.phase) ?? '';
  const name = obj.metadata?.name ?? 'wf';
  const nodes = (rootPhase: string, podPhase: string, message?: string) => ({
    [name]: { id: name, name, displayName: name, type: 'Steps', phase: rootPhase, startedAt: now },
    [`${name}-1`]: {
      id: `${name}-1`,
      name: `${name}[0].main`,
      displayName: 'main',
      type: 'Pod',
      phase: podPhase,
      startedAt: now,
      ...(message ? { message } : {}),
    },
  });
  if (phase === 'Succeeded' || phase === 'Failed' || phase === 'Error') return NONE;
  const shutdown = str(obj.spec?.shutdown);
  if (shutdown && phase === 'Running') {
    const stopped = `Stopped with strategy '${shutdown}'`;
    return status({
      ...s,
      phase: 'Failed',
      finishedAt: now,
      message: stopped,
      nodes: nodes('Failed', 'Failed', stopped),
    });
  }
  if (phase === '' || phase === 'Pending') {
    return status({
      ...s,
      phase: 'Running',
      startedAt: now,
      progress: '0/1',
      nodes: nodes('Running', 'Running'),
    });
  }
  if (outcome === HOLD) return NONE;
  if (outcome === 'Failed' || outcome === 'Error') {
    const message = 'Error (exit code 1): simulated failure';
    return status({
      ...s,
      phase: outcome,
      finishedAt: now,
      progress: '0/1',
      message: 'child failed',
      nodes: nodes('Failed', outcome, message),
    });
  }
  return status({
    ...s,
    phase: 'Succeeded',
    finishedAt: now,
    progress: '1/1',
    nodes: nodes('Succeeded', 'Succeeded'),
  });
}

function condition(type: string, st: string, reason: string, message: string, now: string) {
  return [{ type, status: st, reason, message, lastTransitionTime: now }];
}

function volsyncStep(obj: Obj, outcome: string | undefined, now: string): Step {
  const s = obj.status ?? {};
  const trigger = str((obj.spec?.trigger as Record<string, unknown> | undefined)?.manual);
  if (!trigger || s.lastManualSync === trigger) return NONE;
  const mover = s.latestMoverStatus as Record<string, unknown> | undefined;
  if (mover?.result === 'Failed') return NONE;
  if (str(s.lastSyncStartTime) === undefined) {
    return status({
      ...s,
      lastSyncStartTime: now,
      conditions: condition('Synchronizing', 'True', 'SyncInProgress', 'Synchronization in-progress', now),
    });
  }
  if (outcome === HOLD) return NONE;
  if (outcome === 'Failed') {
    return status({ ...s, latestMoverStatus: { result: 'Failed', logs: 'Fatal: simulated mover failure' } });
  }
  return status({
    ...s,
    lastManualSync: trigger,
    lastSyncTime: now,
    lastSyncDuration: '1s',
    latestMoverStatus: { result: 'Successful', logs: 'simulated sync done' },
    conditions: condition('Synchronizing', 'False', 'WaitingForManual', 'Synchronization completed', now),
  });
}

function snapshotStep(obj: Obj, outcome: string | undefined, now: string): Step {
  const s = obj.status ?? {};
  if (s.readyToUse === true || s.error !== undefined) return NONE;
  if (s.boundVolumeSnapshotContentName === undefined) {
    return status({
      ...s,
      readyToUse: false,
      boundVolumeSnapshotContentName: `snapcontent-${obj.metadata?.uid ?? 'x'}`,
    });
  }
  if (outcome === HOLD) return NONE;
  if (outcome === 'Failed')
    return status({ ...s, error: { message: 'simulated CSI driver failure', time: now } });
  return status({ ...s, readyToUse: true, creationTime: now, restoreSize: '1Gi' });
}

export const SIMULATED_KINDS: readonly SimulatedKind[] = [
  {
    group: 'velero.io',
    version: 'v1',
    plural: 'backups',
    kind: 'Backup',
    statusSubresource: false,
    step: veleroStep('Backup'),
  },
  {
    group: 'velero.io',
    version: 'v1',
    plural: 'restores',
    kind: 'Restore',
    statusSubresource: false,
    step: veleroStep('Restore'),
  },
  {
    group: 'velero.io',
    version: 'v1',
    plural: 'deletebackuprequests',
    kind: 'DeleteBackupRequest',
    statusSubresource: false,
    step: deleteBackupRequestStep,
  },
  {
    group: 'argoproj.io',
    version: 'v1alpha1',
    plural: 'workflows',
    kind: 'Workflow',
    statusSubresource: false,
    step: workflowStep,
  },
  {
    group: 'volsync.backube',
    version: 'v1alpha1',
    plural: 'replicationsources',
    kind: 'ReplicationSource',
    statusSubresource: true,
    step: volsyncStep,
  },
  {
    group: 'volsync.backube',
    version: 'v1alpha1',
    plural: 'replicationdestinations',
    kind: 'ReplicationDestination',
    statusSubresource: true,
    step: volsyncStep,
  },
  {
    group: 'snapshot.storage.k8s.io',
    version: 'v1',
    plural: 'volumesnapshots',
    kind: 'VolumeSnapshot',
    statusSubresource: true,
    step: snapshotStep,
  },
];

export interface SimulatorOptions {
  /** Only objects in these namespaces (default: every namespace). */
  namespaces?: readonly string[];
  /** Pause between passes (default 200 ms). */
  intervalMs?: number;
  /** The time written into status (default: the wall clock). */
  now?: () => Date;
}

/** Polls the engine CRs and advances each by one step per pass. */
export class EngineSimulator {
  readonly #client: KubeClient;
  readonly #opts: SimulatorOptions;
  #running = false;
  #loop: Promise<void> | undefined;
  /** Errors of the last pass (e.g. a conflict), kept for debugging a stuck test. */
  lastErrors: string[] = [];

  constructor(client: KubeClient, opts: SimulatorOptions = {}) {
    this.#client = client;
    this.#opts = opts;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        await this.pass();
        await sleep(this.#opts.intervalMs ?? 200);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }

  /** One pass over every simulated kind; returns how many objects moved. */
  async pass(): Promise<number> {
    const errors: string[] = [];
    let moved = 0;
    const now = (this.#opts.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const opOutcomes = new Map<string, Promise<string | undefined>>();
    for (const k of SIMULATED_KINDS) {
      for (const obj of await this.#list(k, errors)) {
        try {
          const outcome =
            obj.metadata?.annotations?.[ANNOTATION_OUTCOME] ??
            (await this.#operationOutcome(obj, opOutcomes));
          const step = k.step(obj, outcome, now);
          if (step.kind === 'none') continue;
          if (step.kind === 'delete-backup') await this.#deleteBackup(obj, step);
          await this.#writeStatus(k, obj, step.status);
          moved++;
        } catch (err) {
          errors.push(`${k.kind} ${obj.metadata?.namespace}/${obj.metadata?.name}: ${String(err)}`);
        }
      }
    }
    this.lastErrors = errors;
    return moved;
  }

  async #list(k: SimulatedKind, errors: string[]): Promise<Obj[]> {
    const namespaces = this.#opts.namespaces ?? [undefined];
    const out: Obj[] = [];
    for (const namespace of namespaces) {
      try {
        const list = await this.#client.request<{ items?: Obj[] }>({
          method: 'GET',
          path: resourcePath({ ...k, namespace }),
        });
        out.push(...(list.items ?? []));
      } catch (err) {
        errors.push(`list ${k.plural}: ${String(err)}`);
      }
    }
    return out;
  }

  /** The outcome annotation of the Operation a child belongs to (by its operation labels). */
  #operationOutcome(obj: Obj, cache: Map<string, Promise<string | undefined>>): Promise<string | undefined> {
    const labels = obj.metadata?.labels ?? {};
    const name = labels[LABEL_OPERATION];
    const namespace = labels[LABEL_OPERATION_NAMESPACE] ?? obj.metadata?.namespace;
    if (!name || !namespace) return Promise.resolve(undefined);
    const key = `${namespace}/${name}`;
    let p = cache.get(key);
    if (!p) {
      p = this.#client
        .request<Obj>({ method: 'GET', path: resourcePath({ ...OPERATION, namespace }, name) })
        .then((op) => op.metadata?.annotations?.[ANNOTATION_OUTCOME])
        .catch(() => undefined);
      cache.set(key, p);
    }
    return p;
  }

  async #deleteBackup(dbr: Obj, step: Extract<Step, { kind: 'delete-backup' }>): Promise<void> {
    const namespace = dbr.metadata?.namespace;
    const path = resourcePath(
      { group: 'velero.io', version: 'v1', plural: 'backups', namespace },
      step.backupName,
    );
    try {
      const backup = await this.#client.request<Obj>({ method: 'GET', path });
      if (backup.status?.phase === 'InProgress') {
        step.status = { phase: 'Processed', errors: ['backup deletion failed: backup is still in progress'] };
        return;
      }
      await this.#client.request({ method: 'DELETE', path });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async #writeStatus(k: SimulatedKind, obj: Obj, status: Status): Promise<void> {
    const namespace = obj.metadata?.namespace;
    const name = obj.metadata?.name ?? '';
    // resourceVersion makes the patch fail on a concurrent change instead of overwriting it.
    await this.#client.request({
      method: 'PATCH',
      path: resourcePath({ ...k, namespace }, name, k.statusSubresource ? 'status' : undefined),
      contentType: PATCH_TYPES.merge,
      body: { metadata: { resourceVersion: obj.metadata?.resourceVersion }, status },
    });
  }
}
