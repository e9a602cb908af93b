import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema, probeSecret } from './fragments.ts';
import { RUNCOMMAND_IMAGES } from './job-runcommand.ts';

/**
 * A restore drill (ADR 0054): a velero.io Backup of the instance restored into a scratch namespace the
 * operator creates and deletes, judged by a probe Job. The probe image is allowlisted like RunCommand's; a
 * catalog replaces this template (same name) to add the image its probe needs (e.g. one with psql).
 */
export const veleroVerify: Template = {
  name: 'velero-verify',
  description:
    "Restore drill: restores a velero.io Backup of the instance made for this namespace (parameters.backupName, else the newest Completed one) into a scratch namespace vws-verify-<namespace>-<hash> the operator creates for the drill, runs the probe Job (in the Operation's namespace, with VWS_SCRATCH_NAMESPACE naming the copy's namespace) once the restore completed, and reports the verdict, the measured RTO (restore start to probe done) and the backup's age (RPO) in outputs and in the instance's status.lastVerifiedBackup / lastDrill. The scratch namespace is deleted whatever the outcome.",
  type: 'Verify',
  engine: 'velero',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['command'],
    properties: {
      backupName: objectName(
        'Name of a velero.io Backup made for this namespace (the outputs.backupName of a Backup Operation here, or one a platform admin labelled ops.vworkspace.io/operation-namespace=<this namespace>). Unset: the newest Completed velero Backup of the instance made for this namespace',
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
          'The probe: a command run without a shell once the restore completed (e.g. ["sh", "-c", "until pg_isready -h db.$VWS_SCRATCH_NAMESPACE.svc; do sleep 2; done; psql … -c \'select count(*) …\'"]). Exit code 0 passes the drill; its last log lines are the verdict. It should wait for the restored pods itself. Environment: VWS_SCRATCH_NAMESPACE, VWS_BACKUP_NAME, VWS_RELEASE, and the keys of probeSecret',
        minItems: 1,
        maxItems: 64,
        items: { type: 'string', minLength: 1, maxLength: 4096 },
      },
      probeSecret: probeSecret(),
    },
  },
  outputSchema: outputSchema({
    verifiedBackup: 'The velero.io Backup the drill proved (set when it passed)',
    backupName: 'The velero.io Backup the drill restored',
    restoreName: 'The velero.io Restore in the Velero namespace',
    scratchNamespace: 'The scratch namespace the copy was restored into (deleted when the drill ends)',
    probeJobName: 'The probe Job (kubectl logs job/<probeJobName>)',
    probeOutput: "The probe's last log lines",
    verifiedAt: 'When the probe passed (RFC 3339)',
    rtoSeconds: 'Measured recovery time: seconds from the start of the restore to the probe passing',
    rpoSeconds: "The backup's age in seconds when the probe passed (its completion to the probe's)",
  }),
  rbacProfile: 'verify.velero',
  // A probe Secret that does not exist (yet) blocks the drill (MissingSecret) before anything is created.
  preconditions: standardPreconditions([{ name: 'RequiredSecretsPresent', parameter: 'probeSecret' }]),
  targetSelectors: { capabilities: [{ verb: 'restore', engine: 'velero' }] },
  // A drill reads backups and never touches the instance: it may run while the instance is not Ready.
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 3600 },
};
