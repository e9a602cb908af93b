// snapshot engine, Backup: one snapshot.storage.k8s.io/v1 VolumeSnapshot per PVC of the release; done
// when every one is readyToUse AND released. Restore: snapshot-restore.ts.
//
// A VolumeSnapshot is backup data, not a child to garbage-collect (docs/adr/0034): it is created with the
// Operation as its controller owner (the proof adoption asks for, and so that a snapshot still being cut
// goes with a cancelled or deleted Operation), and once the whole set is readyToUse the owner reference is
// removed before the Operation reports Succeeded. From then on no history limit, TTL or deletion of the
// Operation or its CronOperation deletes it; its labels (instance, operation, operation-uid) say whose
// backup it is, and the Operation follows it by the uid its status recorded.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_INSTANCE, LABEL_OPERATION_UID } from '../api/annotations.ts';
import { OPERATION } from '../api/constants.ts';
import { ANNOTATION_PVC, childMetadata, childName, cronOperationLabel, NAME_LIMITS } from './names.ts';
import { asManifest, at, nameOf, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { releasePvcs } from './pvcs.ts';
import { cancelRestore, materializeRestore, observeRestore } from './snapshot-restore.ts';
import {
  cancelSnapshotVerify,
  cleanupSnapshotVerify,
  materializeSnapshotVerify,
  observeSnapshotVerify,
} from './snapshot-verify.ts';
import type {
  CancelAction,
  ChildAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
} from './types.ts';
import { PROBE_CONTAINER } from './velero-verify.ts';

export const SNAPSHOT_API_VERSION = 'snapshot.storage.k8s.io/v1';

function materialize(input: MaterializeInput): MaterializeResult {
  if (input.op.spec.type === 'Restore') return materializeRestore(input);
  if (input.op.spec.type === 'Verify') return materializeSnapshotVerify(input);
  return snapshotBackup(input, str(input.parameters.volumeSnapshotClassName));
}

/** A VolumeSnapshot of each of the release's claims: a snapshot Backup, or a Safe Upgrade's backup. */
export function snapshotBackup(input: MaterializeInput, className: string | undefined): MaterializeResult {
  const { op, attempt } = input;
  const found = releasePvcs(input, 'snapshot');
  if (!found.ok) return found;
  const children: ChildManifest[] = found.pvcs.map((pvc) => ({
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: childMetadata(op, {
      name: childName(op, attempt, NAME_LIMITS.snapshot, pvc),
      attempt,
      labels: {
        [LABEL_INSTANCE]: input.target.metadata.name ?? '',
        ...(op.metadata.uid ? { [LABEL_OPERATION_UID]: op.metadata.uid } : {}),
        ...cronOperationLabel(op),
      },
      annotations: { [ANNOTATION_PVC]: pvc },
    }),
    spec: {
      source: { persistentVolumeClaimName: pvc },
      ...(className ? { volumeSnapshotClassName: className } : {}),
    },
  }));
  return { ok: true, children };
}

/** outputs: snapshotNames (comma-separated, by PVC) and `snapshot.<pvc>: <name>` for a later restore. */
function outputsOf(snaps: readonly KubernetesObject[]): Record<string, string> {
  const byPvc = snaps
    .map((s) => ({ pvc: pvcOf(s), name: nameOf(s) }))
    .sort((a, b) => a.pvc.localeCompare(b.pvc));
  const out: Record<string, string> = { snapshotNames: byPvc.map((s) => s.name).join(',') };
  for (const s of byPvc) if (s.pvc) out[`snapshot.${s.pvc}`] = s.name;
  return out;
}

function pvcOf(s: KubernetesObject): string {
  return (
    s.metadata?.annotations?.[ANNOTATION_PVC] ??
    str(at(s, 'spec', 'source', 'persistentVolumeClaimName')) ??
    ''
  );
}

/** The state of a set of VolumeSnapshots: Succeeded once all are readyToUse and released from the Operation. */
export function observeSnapshots(children: readonly KubernetesObject[]): Observation {
  const snaps = ofKind(children, 'VolumeSnapshot');
  if (snaps.length === 0)
    return running('VolumeSnapshotInProgress', 'waiting for the VolumeSnapshots to appear');
  const outputs = outputsOf(snaps);
  for (const s of snaps) {
    const error = str(at(s, 'status', 'error', 'message'));
    if (error) {
      return failed(
        'VolumeSnapshotFailed',
        `VolumeSnapshot ${nameOf(s)} failed: ${error}; check the VolumeSnapshotClass and the CSI driver (kubectl describe volumesnapshot ${nameOf(s)})`,
        true,
        outputs,
      );
    }
  }
  const pending = snaps.filter((s) => at(s, 'status', 'readyToUse') !== true).map(nameOf);
  if (pending.length === 0) {
    const owned = snaps.filter(ownedByAnOperation);
    if (owned.length > 0) {
      return {
        ...running(
          'VolumeSnapshotInProgress',
          `all ${snaps.length} VolumeSnapshot(s) are readyToUse; releasing ${owned.map(nameOf).join(', ')} from the Operation, so that the backup outlives it`,
          outputs,
        ),
        actions: owned.map(release),
      };
    }
    return succeeded(
      'VolumeSnapshotReadyToUse',
      `all ${snaps.length} VolumeSnapshot(s) are readyToUse and kept: deleting the Operation does not delete them`,
      outputs,
    );
  }
  return running(
    'VolumeSnapshotInProgress',
    `${snaps.length - pending.length}/${snaps.length} VolumeSnapshot(s) readyToUse; waiting for ${pending.join(', ')}`,
    outputs,
  );
}

function ownedByAnOperation(s: KubernetesObject): boolean {
  return (s.metadata?.ownerReferences ?? []).some(
    (r) => r.kind === OPERATION.kind && r.apiVersion.startsWith(`${OPERATION.group}/`),
  );
}

/** The merge patch that removes the owner reference: the garbage collector no longer deletes it. */
function release(s: KubernetesObject): ChildAction {
  return { kind: 'patch', child: asManifest(s), patch: { metadata: { ownerReferences: null } } };
}

/**
 * Deleting a VolumeSnapshot that is still being cut lets the snapshot controller abandon or remove it. A
 * cancel (or deadline) only reaches a set that is not complete, whose snapshots are no backup yet.
 */
function cancel(children: readonly KubernetesObject[]): CancelAction[] {
  return ofKind(children, 'VolumeSnapshot').map((s) => ({
    kind: 'delete',
    child: asManifest(s),
    propagationPolicy: 'Background',
  }));
}

export const snapshotAdapter: EngineAdapter = {
  engine: 'snapshot',
  types: ['Backup', 'Restore', 'Verify'],
  childKinds: [
    { apiVersion: SNAPSHOT_API_VERSION, kind: 'VolumeSnapshot', plural: 'volumesnapshots' },
    // A Restore's child: its plan (snapshot-restore.ts).
    { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
    // A Verify's probe (snapshot-verify.ts); its restored claims are read by name (no informer).
    { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' },
  ],
  materialize,
  observe: (children, input) => {
    if (input.op.spec.type === 'Restore') return observeRestore(children, input);
    if (input.op.spec.type === 'Verify') return observeSnapshotVerify(children, input);
    return observeSnapshots(children);
  },
  cancel: (children, input) => {
    if (input?.op.spec.type === 'Restore') return cancelRestore(children, input);
    if (input?.op.spec.type === 'Verify') return cancelSnapshotVerify(children, input.op);
    return cancel(children);
  },
  podOutcomeContainer: PROBE_CONTAINER,
  cleanup: (children, op) =>
    op.spec.type === 'Verify' ? cleanupSnapshotVerify(children, op) : { actions: [], pending: false },
};
