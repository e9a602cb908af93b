// The compiled-in templates (DESIGN §3). The catalog may replace (same name) or disable any of them.
import type { Template } from '../template.ts';
import { helmHookMigration } from './helm-hook-migration.ts';
import { helmUpgrade } from './helm-upgrade.ts';
import { jobRunCommand } from './job-runcommand.ts';
import { snapshotBackup } from './snapshot-backup.ts';
import { snapshotRestore } from './snapshot-restore.ts';
import { snapshotVerify } from './snapshot-verify.ts';
import { veleroBackup } from './velero-backup.ts';
import { veleroRestore } from './velero-restore.ts';
import { veleroVerify } from './velero-verify.ts';
import { volsyncBackup } from './volsync-backup.ts';
import { volsyncRestore } from './volsync-restore.ts';
import { volsyncVerify } from './volsync-verify.ts';
import { workflowRunbook } from './workflow-runbook.ts';

export { DEFAULT_RUNNER_SERVICE_ACCOUNT } from './fragments.ts';
export { RUNCOMMAND_IMAGES } from './job-runcommand.ts';

export const BUILTIN_TEMPLATES: readonly Template[] = [
  veleroBackup,
  veleroRestore,
  veleroVerify,
  helmUpgrade,
  helmHookMigration,
  jobRunCommand,
  workflowRunbook,
  volsyncBackup,
  volsyncRestore,
  volsyncVerify,
  snapshotBackup,
  snapshotRestore,
  snapshotVerify,
];

export {
  helmHookMigration,
  helmUpgrade,
  jobRunCommand,
  snapshotBackup,
  snapshotRestore,
  snapshotVerify,
  veleroBackup,
  veleroRestore,
  veleroVerify,
  volsyncBackup,
  volsyncRestore,
  volsyncVerify,
  workflowRunbook,
};
