// Well-known annotation and label keys (docs/labels-and-annotations.md describes each one).

import { OPS_GROUP } from './constants.ts';
import type { CapabilityVerb } from './enums.ts';

/** Prefix of capability annotations: `ops.vworkspace.io/<verb>: <engine>` on an ApplicationInstance. */
export const CAPABILITY_ANNOTATION_PREFIX = `${OPS_GROUP}/`;

export function capabilityAnnotation(verb: CapabilityVerb): string {
  return `${CAPABILITY_ANNOTATION_PREFIX}${verb}`;
}

/** "true" on an ApplicationInstance: reconciliation paused (set during maintenance). */
export const ANNOTATION_PAUSED = `${OPS_GROUP}/paused`;
/** "true" on an Operation with `policy.requiresApproval`: lets it leave Blocked/AwaitingApproval. */
export const ANNOTATION_APPROVE = `${OPS_GROUP}/approve`;
/** Written by the admission webhook when approve is set: the approving user, from the admission request. */
export const ANNOTATION_APPROVED_BY = `${OPS_GROUP}/approved-by`;
/** "true" on a CronOperation: the next scheduled run is skipped (the annotation is then removed). */
export const ANNOTATION_SKIP_NEXT = `${OPS_GROUP}/skip-next`;
/**
 * On a CronOperation: any new value (e.g. a timestamp) runs its operationTemplate now, once per value, like
 * `kubectl create job --from=cronjob/<name>`; status.manualRun records the value handled.
 */
export const ANNOTATION_RUN_NOW = `${OPS_GROUP}/run-now`;
/**
 * On a CronOperation or WatchOperation with spec.rollout: any new value (e.g. a timestamp) resumes its halted fleet run
 * (`kubectl vws resume`); failures before it no longer count. status.rollout.resumeRequest records it.
 */
export const ANNOTATION_RESUME = `${OPS_GROUP}/resume`;
/**
 * On a CronOperation or WatchOperation with spec.rollout: any new value ends its unfinished fleet run (`kubectl vws
 * abandon`); nothing more of it starts. status.rollout.abandonRequest records it.
 */
export const ANNOTATION_ABANDON = `${OPS_GROUP}/abandon`;
/** Any new value asks for an immediate reconcile of the object (e.g. a timestamp), like Flux's requestedAt. */
export const ANNOTATION_RECONCILE = `${OPS_GROUP}/reconcile`;

/**
 * Label on an engine child naming the Operation that owns it. Children in the Operation's namespace also
 * carry an owner reference; children elsewhere (a velero.io Backup lives in the Velero namespace) cannot,
 * so the label plus LABEL_OPERATION_NAMESPACE is how the operator finds and cleans them up.
 */
export const LABEL_OPERATION = `${OPS_GROUP}/operation`;
export const LABEL_OPERATION_NAMESPACE = `${OPS_GROUP}/operation-namespace`;
/**
 * On children outside the Operation's namespace (no owner reference possible): the Operation's uid. An
 * existing object of a child's name is adopted only when it carries this Operation's uid.
 */
export const LABEL_OPERATION_UID = `${OPS_GROUP}/operation-uid`;
/**
 * On every velero.io Backup the operator creates: the ApplicationInstance it backs up. With
 * LABEL_OPERATION_NAMESPACE it says whom the backup was made for; a Restore only accepts a Backup whose
 * LABEL_OPERATION_NAMESPACE is the Operation's namespace.
 */
export const LABEL_INSTANCE = `${OPS_GROUP}/instance`;
/**
 * The Helm release a thing belongs to. On an ApplicationInstance (set by the operator before it creates
 * a velero Backup of it): what the Backup's label selector finds it by, so the instance travels with
 * its release. On a velero.io Backup: the release it holds, for a Restore when the instance is gone.
 */
export const LABEL_RELEASE = `${OPS_GROUP}/release`;

/** "true" on a ConfigMap in the operator namespace: it holds a catalog (key CATALOG_CONFIGMAP_KEY). */
export const LABEL_CATALOG = `${OPS_GROUP}/catalog`;
export const CATALOG_CONFIGMAP_KEY = 'catalog.yaml';

/** Label on an Operation created by a CronOperation / WatchOperation: the creator's name. */
export const LABEL_CRON_OPERATION = `${OPS_GROUP}/cron-operation`;
export const LABEL_WATCH_OPERATION = `${OPS_GROUP}/watch-operation`;
/** Annotation on an Operation created by a CronOperation: the scheduled slot it runs (RFC 3339, UTC). */
export const ANNOTATION_SCHEDULED_TIME = `${OPS_GROUP}/scheduled-time`;
/**
 * Annotation on an Operation created by a WatchOperation (`label:<key>` or `field:<path>`) or a
 * CronOperation (`schedule`, or `manual` for a run-now request).
 */
export const ANNOTATION_TRIGGER = `${OPS_GROUP}/trigger`;

/**
 * Prefix of the processed mark a WatchOperation leaves on an ApplicationInstance when a trigger label
 * started an Operation, so the same label never triggers twice (the KEP's `-processed` annotation).
 * The full key is `processed.ops.vworkspace.io/<watch-operation-name>`; WatchOperation names are at most
 * 47 characters, well inside the 63-character name part of a key.
 */
export const WATCH_PROCESSED_ANNOTATION_PREFIX = `processed.${OPS_GROUP}/`;

export function watchProcessedAnnotation(watchOperationName: string): string {
  return `${WATCH_PROCESSED_ANNOTATION_PREFIX}${watchOperationName}`;
}

/** Written by the mutating webhook at CREATE on an Operation: the requesting user. Users cannot set or change it. */
export const ANNOTATION_CREATED_BY = `${OPS_GROUP}/created-by`;
/**
 * Written by the mutating webhook on an Operation when ops.vworkspace.io/reconcile gets a new value: the
 * requesting user, who passed the type verb on the target (a re-run is the action again). Users cannot
 * set or change it; the reconciler re-runs a failed Operation only for a request that carries it.
 */
export const ANNOTATION_RECONCILE_REQUESTED_BY = `${OPS_GROUP}/reconcile-requested-by`;
/**
 * Written by the operator on an Operation: the last ops.vworkspace.io/reconcile value it acted on, so
 * each new value is acted on exactly once (also across restarts).
 */
export const ANNOTATION_RECONCILE_HANDLED = `${OPS_GROUP}/reconcile-handled`;
/** On every engine child: the attempt (1 + retries) it belongs to. */
export const ANNOTATION_ATTEMPT = `${OPS_GROUP}/attempt`;
/**
 * On per-PVC engine children (snapshot, volsync): the PersistentVolumeClaim they copy or restore (an
 * annotation, not a label: PVC names may be longer than a label value).
 */
export const ANNOTATION_PVC = `${OPS_GROUP}/pvc`;
/** On a claim a snapshot Verify restored: the VolumeSnapshot it was made from. */
export const ANNOTATION_SNAPSHOT = `${OPS_GROUP}/snapshot`;
/** On helmHookJob children made from a Helm hook: the hook's name in the release record (the chart's Job name). */
export const ANNOTATION_HELM_HOOK = `${OPS_GROUP}/helm-hook`;
/** On helmHookJob children made from a Helm hook: `<step>/<steps>`, the place in the hook-weight order. */
export const ANNOTATION_HELM_HOOK_STEP = `${OPS_GROUP}/helm-hook-step`;
/**
 * On the rollback Job a helm Upgrade carries beside its runner (suspended until needed): the revision it
 * rolls the release back to, the newest one deployed when the Upgrade started.
 */
export const ANNOTATION_HELM_ROLLBACK_REVISION = `${OPS_GROUP}/helm-rollback-revision`;
/**
 * On the same rollback Job: the chart's hook Jobs (comma-separated names) the operator stopped because
 * helm had started them for the abandoned upgrade; the Operation's final message names them.
 */
export const ANNOTATION_HELM_STOPPED_HOOKS = `${OPS_GROUP}/helm-stopped-hooks`;
/**
 * Safe Upgrade (ADR 0055). On the post-check Job: "true" (it is the template's probe, not the runner). On
 * the rollback Job: `restore-on-failure` "true" when the template declares that the upgrade may change data,
 * and `rolled-back-from` the revision the release was on when the operator resumed it (status.rollback).
 */
export const ANNOTATION_POST_CHECK = `${OPS_GROUP}/post-check`;
export const ANNOTATION_RESTORE_ON_FAILURE = `${OPS_GROUP}/restore-on-failure`;
export const ANNOTATION_ROLLED_BACK_FROM = `${OPS_GROUP}/rolled-back-from`;
/** Helm's hook annotation on a chart's hook resource: the events it runs on, comma-separated. */
export const HELM_HOOK_ANNOTATION = 'helm.sh/hook';
/** "exec" on the release's pods that the Velero quiesce hook runs in (engine velero, parameter quiesce: exec). */
export const LABEL_QUIESCE = `${OPS_GROUP}/quiesce`;
/** On every generated RBAC profile ClusterRole: the profile id. */
export const LABEL_RBAC_PROFILE = `${OPS_GROUP}/rbac-profile`;
/** Standard label on every engine child, value MANAGED_BY. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'vworkspace-operator';

/** The label engines select release objects by (Velero label selector, PVC lookup). */
export const LABEL_HELM_INSTANCE = 'app.kubernetes.io/instance';
/**
 * On an argoproj.io Workflow child: how cancel stops it (`Stop` or `Terminate`, Argo's spec.shutdown),
 * from the template's workflowShutdown when the Workflow was created.
 */
export const ANNOTATION_SHUTDOWN = `${OPS_GROUP}/shutdown`;

/**
 * On an Operation a CronOperation or WatchOperation creates: a JSON array of the users it acts for (who
 * created or last edited the scheduler's spec, and for a run-now request who asked for it). Written by the
 * operator from the scheduler's stamps below and checked by the webhook; a tenant cannot set it. With the
 * template's separationOfDuties none of them may approve the Operation.
 */
export const ANNOTATION_ACTS_FOR = `${OPS_GROUP}/acts-for`;
/** Written by the mutating webhook on a CronOperation/WatchOperation: who created it or last changed its spec. */
export const ANNOTATION_EDITED_BY = `${OPS_GROUP}/edited-by`;
/** Written by the mutating webhook on a CronOperation: who set the current ops.vworkspace.io/run-now value. */
export const ANNOTATION_RUN_NOW_BY = `${OPS_GROUP}/run-now-by`;
/**
 * Written by the mutating webhook on an Operation: the signed record of its admission (the groups of the
 * creator and approver, and an HMAC over the namespace, spec and identity stamps with a key only the
 * operator holds). The reconciler runs nothing without a valid one (docs/adr/0029-signed-admission-stamps.md).
 */
export const ANNOTATION_ADMISSION = `${OPS_GROUP}/admission`;

/** On a Verify's scratch namespace (ADR 0054): the namespace of the Operation it was made for. */
export const LABEL_SCRATCH_FOR = `${OPS_GROUP}/scratch-for`;
/** On a Verify's velero Restore: when the Backup it restores completed (the drill's RPO starts there). */
export const ANNOTATION_BACKUP_COMPLETED_AT = `${OPS_GROUP}/backup-completed-at`;
/** On a volsync Verify's ReplicationDestinations (ADR 0060): the Backup Operation whose snapshot they restore. */
export const ANNOTATION_BACKUP_OPERATION = `${OPS_GROUP}/backup-operation`;
/** On a Verify Operation while its scratch namespace may exist: removed once it is gone. */
export const FINALIZER_SCRATCH_NAMESPACE = `${OPS_GROUP}/scratch-namespace`;
