import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/**
 * velero.io/v1 Restore of a Backup made for the Operation's namespace, into that namespace only. A
 * tenant template: no cluster-scoped objects (no includeClusterResources; see allowClusterResources).
 */
export const veleroRestore: Template = {
  name: 'velero-restore',
  description:
    'Restores a velero.io Backup made for this namespace (by a Backup Operation here) into the Operation namespace with a velero.io Restore: the release objects only, no namespace mapping, no cluster-scoped objects besides the PersistentVolumes of restored claims. Without parameters.backupName, the latest Succeeded velero Backup Operation of the target.',
  type: 'Restore',
  engine: 'velero',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['backupName'],
    properties: {
      backupName: objectName(
        'Name of a velero.io Backup made for this namespace: the outputs.backupName of a Backup Operation here, or a Backup a platform admin labelled ops.vworkspace.io/operation-namespace=<this namespace>; unset: the backupName of the latest Succeeded velero Backup Operation of the target (recorded in status.inputs)',
      ),
      // Both policies stay a tenant's choice: either one only writes objects of this release into this
      // namespace, from a backup of this namespace; update merely returns existing ones to a state they had
      // here (docs/security/threat-model.md, "Velero Restore").
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
