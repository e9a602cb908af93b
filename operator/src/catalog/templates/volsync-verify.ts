import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema, resticRepository } from './fragments.ts';
import { RUNCOMMAND_IMAGES } from './job-runcommand.ts';

/**
 * A restore drill of a restic backup (ADR 0060): what a volsync Backup Operation wrote, restored into fresh
 * claims beside the instance's (never into them), judged by a probe Job that mounts the copies. The
 * repository is only read, with the Secret the Backup used, which the requester must be allowed to read.
 */
export const volsyncVerify: Template = {
  name: 'volsync-verify',
  description:
    "Restore drill of a restic backup: restores the snapshot a Succeeded volsync Backup Operation of the instance wrote (parameters.backupName, else the newest) into new claims of the namespace, one per claim of the release (the instance's own claims are never touched), with one VolSync ReplicationDestination each reading the Backup's repository Secret; then runs the probe Job with the copies mounted at /restored/<claim>, and reports the verdict, the measured RTO (restore start to probe done) and the backup's age (RPO) in outputs and in the instance's status.lastVerifiedBackup / lastDrill. The copies and ReplicationDestinations are deleted whatever the outcome.",
  type: 'Verify',
  engine: 'volsync',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['repository', 'command'],
    properties: {
      repository: {
        ...resticRepository,
        description: `${resticRepository.description}. The same Secret(s) the verified Backup Operation wrote with; the requester needs get on each`,
      },
      backupName: objectName(
        'Name of a Succeeded volsync Backup Operation of the instance in this namespace. Unset: the newest',
      ),
      image: {
        type: 'string',
        description: "The probe's container image, one of the allowlisted images",
        enum: [...RUNCOMMAND_IMAGES],
        default: RUNCOMMAND_IMAGES[0],
      },
      command: {
        type: 'array',
        description:
          'The probe: a command run without a shell once every claim is restored, with the copies mounted read-write at /restored/<claim> (e.g. start the database on the copy and count rows). Exit code 0 passes the drill; its last log lines are the verdict. Environment: VWS_RESTORED_DIR (/restored), VWS_CLAIMS (the claims, comma-separated), VWS_BACKUP_NAME',
        minItems: 1,
        maxItems: 64,
        items: { type: 'string', minLength: 1, maxLength: 4096 },
      },
    },
  },
  outputSchema: outputSchema({
    verifiedBackup: 'The volsync Backup Operation the drill proved (set when it passed)',
    backupName: 'The volsync Backup Operation the drill restored',
    replicationDestinations: 'The VolSync ReplicationDestinations, one per claim, comma-separated',
    restoredClaims: 'The claims the copies were restored into (deleted when the drill ends), comma-separated',
    probeJobName: 'The probe Job (kubectl logs job/<probeJobName>)',
    probeOutput: "The probe's last log lines",
    verifiedAt: 'When the probe passed (RFC 3339)',
    rtoSeconds: 'Measured recovery time: seconds from the start of the restore to the probe passing',
    rpoSeconds: "The backup's age in seconds when the probe passed (its completion to the probe's)",
  }),
  rbacProfile: 'verify.volsync',
  preconditions: standardPreconditions([{ name: 'RequiredSecretsPresent', parameter: 'repository' }]),
  // As volsync-restore: an instance whose restores are velero's may still replicate (back up) with volsync.
  targetSelectors: {
    capabilities: [
      { verb: 'restore', engine: 'volsync' },
      { verb: 'replicate', engine: 'volsync' },
    ],
  },
  // A drill reads backups and never touches the instance: it may run while the instance is not Ready.
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
