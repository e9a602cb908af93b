import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/** snapshot.storage.k8s.io/v1 VolumeSnapshot per PVC of the release; done when all are readyToUse. */
export const snapshotBackup: Template = {
  name: 'snapshot-backup',
  description:
    'Takes a CSI VolumeSnapshot of every PersistentVolumeClaim of the release; done when all are readyToUse. outputs lists the snapshot names.',
  type: 'Backup',
  engine: 'snapshot',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      volumeSnapshotClassName: objectName(
        'VolumeSnapshotClass to use; unset uses the default class of the driver',
      ),
    },
  },
  outputSchema: outputSchema(
    { snapshotNames: 'Names of the VolumeSnapshots, one per PVC (sorted by PVC), comma-separated' },
    { '^snapshot\\.': 'snapshot.<pvc>: the VolumeSnapshot of that PVC (the source of a later restore)' },
  ),
  rbacProfile: 'backup.snapshot',
  preconditions: standardPreconditions(),
  targetSelectors: {
    capabilities: [
      { verb: 'snapshot', engine: 'snapshot' },
      { verb: 'backup', engine: 'snapshot' },
    ],
  },
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
