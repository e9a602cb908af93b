import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { goDuration, objectName, outputSchema } from './fragments.ts';

/** velero.io/v1 Backup of the Operation's namespace, limited to the release's objects. */
export const veleroBackup: Template = {
  name: 'velero-backup',
  description:
    'Backs up the release with a velero.io Backup of the Operation namespace (label app.kubernetes.io/instance=<release>). outputs.backupName feeds a later Restore.',
  type: 'Backup',
  engine: 'velero',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      storageLocation: objectName(
        "Name of the Velero BackupStorageLocation to write to; unset uses Velero's default location",
      ),
      ttl: goDuration('How long Velero keeps the backup before garbage-collecting it', '720h'),
      quiesce: {
        type: 'string',
        description:
          'exec runs the chart quiesce hook (capability ops.vworkspace.io/quiesce: exec) as a Velero pre-hook before the backup; none backs up without it',
        enum: ['none', 'exec'],
        default: 'none',
      },
      includeClusterResources: {
        type: 'boolean',
        description:
          'false never backs up cluster-scoped objects; unset lets Velero include only the ones related to namespaced objects (such as PersistentVolumes); true (every cluster-scoped object carrying the release label) only with a template that sets allowClusterResources',
      },
      snapshotVolumes: {
        type: 'boolean',
        description: "Take volume snapshots of the release's PersistentVolumes; unset uses Velero's default",
      },
      defaultVolumesToFsBackup: {
        type: 'boolean',
        description: 'Back up pod volumes with file-system backup (Kopia) instead of snapshots',
      },
    },
  },
  outputSchema: outputSchema({
    backupName: 'Name of the velero.io Backup in the Velero namespace: the backupName of a later Restore',
  }),
  rbacProfile: 'backup.velero',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'backup', engine: 'velero' }] },
  defaults: { requireReady: false, retryLimit: 1, activeDeadlineSeconds: 14400 },
};
