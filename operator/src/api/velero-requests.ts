// Velero deletes a Backup with its files only through a DeleteBackupRequest (deleting the Backup object
// leaves the files in the bucket). Cancel (engines/velero.ts) and retention (schedule/retention-pass.ts)
// both ask for it, so the request's shape lives here, below both.

/** The velero.io DeleteBackupRequest `name` in `namespace` for the Backup `backup`, with `labels` added. */
export function deleteBackupRequest(
  backup: { name: string; namespace: string; uid?: string | undefined },
  name: string,
  labels: Record<string, string> = {},
) {
  return {
    apiVersion: 'velero.io/v1',
    kind: 'DeleteBackupRequest',
    metadata: {
      name,
      namespace: backup.namespace,
      labels: {
        ...labels,
        'velero.io/backup-name': backup.name,
        ...(backup.uid ? { 'velero.io/backup-uid': backup.uid } : {}),
      },
    },
    spec: { backupName: backup.name },
  };
}
