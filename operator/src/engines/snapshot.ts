// snapshot engine: one snapshot.storage.k8s.io/v1 VolumeSnapshot per PVC of the release; done when
// every one is readyToUse.
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_PVC, childMetadata, childName, NAME_LIMITS } from './names.ts';
import { asManifest, at, nameOf, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { releasePvcs } from './pvcs.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
} from './types.ts';

export const SNAPSHOT_API_VERSION = 'snapshot.storage.k8s.io/v1';

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, parameters, attempt } = input;
  const found = releasePvcs(input, 'snapshot');
  if (!found.ok) return found;
  const className = str(parameters.volumeSnapshotClassName);
  const children: ChildManifest[] = found.pvcs.map((pvc) => ({
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: childMetadata(op, {
      name: childName(op, attempt, NAME_LIMITS.snapshot, pvc),
      attempt,
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

function observe(children: readonly KubernetesObject[]): Observation {
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
  if (pending.length === 0)
    return succeeded(
      'VolumeSnapshotReadyToUse',
      `all ${snaps.length} VolumeSnapshot(s) are readyToUse`,
      outputs,
    );
  return running(
    'VolumeSnapshotInProgress',
    `${snaps.length - pending.length}/${snaps.length} VolumeSnapshot(s) readyToUse; waiting for ${pending.join(', ')}`,
    outputs,
  );
}

/** Deleting a VolumeSnapshot that is still being cut lets the snapshot controller abandon or remove it. */
function cancel(children: readonly KubernetesObject[]): CancelAction[] {
  return ofKind(children, 'VolumeSnapshot').map((s) => ({
    kind: 'delete',
    child: asManifest(s),
    propagationPolicy: 'Background',
  }));
}

export const snapshotAdapter: EngineAdapter = {
  engine: 'snapshot',
  types: ['Backup'],
  childKinds: [{ apiVersion: SNAPSHOT_API_VERSION, kind: 'VolumeSnapshot', plural: 'volumesnapshots' }],
  materialize,
  observe,
  cancel,
};
