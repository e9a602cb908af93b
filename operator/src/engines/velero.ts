// velero engine: a velero.io/v1 Backup or Restore in Velero's namespace, limited to the Operation's
// namespace and to what brings the instance back (releaseSelectors: the release's objects, Helm's release
// record, the ApplicationInstance). Owner references cannot cross namespaces, so the child carries the
// operation / operation-namespace / operation-uid labels instead.
//
// A Backup is labelled with the namespace, instance and release it was made for (and records the
// instance's restore capability); a Restore accepts only a Backup labelled for the namespace it reads
// from (velero-restore.ts), so a tenant cannot restore another team's backup or an admin's full-cluster
// one into their namespace. A platform admin hands a backup to a namespace by labelling it
// ops.vworkspace.io/operation-namespace=<namespace>.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  capabilityAnnotation,
  LABEL_HELM_INSTANCE,
  LABEL_INSTANCE,
  LABEL_RELEASE,
} from '../api/annotations.ts';
import type { Reason } from '../api/reasons.ts';
import { deleteBackupRequest } from '../api/velero-requests.ts';
import { refuseUngranted } from './grants.ts';
import { materializeRestore } from './velero-restore.ts';
import {
  instanceLabelPatch,
  NEVER_BACKED_UP,
  optional,
  releaseSelectors,
  VELERO_API_VERSION,
} from './velero-scope.ts';
import {
  cancelVerify,
  cleanupVerify,
  materializeVerify,
  observeVerify,
  PROBE_CONTAINER,
} from './velero-verify.ts';

export { instanceLabelPatch, NEVER_BACKED_UP, releaseSelectors, VELERO_API_VERSION };

/**
 * The quiesce convention (capability `ops.vworkspace.io/quiesce: exec`): the chart labels the pods that
 * must be quiesced with QUIESCE_POD_LABEL=exec and ships two executables in their first container.
 * Velero runs the first before backing the pod up (a failure fails the backup: no inconsistent copy)
 * and the second afterwards (a failure only warns: the data is already safe).
 */
import { LABEL_QUIESCE as QUIESCE_POD_LABEL } from '../api/annotations.ts';
import { childMetadata, childName, cronOperationLabel, NAME_LIMITS, releaseOf } from './names.ts';
import { arr, asManifest, at, type Json, num, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';
export { QUIESCE_POD_LABEL };
export const QUIESCE_COMMAND = ['/vworkspace/hooks/quiesce'];
export const UNQUIESCE_COMMAND = ['/vworkspace/hooks/unquiesce'];
export const QUIESCE_HOOK_TIMEOUT = '5m';

type Kind = 'Backup' | 'Restore';

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, target, parameters, env, attempt } = input;
  const refused = refuseUngranted(input);
  if (refused) return refused;
  const namespace = op.metadata.namespace ?? '';
  const release = releaseOf(target);
  const scope = {
    includedNamespaces: [namespace],
    orLabelSelectors: releaseSelectors(release.name),
    excludedResources: NEVER_BACKED_UP,
  };
  const restoreCapability = target.metadata.annotations?.[capabilityAnnotation('restore')];
  const metadata = childMetadata(op, {
    name: childName(op, attempt, NAME_LIMITS.velero),
    namespace: env.veleroNamespace,
    attempt,
    ...(op.spec.type === 'Backup'
      ? {
          labels: {
            [LABEL_INSTANCE]: target.metadata.name ?? '',
            [LABEL_RELEASE]: release.name,
            ...cronOperationLabel(op),
          },
          // What a Restore of the instance, once it is gone, is judged on (operation/restore-source.ts).
          ...(restoreCapability
            ? { annotations: { [capabilityAnnotation('restore')]: restoreCapability } }
            : {}),
        }
      : {}),
  });
  if (op.spec.type === 'Restore') return materializeRestore(input, metadata, release.name);
  if (op.spec.type === 'Verify') return materializeVerify(input, metadata, release.name);
  if (op.spec.type !== 'Backup') {
    return {
      ok: false,
      reason: 'TemplateNotFound',
      message: `the velero engine runs Backup, Restore and Verify, not ${op.spec.type}`,
    };
  }
  const spec: Json = {
    ...scope,
    ...optional(parameters, [
      'storageLocation',
      'ttl',
      'snapshotVolumes',
      'defaultVolumesToFsBackup',
      'includeClusterResources',
    ]),
  };
  if (parameters.quiesce === 'exec') {
    if (target.metadata.annotations?.[capabilityAnnotation('quiesce')] !== 'exec') {
      return {
        ok: false,
        reason: 'CapabilityMissing',
        message: `parameters.quiesce is exec but ApplicationInstance ${target.metadata.name} does not advertise ${capabilityAnnotation('quiesce')}: exec; set quiesce: none or add the capability to its catalog entry`,
      };
    }
    spec.hooks = {
      resources: [
        {
          name: 'vworkspace-quiesce',
          includedNamespaces: [namespace],
          labelSelector: {
            matchLabels: { [LABEL_HELM_INSTANCE]: release.name, [QUIESCE_POD_LABEL]: 'exec' },
          },
          pre: [{ exec: { command: QUIESCE_COMMAND, onError: 'Fail', timeout: QUIESCE_HOOK_TIMEOUT } }],
          post: [
            { exec: { command: UNQUIESCE_COMMAND, onError: 'Continue', timeout: QUIESCE_HOOK_TIMEOUT } },
          ],
        },
      ],
    };
  }
  const label = instanceLabelPatch(target, release.name);
  return {
    ok: true,
    children: [{ apiVersion: VELERO_API_VERSION, kind: 'Backup', metadata, spec }],
    ...(label ? { prepare: [label] } : {}),
  };
}

/** Not picked up yet: Velero (v1.17+) queues Backups before it starts them (Queued, with a position). */
const NOT_STARTED = new Set(['', 'New', 'Queued']);
/**
 * In Velero's hands: it cannot stop them, and refuses a DeleteBackupRequest for a Backup in these
 * phases ("backup deletion failed: backup is still in progress"; the request ends Processed and is never retried).
 */
const IN_FLIGHT = new Set([
  'ReadyToStart',
  'InProgress',
  'WaitingForPluginOperations',
  'WaitingForPluginOperationsPartiallyFailed',
  'Finalizing',
  'FinalizingPartiallyFailed',
]);
const IN_PROGRESS = new Set([...NOT_STARTED, ...IN_FLIGHT]);
const FINISHED = new Set(['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation']);

function reasonsFor(kind: Kind): Record<'progress' | 'completed' | 'partial' | 'failed', Reason> {
  return kind === 'Backup'
    ? {
        progress: 'VeleroBackupInProgress',
        completed: 'VeleroBackupCompleted',
        partial: 'VeleroBackupPartiallyFailed',
        failed: 'VeleroBackupFailed',
      }
    : {
        progress: 'VeleroRestoreInProgress',
        completed: 'VeleroRestoreCompleted',
        partial: 'VeleroRestorePartiallyFailed',
        failed: 'VeleroRestoreFailed',
      };
}

/** "with 2 error(s) and 1 warning(s)"; empty when both are zero. */
function counts(child: KubernetesObject): string {
  const errors = num(at(child, 'status', 'errors')) ?? 0;
  const warnings = num(at(child, 'status', 'warnings')) ?? 0;
  return errors + warnings > 0 ? ` with ${errors} error(s) and ${warnings} warning(s)` : '';
}

function progress(child: KubernetesObject): string {
  const done =
    num(at(child, 'status', 'progress', 'itemsBackedUp')) ??
    num(at(child, 'status', 'progress', 'itemsRestored'));
  const total = num(at(child, 'status', 'progress', 'totalItems'));
  return done !== undefined && total !== undefined ? ` (${done}/${total} items)` : '';
}

function observe(children: readonly KubernetesObject[], input: ObserveInput): Observation {
  if (input.op.spec.type === 'Verify') return observeVerify(children, input, observeChild(children, input));
  return observeChild(children, input);
}

function observeChild(
  children: readonly KubernetesObject[],
  input: Pick<MaterializeInput, 'op'>,
): Observation {
  const kind: Kind = input.op.spec.type === 'Backup' ? 'Backup' : 'Restore';
  const r = reasonsFor(kind);
  const child = ofKind(children, kind)[0];
  if (!child) return running(r.progress, `waiting for the velero.io ${kind} to appear`);
  const name = child.metadata?.name ?? '';
  const ns = child.metadata?.namespace ?? '';
  const outputs: Record<string, string> =
    kind === 'Backup'
      ? { backupName: name }
      : { restoreName: name, backupName: str(at(child, 'spec', 'backupName')) ?? '' };
  const phase = str(at(child, 'status', 'phase')) ?? '';
  const what = `velero.io ${kind} ${ns}/${name}`;
  const cli = `velero ${kind.toLowerCase()} describe ${name} --details`;
  if (kind === 'Backup' && input.op.spec.cancel && (FINISHED.has(phase) || phase === 'Deleting')) {
    // Cancelling: a Backup that finished before it could be stopped is deleted with its files (cancel
    // files the request); the Operation ends Cancelled once it is gone.
    return running(
      r.progress,
      `${what} ${phase === 'Deleting' ? 'is being deleted' : `${phase}${counts(child)}`} after spec.cancel`,
      outputs,
    );
  }
  if (IN_PROGRESS.has(phase)) {
    const partial = phase.endsWith('PartiallyFailed') ? ' (some items already failed)' : '';
    const position = num(at(child, 'status', 'queuePosition'));
    const queued = phase === 'Queued' && position ? ` (position ${position} in Velero's backup queue)` : '';
    return running(r.progress, `${what} is ${phase || 'New'}${queued}${progress(child)}${partial}`, outputs);
  }
  if (phase === 'Completed') return succeeded(r.completed, `${what} Completed${counts(child)}`, outputs);
  if (phase === 'PartiallyFailed') {
    return failed(
      r.partial,
      `${what} PartiallyFailed${counts(child)}; see \`${cli}\` and its logs`,
      true,
      outputs,
    );
  }
  if (phase === 'FailedValidation') {
    const errs = arr(at(child, 'status', 'validationErrors')).filter(
      (e): e is string => typeof e === 'string',
    );
    return failed(
      r.failed,
      `${what} FailedValidation: ${errs.join('; ') || 'no detail'}; fix the parameters (e.g. storageLocation) and create a new Operation`,
      false,
      outputs,
    );
  }
  if (phase === 'Failed') {
    const why = str(at(child, 'status', 'failureReason'));
    return failed(
      r.failed,
      `${what} Failed${counts(child)}${why ? `: ${why}` : ''}; see \`${cli}\` and its logs`,
      true,
      outputs,
    );
  }
  if (phase === 'Deleting') {
    return failed(
      r.failed,
      `${what} is being deleted (a DeleteBackupRequest or its TTL expired) before the Operation finished`,
      false,
      outputs,
    );
  }
  return running(
    r.progress,
    `${what} reports phase ${phase}, which this operator does not know; waiting`,
    outputs,
  );
}

/**
 * Velero cannot stop a Backup in flight, and refuses to delete one (a DeleteBackupRequest then ends
 * Processed with "backup deletion failed: backup is still in progress" and is never retried). So cancel waits while the Backup
 * is in flight, and files a DeleteBackupRequest once Velero would carry it out: before the Backup
 * started, or after it finished; Velero then deletes the Backup with its files in the bucket (and its
 * volume snapshots). The Operation ends Cancelled when the Backup is gone. A Restore is deleted (Velero
 * stops tracking it; objects already restored stay).
 */
function cancel(children: readonly KubernetesObject[], input?: ObserveInput): CancelAction[] {
  if (input?.op.spec.type === 'Verify') return cancelVerify(children, input.op);
  const actions: CancelAction[] = [];
  for (const b of ofKind(children, 'Backup')) {
    const name = b.metadata?.name ?? '';
    const ns = b.metadata?.namespace ?? '';
    const what = `velero.io Backup ${ns}/${name}`;
    const phase = str(at(b, 'status', 'phase')) ?? '';
    const requestName = `${name}-cancel`;
    if (IN_FLIGHT.has(phase)) {
      actions.push({
        kind: 'wait',
        message: `Velero cannot stop a Backup in flight, nor delete one before it finished: ${what} is ${phase}${progress(b)}; once it finished, it is deleted with its files (DeleteBackupRequest ${ns}/${requestName})`,
      });
      continue;
    }
    if (phase === 'Deleting') {
      actions.push({ kind: 'wait', message: `Velero is deleting ${what} and its files` });
      continue;
    }
    const request: ChildManifest = deleteBackupRequest(
      { name, namespace: ns, uid: b.metadata?.uid },
      requestName,
      b.metadata?.labels,
    );
    actions.push({ kind: 'create', object: request });
    actions.push({
      kind: 'wait',
      message: NOT_STARTED.has(phase)
        ? `${what} had not started (${phase || 'New'}); deleting it (DeleteBackupRequest ${ns}/${requestName})`
        : `${what} ${phase} before it could be stopped (Velero cannot stop a Backup in flight); deleting it with its files (DeleteBackupRequest ${ns}/${requestName})`,
    });
  }
  for (const r of ofKind(children, 'Restore'))
    actions.push({ kind: 'delete', child: asManifest(r), propagationPolicy: 'Background' });
  return actions;
}

export const veleroAdapter: EngineAdapter = {
  engine: 'velero',
  types: ['Backup', 'Restore', 'Verify'],
  // A Verify's scratch Namespace is a child too, read by name (no informer: namespaces are cluster-wide).
  childKinds: [
    { apiVersion: VELERO_API_VERSION, kind: 'Backup', plural: 'backups' },
    { apiVersion: VELERO_API_VERSION, kind: 'Restore', plural: 'restores' },
    { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs' },
  ],
  materialize,
  observe,
  cancel,
  podOutcomeContainer: PROBE_CONTAINER,
  cleanup: (children, op) =>
    op.spec.type === 'Verify' ? cleanupVerify(children, op) : { actions: [], pending: false },
};
