import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema, resticRepository } from './fragments.ts';

const retain = {
  type: 'object',
  description:
    "How many restic snapshots to keep per period (restic forget policy, run by VolSync after each backup). Unset: every snapshot is kept (the operator passes last: unlimited; VolSync's own default would forget all but the newest)",
  additionalProperties: false,
  properties: Object.fromEntries(
    ['hourly', 'daily', 'weekly', 'monthly', 'yearly'].map((p) => [
      p,
      { type: 'integer', format: 'int32', minimum: 0, maximum: 1000, description: `${p} snapshots to keep` },
    ]),
  ),
};

/** volsync.backube/v1alpha1 ReplicationSource (restic) per PVC of the release, triggered manually. */
export const volsyncBackup: Template = {
  name: 'volsync-backup',
  description:
    "Backs up every PersistentVolumeClaim of the release to a restic repository with one VolSync ReplicationSource per PVC (trigger.manual = the Operation's name); done when every lastManualSync matches.",
  type: 'Backup',
  engine: 'volsync',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['repository'],
    properties: {
      repository: resticRepository,
      copyMethod: {
        type: 'string',
        description: 'How VolSync gets a point-in-time copy of each volume before reading it',
        enum: ['Snapshot', 'Clone', 'Direct'],
        default: 'Snapshot',
      },
      volumeSnapshotClassName: objectName(
        'VolumeSnapshotClass for copyMethod Snapshot; unset uses the default class',
      ),
      storageClassName: objectName('StorageClass of the temporary copy; unset uses the source PVC class'),
      retain,
    },
  },
  outputSchema: outputSchema({
    replicationSources: 'Names of the VolSync ReplicationSources, one per PVC, comma-separated',
  }),
  rbacProfile: 'backup.volsync',
  preconditions: standardPreconditions([{ name: 'RequiredSecretsPresent', parameter: 'repository' }]),
  targetSelectors: {
    capabilities: [
      { verb: 'backup', engine: 'volsync' },
      { verb: 'replicate', engine: 'volsync' },
    ],
  },
  defaults: { requireReady: false, retryLimit: 1, activeDeadlineSeconds: 14400 },
};
