import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';
import { RUNCOMMAND_IMAGES } from './job-runcommand.ts';

/**
 * A restore drill of a snapshot Backup (ADR 0054, ADR 0059): each VolumeSnapshot restored into a new claim
 * of the namespace, the probe Job mounting the copies, the claims deleted whatever the outcome. The probe
 * image is allowlisted like RunCommand's; a catalog replaces this template (same name) to add its own.
 */
export const snapshotVerify: Template = {
  name: 'snapshot-verify',
  description:
    "Restore drill of a snapshot Backup: restores each VolumeSnapshot of the instance's newest complete snapshot Backup (or parameters.snapshotName) into a new PersistentVolumeClaim of this namespace (the source snapshots are only read), runs the probe Job with the copies mounted at /restored/<claim>, and reports the verdict, the measured RTO (first copy created to probe done) and the snapshot's age (RPO) in outputs and in the instance's status.lastVerifiedBackup / lastDrill. The restored claims are deleted whatever the outcome.",
  type: 'Verify',
  engine: 'snapshot',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['command'],
    properties: {
      snapshotName: objectName(
        'A readyToUse VolumeSnapshot of this namespace made by a snapshot Backup of the instance (one of the outputs.snapshotNames of a Backup Operation here); unset: every VolumeSnapshot of the newest complete snapshot Backup of the instance',
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
          'The probe: a command run without a shell with the restored copies mounted (e.g. ["sh", "-c", "test -s $VWS_RESTORED_DIR/data-db-0/pgdata/PG_VERSION"]). Exit code 0 passes the drill; its last log lines are the verdict. Environment: VWS_RESTORED_DIR (each copy at <dir>/<claim>), VWS_SNAPSHOT_NAMES',
        minItems: 1,
        maxItems: 64,
        items: { type: 'string', minLength: 1, maxLength: 4096 },
      },
    },
  },
  outputSchema: outputSchema({
    verifiedBackup: 'The VolumeSnapshots the drill proved, comma-separated (set when it passed)',
    backupName: 'The VolumeSnapshots the drill restored, comma-separated',
    restoredClaims: 'The claims restored from them (deleted when the drill ends)',
    probeJobName: 'The probe Job (kubectl logs job/<probeJobName>)',
    probeOutput: "The probe's last log lines",
    verifiedAt: 'When the probe passed (RFC 3339)',
    rtoSeconds: 'Measured recovery time: seconds from the first restored claim created to the probe passing',
    rpoSeconds: "The backup's age in seconds when the probe passed (the snapshot's creation to the probe's)",
  }),
  rbacProfile: 'verify.snapshot',
  preconditions: standardPreconditions(),
  // As snapshot-restore: an instance whose `restore` is velero still offers its snapshots through `snapshot`.
  targetSelectors: {
    capabilities: [
      { verb: 'restore', engine: 'snapshot' },
      { verb: 'snapshot', engine: 'snapshot' },
    ],
  },
  // A drill reads backups and never touches the instance: it may run while the instance is not Ready.
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
