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
    "Restores a velero.io Backup of the instance into the Operation namespace with a velero.io Restore: the release's objects, its Helm release record and the ApplicationInstance, no cluster-scoped objects besides the PersistentVolumes of restored claims. Without spec.source: a Backup made for this namespace (parameters.backupName, else the latest Succeeded velero Backup Operation of the target). With spec.source: a Backup of the instance made in spec.source.namespace (parameters.backupName, else the newest Completed one), also when the instance is gone (the restore brings it back); another namespace's is a clone (namespace mapping), for a requester with the verb clone on the instance there.",
  type: 'Restore',
  engine: 'velero',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      backupName: objectName(
        'Name of a velero.io Backup made for this namespace (with spec.source: for spec.source.namespace): the outputs.backupName of a Backup Operation there, or a Backup a platform admin labelled ops.vworkspace.io/operation-namespace=<that namespace>. Unset: without spec.source the backupName of the latest Succeeded velero Backup Operation of the target (recorded in status.inputs); with spec.source the newest Completed velero Backup of the instance made there',
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
  // Clones (spec.source.namespace another namespace) only for a requester with the verb clone there.
  allowClone: true,
  rbacProfile: 'restore.velero',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'restore', engine: 'velero' }] },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 14400 },
};
