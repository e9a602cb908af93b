// volsync engine: one volsync.backube/v1alpha1 ReplicationSource (Backup) or ReplicationDestination
// (Restore) per PVC of the release, each with a manual trigger. VolSync runs one sync per new trigger
// value and then copies it to status.lastManualSync: that match is "done".
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_PVC, childMetadata, childName, NAME_LIMITS } from './names.ts';
import { asManifest, at, type Json, nameOf, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { releasePvcs } from './pvcs.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';
import { PROBE_CONTAINER } from './velero-verify.ts';
import { claimRepositories } from './volsync-repositories.ts';
import {
  cancelVolsyncVerify,
  cleanupVolsyncVerify,
  materializeVolsyncVerify,
  observeVolsyncVerify,
} from './volsync-verify.ts';

export const VOLSYNC_API_VERSION = 'volsync.backube/v1alpha1';
const SOURCE = 'ReplicationSource';
const DESTINATION = 'ReplicationDestination';

/** The manual trigger: the Operation's name qualified by the attempt, so a retry is a new sync. */
export function manualTrigger(opName: string, attempt: number): string {
  return `${opName}-${attempt}`;
}

function pick(parameters: Json, keys: readonly string[]): Json {
  const out: Json = {};
  for (const k of keys) if (parameters[k] !== undefined) out[k] = parameters[k];
  return out;
}

/**
 * The mover section. restic (the built-in templates) reads/writes a repository Secret; rsync-tls (a
 * catalog template may offer `method: rsync-tls` with `address`, `keySecret`, `port`) streams to or
 * from a peer VolSync.
 */
function mover(
  parameters: Json,
  restore: boolean,
  pvc: string,
  repository: string | undefined,
): { key: string; value: Json } {
  if (parameters.method === 'rsync-tls') {
    const common = pick(parameters, ['keySecret', 'port']);
    return restore
      ? { key: 'rsyncTLS', value: { ...common, destinationPVC: pvc, copyMethod: 'Direct' } }
      : {
          key: 'rsyncTLS',
          value: {
            ...common,
            ...pick(parameters, ['address', 'copyMethod', 'volumeSnapshotClassName', 'storageClassName']),
          },
        };
  }
  return restore
    ? {
        key: 'restic',
        value: {
          repository,
          destinationPVC: pvc,
          copyMethod: 'Direct',
          ...pick(parameters, ['restoreAsOf', 'previous']),
        },
      }
    : {
        key: 'restic',
        value: {
          repository,
          ...pick(parameters, ['copyMethod', 'volumeSnapshotClassName', 'storageClassName']),
          retain: parameters.retain ?? KEEP_EVERY_SNAPSHOT,
        },
      };
}

/**
 * Without a retain policy VolSync's restic mover runs `restic forget --host volsync --keep-last 1` after
 * every backup, and every snapshot it makes has that host and the same path: each Backup Operation would
 * forget all the snapshots before it. Backup data is only deleted by a retention someone chose
 * (docs/adr/0034), so unless parameters.retain says otherwise every snapshot is kept (restic ≥ 0.16.4
 * reads `unlimited`; VolSync passes `last` through as it is).
 */
export const KEEP_EVERY_SNAPSHOT = { last: 'unlimited' };

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, parameters, attempt } = input;
  const restore = op.spec.type === 'Restore';
  if (op.spec.type === 'Verify') {
    if (parameters.method === 'rsync-tls') {
      return {
        ok: false,
        reason: 'InvalidParameters',
        message: 'a volsync Verify drills a restic backup; method rsync-tls has no backup to restore',
      };
    }
    return materializeVolsyncVerify(input, manualTrigger(op.metadata.name ?? '', attempt));
  }
  if (!restore && op.spec.type !== 'Backup') {
    return {
      ok: false,
      reason: 'TemplateNotFound',
      message: `the volsync engine runs Backup, Restore and Verify, not ${op.spec.type}`,
    };
  }
  const restic = parameters.method !== 'rsync-tls';
  if (restic && parameters.repository === undefined) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: 'parameters.repository (the restic repository Secret) is required',
    };
  }
  const found = releasePvcs(input, 'volsync');
  if (!found.ok) return found;
  const repositories = restic ? claimRepositories(parameters.repository, found.pvcs) : undefined;
  if (repositories && !repositories.ok) return repositories;
  const trigger = manualTrigger(op.metadata.name ?? '', attempt);
  const children: ChildManifest[] = found.pvcs.map((pvc) => {
    const m = mover(parameters, restore, pvc, repositories?.byClaim.get(pvc));
    return {
      apiVersion: VOLSYNC_API_VERSION,
      kind: restore ? DESTINATION : SOURCE,
      metadata: childMetadata(op, {
        name: childName(op, attempt, NAME_LIMITS.volsync, pvc),
        attempt,
        annotations: { [ANNOTATION_PVC]: pvc },
      }),
      spec: { ...(restore ? {} : { sourcePVC: pvc }), trigger: { manual: trigger }, [m.key]: m.value },
    };
  });
  return { ok: true, children };
}

function observe(children: readonly KubernetesObject[], input: ObserveInput): Observation {
  if (input.op.spec.type === 'Verify') {
    return observeVolsyncVerify(children, input, observeSyncs(ofKind(children, DESTINATION)));
  }
  return observeSyncs(children);
}

function observeSyncs(children: readonly KubernetesObject[]): Observation {
  const all = [...ofKind(children, SOURCE), ...ofKind(children, DESTINATION)];
  if (all.length === 0) return running('VolSyncSyncInProgress', 'waiting for the VolSync objects to appear');
  const kind = all[0]?.kind ?? SOURCE;
  const outputs = {
    [kind === SOURCE ? 'replicationSources' : 'replicationDestinations']: all.map(nameOf).join(','),
  };
  const pending: string[] = [];
  for (const c of all) {
    const trigger = str(at(c, 'spec', 'trigger', 'manual'));
    if (trigger !== undefined && str(at(c, 'status', 'lastManualSync')) === trigger) continue;
    // VolSync records a failed mover run here before it retries; the Operation decides about retrying.
    if (str(at(c, 'status', 'latestMoverStatus', 'result')) === 'Failed') {
      const logs = str(at(c, 'status', 'latestMoverStatus', 'logs'));
      const pvc = c.metadata?.annotations?.[ANNOTATION_PVC];
      return failed(
        'VolSyncSyncFailed',
        `${kind} ${nameOf(c)}${pvc ? ` (PVC ${pvc})` : ''} failed to sync${logs ? `: ${lastLine(logs)}` : ''}; see the mover Job's logs`,
        true,
        outputs,
      );
    }
    pending.push(nameOf(c));
  }
  if (pending.length === 0)
    return succeeded(
      'VolSyncSyncCompleted',
      `all ${all.length} ${kind}(s) finished the manual sync`,
      outputs,
    );
  return running(
    'VolSyncSyncInProgress',
    `${all.length - pending.length}/${all.length} ${kind}(s) synced; waiting for ${pending.join(', ')}`,
    outputs,
  );
}

/** Mover logs can be long; the last non-empty line usually says what went wrong. */
function lastLine(logs: string): string {
  const lines = logs
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return (lines[lines.length - 1] ?? '').slice(0, 512);
}

/**
 * Deleting a ReplicationSource/Destination stops its sync: the garbage collector then removes what VolSync
 * made for it (mover Job and pods, cache PVC, ServiceAccount, Role). In the background, not Foreground:
 * VolSync's reconciler does not look at deletionTimestamp, so while a foreground deletion waits for the
 * Job it keeps recreating the Job and cache PVC, and the owner can stay in deletion for minutes (seen with
 * VolSync v0.14.0, docs/adr/0020-volsync-on-the-real-node.md). Once the owner is gone, VolSync stops.
 */
function cancel(children: readonly KubernetesObject[], input?: ObserveInput): CancelAction[] {
  if (input?.op.spec.type === 'Verify') return cancelVolsyncVerify(children, input.op);
  return [...ofKind(children, SOURCE), ...ofKind(children, DESTINATION)].map((c) => ({
    kind: 'delete',
    child: asManifest(c),
    propagationPolicy: 'Background',
  }));
}

export const volsyncAdapter: EngineAdapter = {
  engine: 'volsync',
  types: ['Backup', 'Restore', 'Verify'],
  // A Verify's restored claims are children too, read by name (no informer: nothing waits on their events).
  childKinds: [
    { apiVersion: VOLSYNC_API_VERSION, kind: SOURCE, plural: 'replicationsources' },
    { apiVersion: VOLSYNC_API_VERSION, kind: DESTINATION, plural: 'replicationdestinations' },
    { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' },
  ],
  materialize,
  observe,
  cancel,
  podOutcomeContainer: PROBE_CONTAINER,
  cleanup: (children, op) =>
    op.spec.type === 'Verify' ? cleanupVolsyncVerify(children, op) : { actions: [], pending: false },
};
