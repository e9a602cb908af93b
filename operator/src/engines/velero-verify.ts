// velero engine, Verify: a restore drill (ADR 0054). Restores a velero.io Backup of the instance — the one
// parameters.backupName names, else the newest Completed one made for this namespace — into a scratch
// namespace the operator creates for this attempt, runs the template's probe Job against the copy, and
// reports the verdict with the measured RTO (restore start → probe done) and the backup's age (RPO). The
// scratch namespace goes whatever the outcome (cleanup, below; a finalizer on the Operation covers its
// deletion). Pure.
//
// Children, created in this order: the scratch Namespace (its name is derived from the Operation's uid and
// attempt, never chosen by the requester; an existing namespace of that name that does not carry this
// Operation's uid label is a ChildConflict, never adopted, never deleted), the velero.io Restore (into it by
// namespaceMapping, the release's own objects only: no Helm release record, no ApplicationInstance), and the
// probe Job in the Operation's namespace, created suspended and resumed once the Restore completed. The probe
// reaches the copy through VWS_SCRATCH_NAMESPACE (e.g. `<service>.$VWS_SCRATCH_NAMESPACE.svc`), so the operator
// needs no rights inside the scratch namespace beyond creating and deleting it.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_BACKUP_COMPLETED_AT,
  FINALIZER_SCRATCH_NAMESPACE,
  LABEL_HELM_INSTANCE,
  LABEL_INSTANCE,
  LABEL_OPERATION_NAMESPACE,
  LABEL_SCRATCH_FOR,
} from '../api/annotations.ts';
import { OPERATION } from '../api/constants.ts';
import type { Operation } from '../api/operation.ts';
import { probeParameters } from './drill-probe.ts';
import { drillVerdict } from './drill-verdict.ts';
import { childMetadata, shortHash } from './names.ts';
import { asManifest, at, type Json, ofKind, str } from './object.ts';
import { failed, running } from './observation.ts';
import { runnerJob } from './runner-pod.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';
import { NEVER_BACKED_UP, VELERO_API_VERSION } from './velero-scope.ts';

/**
 * The probe's `envFrom` for `parameters.probeSecret` (ADR 0057): the Secret of the Operation's namespace, by
 * name. The operator never reads it; admission checked that the requester may `get` it, since the probe's
 * last lines reach status.
 */
export function probeSecretEnvFrom(parameters: Record<string, unknown>): { secretRef: { name: string } }[] {
  const name = str(parameters.probeSecret);
  return name ? [{ secretRef: { name } }] : [];
}

/** The probe's container in its Job's pod. */
export const PROBE_CONTAINER = 'probe';
export const SCRATCH_PREFIX = 'vws-verify-';
/** Backup phases a drill may restore: a PartiallyFailed backup is worth proving too (or disproving). */
const RESTORABLE = new Set(['Completed', 'PartiallyFailed']);

/**
 * The scratch namespace of an attempt: `vws-verify-<operation namespace>-<hash of uid and attempt>`, a DNS
 * label. Predictable in form (platforms can match the prefix), unpredictable in full before the
 * Operation exists (its uid), and never a requester's choice.
 */
export function scratchNamespace(op: Operation, attempt: number): string {
  const hash = shortHash(`${op.metadata.uid ?? ''}\n${attempt}\nscratch`);
  const room = 63 - SCRATCH_PREFIX.length - hash.length - 1;
  const middle = (op.metadata.namespace ?? '').slice(0, room).replace(/-+$/, '');
  return `${SCRATCH_PREFIX}${middle}-${hash}`;
}

export function materializeVerify(
  input: MaterializeInput,
  restoreMetadata: ChildManifest['metadata'],
  release: string,
): MaterializeResult {
  const { op, parameters, env, template, attempt } = input;
  const namespace = op.metadata.namespace ?? '';
  const instance = op.spec.targetRef.name;
  const backup = env.veleroBackup;
  const named = str(parameters.backupName);
  const backupName = named ?? backup?.name;
  if (!backupName) {
    return {
      ok: false,
      reason: 'BackupNotAllowed',
      message: `there is no Completed velero.io Backup of ApplicationInstance ${instance} made for namespace ${namespace} to verify; run a velero Backup Operation first`,
    };
  }
  // One message whether the Backup is missing or someone else's: no oracle for other teams' backup names.
  if (backup?.name !== backupName || backup.labels[LABEL_OPERATION_NAMESPACE] !== namespace) {
    return {
      ok: false,
      reason: 'BackupNotAllowed',
      message: `parameters.backupName: there is no velero.io Backup ${backupName} made for namespace ${namespace}; name the outputs.backupName of a Backup Operation of this namespace, or leave backupName out to verify the newest one`,
    };
  }
  if (!RESTORABLE.has(backup.phase ?? '')) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `parameters.backupName: velero.io Backup ${backupName} is ${backup.phase || 'New'}, not Completed; verify it once it has completed`,
    };
  }
  const probeRun = probeParameters(input);
  if (!probeRun.ok) return probeRun;
  const { image, command } = probeRun;
  const scratch = scratchNamespace(op, attempt);
  const ns: ChildManifest = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: childMetadata(op, {
      name: scratch,
      namespace: '',
      attempt,
      labels: { [LABEL_SCRATCH_FOR]: namespace, [LABEL_INSTANCE]: instance },
    }),
  };
  const restore: ChildManifest = {
    apiVersion: VELERO_API_VERSION,
    kind: 'Restore',
    metadata: {
      ...restoreMetadata,
      annotations: {
        ...restoreMetadata.annotations,
        ...(backup.completedAt ? { [ANNOTATION_BACKUP_COMPLETED_AT]: backup.completedAt } : {}),
      },
    },
    spec: {
      backupName,
      includedNamespaces: [namespace],
      namespaceMapping: { [namespace]: scratch },
      // The release's own objects: not Helm's release record (it names the source namespace: a restored copy
      // would be a second release record of the release), not the ApplicationInstance.
      orLabelSelectors: [{ matchLabels: { [LABEL_HELM_INSTANCE]: release } }],
      excludedResources: NEVER_BACKED_UP,
      restorePVs: true,
      existingResourcePolicy: 'none',
    },
  };
  const probe = runnerJob({
    op,
    template,
    env,
    attempt,
    containerName: PROBE_CONTAINER,
    image,
    command,
    serviceAccountName: 'default',
    nameSuffix: 'probe',
    suspend: true,
    envFrom: probeSecretEnvFrom(parameters),
    containerEnv: [
      { name: 'VWS_SCRATCH_NAMESPACE', value: scratch },
      { name: 'VWS_BACKUP_NAME', value: backupName },
      { name: 'VWS_RELEASE', value: release },
    ],
  });
  // The probe talks to the copy over the network; it needs no API access.
  const podSpec = at(probe, 'spec', 'template', 'spec') as Json;
  podSpec.automountServiceAccountToken = false;
  return { ok: true, children: [ns, restore, probe], prepare: [finalizerPatch(op, true)] };
}

/** The merge patch that puts the scratch-namespace finalizer on the Operation, or takes it off. */
function finalizerPatch(op: Operation, on: boolean): CancelAction {
  const others = (op.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_SCRATCH_NAMESPACE);
  return {
    kind: 'patch',
    child: {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: { name: op.metadata.name ?? '', namespace: op.metadata.namespace ?? '' },
    },
    patch: {
      metadata: {
        finalizers: on ? [...others, FINALIZER_SCRATCH_NAMESPACE] : others,
        // Optimistic concurrency: a finalizer someone added since is not dropped (409, then retried).
        ...(op.metadata.resourceVersion ? { resourceVersion: op.metadata.resourceVersion } : {}),
      },
    },
  };
}

/**
 * The drill's state. `restored` is the velero adapter's observation of the Restore child (velero.ts), so
 * what Velero's Restore status says of a damaged backup (phase, error count, failureReason) reaches the message.
 */
export function observeVerify(
  children: readonly KubernetesObject[],
  input: ObserveInput,
  restored: Observation,
): Observation {
  const ns = ofKind(children, 'Namespace')[0];
  const restore = ofKind(children, 'Restore')[0];
  const job = ofKind(children, 'Job')[0];
  const scratch = ns?.metadata?.name ?? '';
  const backupName = str(at(restore, 'spec', 'backupName')) ?? '';
  const outputs: Record<string, string> = {
    ...(scratch ? { scratchNamespace: scratch } : {}),
    ...(restore ? { restoreName: restore.metadata?.name ?? '', backupName } : {}),
    ...(job ? { probeJobName: job.metadata?.name ?? '' } : {}),
  };
  if (!restore) {
    // Right after creation the children are read from the API server, so a missing Restore beside a live
    // scratch namespace is one not visible yet; with the namespace going too, the drill was stopped.
    if (ns && !ns.metadata?.deletionTimestamp) {
      return running('VerifyRestoreInProgress', 'waiting for the velero.io Restore to appear', outputs);
    }
    return failed(
      'VerifyRestoreFailed',
      `the drill's velero.io Restore and scratch namespace${scratch ? ` ${scratch}` : ''} are gone (stopped or deleted); nothing was verified`,
      false,
      outputs,
    );
  }
  const created = restore.metadata?.creationTimestamp;
  return drillVerdict(restored, job, input, outputs, {
    backupName,
    where: `scratch namespace ${scratch}`,
    restoreStartedAt:
      str(at(restore, 'status', 'startTimestamp')) ?? (created ? new Date(created).toISOString() : undefined),
    backupCompletedAt: restore.metadata?.annotations?.[ANNOTATION_BACKUP_COMPLETED_AT],
  });
}

/** Cancel and deadline: stop the probe and drop the copy; the Restore is deleted (Velero stops tracking it). */
export function cancelVerify(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  const actions: CancelAction[] = [];
  for (const j of ofKind(children, 'Job')) {
    actions.push({ kind: 'delete', child: asManifest(j), propagationPolicy: 'Foreground' });
  }
  for (const r of ofKind(children, 'Restore')) {
    actions.push({ kind: 'delete', child: asManifest(r), propagationPolicy: 'Background' });
  }
  return [...actions, ...deleteScratch(children, op)];
}

/** The scratch namespaces among `children` that are the very ones this Operation created (recorded uid). */
function ownScratch(children: readonly KubernetesObject[], op: Operation): KubernetesObject[] {
  const recorded = new Set(
    (op.status?.childRefs ?? []).flatMap((r) => (r.kind === 'Namespace' && r.uid ? [r.uid] : [])),
  );
  return ofKind(children, 'Namespace').filter((n) => recorded.has(n.metadata?.uid ?? ''));
}

/**
 * The scratch namespaces this Operation created (the uid its status recorded) and not yet being deleted,
 * deleted by that uid: never one made since under the name, never one it did not create.
 */
function deleteScratch(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  return ownScratch(children, op)
    .filter((n) => !n.metadata?.deletionTimestamp)
    .map((n) => ({
      kind: 'delete' as const,
      child: { ...asManifest(n), metadata: { name: n.metadata?.name ?? '', namespace: '' } },
      propagationPolicy: 'Background' as const,
      ...(n.metadata?.uid ? { uid: n.metadata.uid } : {}),
    }));
}

/**
 * Once the Operation has ended or is being deleted: delete the scratch namespace; once its deletion has
 * begun (a namespace being deleted cannot be stopped, and the namespace controller finishes it without the
 * Operation) or it is gone, take the finalizer off.
 */
export const cleanupVerify: NonNullable<EngineAdapter['cleanup']> = (children, op) => {
  const actions = deleteScratch(children, op);
  if (actions.length > 0) return { actions, pending: true };
  const held = op.metadata.finalizers?.includes(FINALIZER_SCRATCH_NAMESPACE) === true;
  return { actions: held ? [finalizerPatch(op, false)] : [], pending: false };
};
