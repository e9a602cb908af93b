// velero engine, Restore: a velero.io Restore of a Backup of the instance, into the Operation's namespace.
//
// The Backup must have been made for the namespace the Restore reads from — its own, or spec.source's
// (label ops.vworkspace.io/operation-namespace, which only the operator and Velero's admins write in the
// Velero namespace): a tenant cannot restore another team's backup by naming it, and the message is the
// same whether it is missing or someone else's (no oracle for other teams' backup names). A Restore from
// spec.source also needs the Backup to be of the instance it names (label ops.vworkspace.io/instance):
// that is the instance the admission webhook checked the requester's `clone` on. Another namespace's
// Backup is a clone: Velero's namespaceMapping writes its objects into the Operation's namespace; only a
// template that allows clones runs one, and only for an Operation the webhook judged (created-by), since
// the reconciler cannot repeat the requester's SubjectAccessReview. Pure.
import { ANNOTATION_CREATED_BY, LABEL_INSTANCE, LABEL_OPERATION_NAMESPACE } from '../api/annotations.ts';
import { cloneDenial } from '../catalog/grants.ts';
import { type Json, str } from './object.ts';
import type { ChildManifest, MaterializeInput, MaterializeResult } from './types.ts';
import { NEVER_BACKED_UP, optional, releaseSelectors, VELERO_API_VERSION } from './velero-scope.ts';

export function materializeRestore(
  input: MaterializeInput,
  metadata: ChildManifest['metadata'],
  release: string,
): MaterializeResult {
  const { op, parameters, env } = input;
  const namespace = op.metadata.namespace ?? '';
  const source = op.spec.source?.namespace ?? namespace;
  const instance = op.spec.targetRef.name;
  if (source !== namespace) {
    const denial = cloneDenial(input.template, source, namespace);
    if (denial)
      return { ok: false, reason: 'NotAllowedByTemplate', message: `spec.source.namespace: ${denial}` };
    if (op.metadata.annotations?.[ANNOTATION_CREATED_BY] === undefined) {
      return {
        ok: false,
        reason: 'BackupNotAllowed',
        message: `spec.source.namespace: a clone of ${source}'s backups is only run for an Operation the admission webhook admitted (it checks that the requester may clone ApplicationInstance ${instance} there, which the operator cannot check again); create the Operation in a namespace the operator's webhook judges`,
      };
    }
  }
  const backup = env.veleroBackup;
  const backupName = str(parameters.backupName) ?? (op.spec.source ? backup?.name : undefined);
  if (!backupName) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: 'parameters.backupName names the velero.io Backup to restore; it is required',
    };
  }
  const ours =
    backup?.name === backupName &&
    backup.labels[LABEL_OPERATION_NAMESPACE] === source &&
    (!op.spec.source || backup.labels[LABEL_INSTANCE] === instance);
  if (!ours) {
    // One message whether the Backup is missing or made for someone else: no oracle for other teams' names.
    return {
      ok: false,
      reason: 'BackupNotAllowed',
      message: op.spec.source
        ? `parameters.backupName: there is no velero.io Backup ${backupName} of ApplicationInstance ${instance} made for namespace ${source}; leave backupName out to restore the newest one, or name one labelled ${LABEL_OPERATION_NAMESPACE}=${source},${LABEL_INSTANCE}=${instance}`
        : `parameters.backupName: there is no velero.io Backup ${backupName} made for namespace ${namespace} (a Backup Operation here labels its Backup ${LABEL_OPERATION_NAMESPACE}=${namespace}); name the outputs.backupName of a Backup Operation of this namespace, or ask a platform admin to label the Backup for it`,
    };
  }
  // Cluster-scoped objects only through a template a platform admin wrote for it (catalog/grants.ts).
  const clusterScoped = input.template.allowClusterResources === true ? ['includeClusterResources'] : [];
  const spec: Json = {
    backupName,
    includedNamespaces: [source],
    ...(source !== namespace ? { namespaceMapping: { [source]: namespace } } : {}),
    orLabelSelectors: releaseSelectors(release),
    excludedResources: NEVER_BACKED_UP,
    ...optional(parameters, ['existingResourcePolicy', 'restorePVs', ...clusterScoped]),
  };
  return { ok: true, children: [{ apiVersion: VELERO_API_VERSION, kind: 'Restore', metadata, spec }] };
}
