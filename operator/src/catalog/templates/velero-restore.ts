import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/** velero.io/v1 Restore of a Backup into the Operation's namespace. */
export const veleroRestore: Template = {
  name: 'velero-restore',
  description:
    'Restores a velero.io Backup of this release into the Operation namespace with a velero.io Restore (no namespace mapping); without parameters.backupName, the latest Succeeded velero Backup Operation of the target.',
  type: 'Restore',
  engine: 'velero',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['backupName'],
    properties: {
      backupName: objectName(
        'Name of the velero.io Backup to restore, e.g. the outputs.backupName of a Backup Operation; unset: the backupName of the latest Succeeded velero Backup Operation of the target (recorded in status.inputs)',
      ),
      existingResourcePolicy: {
        type: 'string',
        description:
          'What to do with objects that already exist: none leaves them as they are, update overwrites them with the backed-up version',
        enum: ['none', 'update'],
        default: 'none',
      },
      restorePVs: {
        type: 'boolean',
        description: 'Restore PersistentVolumes from their snapshots or file-system backups',
        default: true,
      },
      includeClusterResources: {
        type: 'boolean',
        description:
          'true also restores cluster-scoped objects from the backup, false never; unset lets Velero decide',
      },
    },
  },
  outputSchema: outputSchema({
    restoreName: 'Name of the velero.io Restore in the Velero namespace',
    backupName: 'Name of the velero.io Backup it restored',
  }),
  // Velero's `restore create --from-schedule`, generalized: without backupName, restore the latest backup.
  parametersFrom: [{ latest: { type: 'Backup', engine: 'velero' }, outputs: [{ output: 'backupName' }] }],
  rbacProfile: 'restore.velero',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'restore', engine: 'velero' }] },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 14400 },
};
