import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/** The release's claims recreated from VolumeSnapshots (engines/snapshot-restore.ts). */
export const snapshotRestore: Template = {
  name: 'snapshot-restore',
  description:
    "Restores the release's PersistentVolumeClaims from CSI VolumeSnapshots: scales the release's Deployments and StatefulSets to 0, deletes each claim once no pod mounts it, recreates it (same name, labels and annotations) with the VolumeSnapshot as its dataSource, scales the workloads back and ends when the claims are Bound and the workloads ready. A claim's old volume follows its reclaim policy. Without snapshotName: the newest complete snapshot Backup of the instance.",
  type: 'Restore',
  engine: 'snapshot',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      snapshotName: objectName(
        "A readyToUse VolumeSnapshot of this namespace, of one of the release's claims (that claim alone is restored); unset: every claim of the newest complete snapshot Backup of the instance (VolumeSnapshots labelled ops.vworkspace.io/instance=<instance>, kept after their Backup Operation is gone)",
      ),
    },
  },
  outputSchema: outputSchema(
    { snapshotNames: 'The VolumeSnapshots restored from, one per claim (sorted by claim), comma-separated' },
    { '^snapshot\\.': 'snapshot.<pvc>: the VolumeSnapshot that claim was restored from' },
  ),
  rbacProfile: 'restore.snapshot',
  preconditions: standardPreconditions(),
  // `snapshot: snapshot` too, as snapshot-backup: an instance advertises one engine per verb, so one whose
  // `restore` is velero still offers its snapshots back through the snapshot verb.
  targetSelectors: {
    capabilities: [
      { verb: 'restore', engine: 'snapshot' },
      { verb: 'snapshot', engine: 'snapshot' },
    ],
  },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
