// The velero Backup a Restore restores, and — for a Restore with spec.source whose ApplicationInstance is
// gone — the instance as that Backup recorded it (docs/disaster-recovery.md, ADR 0035). Pure.
//
// The Backup is the one parameters.backupName names, else (spec.source) the newest Completed velero Backup
// labelled for the source namespace and the instance: Velero's namespace is the record that survives the
// loss of the application's namespace, where the Backup Operations lived. The stand-in instance carries
// what the Backup recorded when it was made: the release (label ops.vworkspace.io/release) and the
// instance's restore capability (annotation ops.vworkspace.io/restore), so the preconditions judge the
// Restore on what the instance said of itself, not on anything the requester writes now.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  capabilityAnnotation,
  LABEL_INSTANCE,
  LABEL_OPERATION_NAMESPACE,
  LABEL_RELEASE,
} from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { APPLICATION_INSTANCE } from '../api/constants.ts';
import type { Operation } from '../api/operation.ts';
import type { EngineEnvironment } from '../engines/types.ts';

export type RestoreBackup = NonNullable<EngineEnvironment['veleroBackup']>;

/** The namespace whose backups a Restore reads: spec.source.namespace, else its own. */
export function sourceNamespace(op: Operation): string {
  return op.spec.source?.namespace ?? op.metadata.namespace ?? '';
}

const time = (b: KubernetesObject, field: string) =>
  String((b as { status?: Record<string, unknown> }).status?.[field] ?? b.metadata?.creationTimestamp ?? '');

/** The newest Completed Backup of `instance` made for `namespace` among `items`, as a RestoreBackup. */
export function newestBackup(
  items: readonly KubernetesObject[],
  namespace: string,
  instance: string,
): RestoreBackup | undefined {
  const done = items.filter(
    (b) =>
      b.metadata?.labels?.[LABEL_OPERATION_NAMESPACE] === namespace &&
      b.metadata?.labels?.[LABEL_INSTANCE] === instance &&
      (b as { status?: { phase?: string } }).status?.phase === 'Completed',
  );
  const newest = done.sort((a, b) =>
    time(b, 'completionTimestamp').localeCompare(time(a, 'completionTimestamp')),
  )[0];
  return newest && asRestoreBackup(newest);
}

const phaseOf = (b: KubernetesObject) => (b as { status?: { phase?: string } }).status?.phase;
const completedAt = (b: KubernetesObject) =>
  (b as { status?: { completionTimestamp?: string } }).status?.completionTimestamp;

export function asRestoreBackup(b: KubernetesObject): RestoreBackup {
  return {
    name: b.metadata?.name ?? '',
    labels: { ...b.metadata?.labels },
    ...(b.metadata?.annotations ? { annotations: { ...b.metadata.annotations } } : {}),
    ...(phaseOf(b) ? { phase: phaseOf(b) } : {}),
    ...(completedAt(b) ? { completedAt: completedAt(b) } : {}),
  };
}

/** The stand-in for an absent target, or why there is none (PreconditionFacts.absentTarget). */
export function recordedInstance(
  op: Operation,
  backup: RestoreBackup | undefined,
): { recorded?: ApplicationInstance; problem: string } {
  const name = op.spec.targetRef.name;
  const ns = op.metadata.namespace ?? '';
  const source = sourceNamespace(op);
  if (!backup) {
    return {
      problem: `ApplicationInstance ${name} does not exist in namespace ${ns}, and there is no Completed velero.io Backup of it made for namespace ${source} to bring it back${op.spec.parameters?.backupName ? ` named ${String(op.spec.parameters.backupName)}` : ''}; list them with \`kubectl get backups.velero.io -n <velero namespace> -l ${LABEL_OPERATION_NAMESPACE}=${source},${LABEL_INSTANCE}=${name}\``,
    };
  }
  const release = backup.labels[LABEL_RELEASE];
  if (!release || backup.labels[LABEL_INSTANCE] !== name) {
    return {
      problem: `ApplicationInstance ${name} does not exist in namespace ${ns}, and velero.io Backup ${backup.name} does not record it (labels ${LABEL_INSTANCE}=${name} and ${LABEL_RELEASE}: it was made of another instance, or before backups carried the instance); recreate the ApplicationInstance first, then restore`,
    };
  }
  const restore = backup.annotations?.[capabilityAnnotation('restore')];
  return {
    problem: '',
    recorded: {
      apiVersion: APPLICATION_INSTANCE.apiVersion,
      kind: APPLICATION_INSTANCE.kind,
      metadata: {
        name,
        namespace: ns,
        annotations: restore ? { [capabilityAnnotation('restore')]: restore } : {},
      },
      spec: { appRef: { catalogId: '' }, release: { name: release } },
    },
  };
}
