// Test-object builders for the scheduling tests.
import type { CronOperation, CronOperationSpec } from '../api/index.ts';

/** CronOperation team/nightly (uid-1, created 2025-06-01): hourly velero Backups of shop. */
export function cronOp(
  spec: Partial<CronOperationSpec> = {},
  annotations?: Record<string, string>,
  generation = 1,
): CronOperation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'CronOperation',
    metadata: {
      name: 'nightly',
      namespace: 'team',
      uid: 'uid-1',
      generation,
      creationTimestamp: '2025-06-01T00:00:00Z' as unknown as Date,
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      schedule: '0 * * * *',
      timeZone: 'UTC',
      operationTemplate: {
        metadata: { labels: { kind: 'nightly' } },
        spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
      },
      ...spec,
    },
  };
}
