import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { outputSchema, resticRepository } from './fragments.ts';

/** volsync.backube/v1alpha1 ReplicationDestination (restic) per PVC of the release, writing into the PVC. */
export const volsyncRestore: Template = {
  name: 'volsync-restore',
  description:
    'Restores every PersistentVolumeClaim of the release from a restic repository with one VolSync ReplicationDestination per PVC, writing into the existing claim.',
  type: 'Restore',
  engine: 'volsync',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['repository'],
    properties: {
      repository: resticRepository,
      restoreAsOf: {
        type: 'string',
        format: 'date-time',
        description: 'Restore the newest snapshot taken at or before this time (RFC 3339); unset: the newest',
      },
      previous: {
        type: 'integer',
        format: 'int32',
        minimum: 0,
        maximum: 1000,
        description: 'Skip this many snapshots back from the one restoreAsOf selects (0: that one)',
      },
    },
  },
  outputSchema: outputSchema({
    replicationDestinations: 'Names of the VolSync ReplicationDestinations, one per PVC, comma-separated',
  }),
  rbacProfile: 'restore.volsync',
  preconditions: standardPreconditions([{ name: 'RequiredSecretsPresent', parameter: 'repository' }]),
  targetSelectors: {
    capabilities: [
      { verb: 'restore', engine: 'volsync' },
      { verb: 'replicate', engine: 'volsync' },
    ],
  },
  defaults: { requireReady: true, retryLimit: 0, activeDeadlineSeconds: 14400 },
};
