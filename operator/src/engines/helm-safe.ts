// helm engine, Safe Upgrade (ADR 0055): a helm Upgrade whose template sets `safety`. Pure.
//
//   1. backup (safety.backup): a VolumeSnapshot of each of the release's claims, taken by this Operation;
//      the runner Job is created suspended and resumed once they are all readyToUse (and released from the
//      Operation, like a snapshot Backup's: backup data outlives it);
//   2. the upgrade: the helm runner, with its suspended rollback Job, exactly as a plain Upgrade (helm.ts,
//      helm-rollback.ts);
//   3. post-check (safety.postCheck): the template's probe Job, created suspended, resumed once the runner
//      completed; exit 0 keeps the new revision;
//   4. when the upgrade or the post-check fails (or a stop comes after helm finished): the rollback Job is
//      resumed towards the revision the Upgrade started from (helm --atomic already did it when the runner
//      itself failed), then, with safety.restoreOnFailure, the claims are recreated in place from the
//      snapshots of step 1 (snapshot-restore.ts: its plan becomes a further child, `adopt`);
//   5. the rollback or the restore failing ends the Operation Failed/RollbackFailed, saying what to run; it
//      is never retried.
//
// Every step is read back from the children: the probe carries ops.vworkspace.io/post-check, the rollback
// Job ops.vworkspace.io/restore-on-failure (the template's choice, fixed when the Upgrade started) and, once
// the operator resumed it, ops.vworkspace.io/rolled-back-from. Only the snapshots this Operation took are
// ever restored.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_HELM_ROLLBACK_REVISION,
  ANNOTATION_POST_CHECK,
  ANNOTATION_RESTORE_ON_FAILURE,
  ANNOTATION_ROLLED_BACK_FROM,
} from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { RollbackRecord } from '../api/operation.ts';
import type { Reason } from '../api/reasons.ts';
import { isRollbackJob } from './helm-rollback.ts';
import { asManifest, at, type Json, nameOf, ofKind } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { cancelJobs, describeOutcomes, jobFailed, jobFinished, neverRan, runnerJob } from './runner-pod.ts';
import { observeSnapshots } from './snapshot.ts';
import { materializeRestore, observeRestore } from './snapshot-restore.ts';
import type { CancelAction, ChildManifest, MaterializeInput, Observation, ObserveInput } from './types.ts';

/** The RBAC profile a Safe Upgrade with a backup needs: snapshots and the in-place restore (rbac/profiles.ts). */
export const SAFE_UPGRADE_PROFILE = 'safeUpgrade.helm';
/** The post-check's container in its Job's pod. */
export const POST_CHECK_CONTAINER = 'post-check';
/** How often a Safe Upgrade looks at its snapshots again (their readiness is not a Job event). */
export const SAFE_RECHECK_MS = 5_000;

export function isPostCheckJob(job: KubernetesObject): boolean {
  return job.metadata?.annotations?.[ANNOTATION_POST_CHECK] === 'true';
}

/** Whether these are a Safe Upgrade's children: its rollback Job says whether it restores. */
export function isSafeUpgrade(children: readonly KubernetesObject[]): boolean {
  return ofKind(children, 'Job').some(
    (j) => isRollbackJob(j) && j.metadata?.annotations?.[ANNOTATION_RESTORE_ON_FAILURE] !== undefined,
  );
}

/** The annotations that make a rollback Job a Safe Upgrade's. */
export function safeRollbackAnnotations(restoreOnFailure: boolean): Record<string, string> {
  return { [ANNOTATION_RESTORE_ON_FAILURE]: String(restoreOnFailure) };
}

/** The template's post-check, as a suspended Job beside the runner (Verify's probe, the same runner pod). */
export function postCheckJob(
  input: MaterializeInput,
  check: { image: string; command: readonly string[] },
  revisionBefore: number,
  release: string,
): ChildManifest {
  const job = runnerJob({
    op: input.op,
    template: input.template,
    env: input.env,
    attempt: input.attempt,
    containerName: POST_CHECK_CONTAINER,
    image: check.image,
    command: [...check.command],
    serviceAccountName: 'default',
    nameSuffix: 'post-check',
    suspend: true,
    annotations: { [ANNOTATION_POST_CHECK]: 'true' },
    containerEnv: [
      { name: 'VWS_RELEASE', value: release },
      { name: 'VWS_NAMESPACE', value: input.op.metadata.namespace ?? '' },
      { name: 'VWS_REVISION_BEFORE', value: String(revisionBefore) },
    ],
  });
  // The check talks to the release over the network; it needs no API access.
  (at(job, 'spec', 'template', 'spec') as Json).automountServiceAccountToken = false;
  return job;
}

interface SafeChildren {
  runner?: KubernetesObject;
  rollback?: KubernetesObject;
  probe?: KubernetesObject;
  snapshots: KubernetesObject[];
  plan: KubernetesObject[];
}

function split(children: readonly KubernetesObject[]): SafeChildren {
  const jobs = ofKind(children, 'Job');
  const rollback = jobs.find(isRollbackJob);
  const probe = jobs.find(isPostCheckJob);
  const runner = jobs.find((j) => j !== rollback && j !== probe);
  return {
    ...(runner ? { runner } : {}),
    ...(rollback ? { rollback } : {}),
    ...(probe ? { probe } : {}),
    snapshots: ofKind(children, 'VolumeSnapshot'),
    plan: ofKind(children, 'ConfigMap'),
  };
}

/** Why the release is being put back, as the final condition will say it. */
interface Cause {
  reason: Reason;
  message: string;
}

const resume = (job: KubernetesObject, annotations?: Record<string, string>): CancelAction => ({
  kind: 'patch',
  child: asManifest(job),
  patch: { ...(annotations ? { metadata: { annotations } } : {}), spec: { suspend: false } },
});

const revisionOf = (rollback: KubernetesObject | undefined) =>
  Number(rollback?.metadata?.annotations?.[ANNOTATION_HELM_ROLLBACK_REVISION] ?? 0);

/** The release the rollback Job rolls back: its last argument is the revision, the one before the release. */
function releaseOf(rollback: KubernetesObject): string {
  const args = at(rollback, 'spec', 'template', 'spec', 'containers') as Json[] | undefined;
  const list = (args?.[0]?.args as string[] | undefined) ?? [];
  return list.at(-2) ?? '<release>';
}

/**
 * The Operation's state. `helm` is the plain Upgrade's observation (runner and rollback Job, helm.ts);
 * `stop`: a cancel or the deadline asks the Upgrade to end now — after helm finished, that puts it back too.
 */
export function observeSafe(
  children: readonly KubernetesObject[],
  input: ObserveInput,
  helm: (jobs: readonly KubernetesObject[]) => Observation,
  stop: boolean,
): Observation {
  const c = split(children);
  const helmJobs = [c.runner, c.rollback].filter((j): j is KubernetesObject => j !== undefined);
  const backup = c.snapshots.map(nameOf).sort().join(',');
  const restores = c.rollback?.metadata?.annotations?.[ANNOTATION_RESTORE_ON_FAILURE] === 'true';
  const record = (r: Omit<RollbackRecord, 'toRevision' | 'restore'> & Partial<RollbackRecord>) => ({
    toRevision: revisionOf(c.rollback),
    ...(backup ? { backup } : {}),
    restore: restores ? ('InProgress' as const) : ('NotDeclared' as const),
    ...r,
  });

  // 1. The backup, before anything touches the release.
  if (c.runner && c.snapshots.length > 0 && neverRan(c.runner)) {
    if (stop) {
      const end = 'the upgrade had not started: the release and its data were not touched';
      return { ...failed('HelmUpgradeFailed', `stopped before the upgrade: ${end}`, false), stopped: end };
    }
    const b = observeSnapshots(c.snapshots);
    if (b.phase === 'Failed') {
      return failed(
        b.reason as Reason,
        `the pre-upgrade backup failed, so the release was not upgraded: ${b.message}`,
        b.retryable ?? true,
      );
    }
    if (b.phase === 'Running') {
      return {
        ...running(b.reason as Reason, `pre-upgrade backup: ${b.message}`),
        ...(b.actions ? { actions: b.actions } : {}),
        recheckAfterMs: SAFE_RECHECK_MS,
      };
    }
    return {
      ...running(
        'HelmUpgradeInProgress',
        `pre-upgrade backup taken (VolumeSnapshots ${backup}); starting helm upgrade Job ${nameOf(c.runner)}`,
        { snapshotNames: backup },
      ),
      actions: [resume(c.runner)],
    };
  }
  // 2. helm runs (a stop deletes the runner: helm rolls back on SIGTERM, helm-rollback.ts).
  if (c.runner && !jobFinished(c.runner)) return helm(helmJobs);
  if (!c.rollback) return helm(helmJobs);

  // 4. Being put back by the operator's rollback Job.
  if (!neverRan(c.rollback)) {
    const cause = causeOf(c, input, stop);
    return putBack(c, input, cause, record);
  }

  // 3. helm completed: the post-check decides.
  if (c.runner && !jobFailed(c.runner)) {
    const upgraded = helm(helmJobs);
    if (!c.probe) return upgraded;
    if (!stop && !jobFinished(c.probe)) {
      if (neverRan(c.probe) && at(c.probe, 'spec', 'suspend') === true) {
        return {
          ...running(
            'PostCheckRunning',
            `helm upgraded the release; starting the post-check Job ${nameOf(c.probe)}`,
          ),
          actions: [resume(c.probe)],
        };
      }
      return running(
        'PostCheckRunning',
        `helm upgraded the release; the post-check Job ${nameOf(c.probe)} runs`,
      );
    }
    // Passed: kept, even when a stop comes now (it finished before it could be stopped).
    if (jobFinished(c.probe) && !jobFailed(c.probe)) {
      // The pods read are the post-check's (the Job that decided last): its output is the verdict.
      const outcome = describeOutcomes(input.pods);
      return succeeded(
        'HelmUpgradeSucceeded',
        `helm upgrade Job ${nameOf(c.runner)} completed; the post-check Job ${nameOf(c.probe)} passed${outcome ? `: ${outcome}` : ''}`,
        upgraded.outputs,
      );
    }
    // The post-check failed (or the Upgrade is stopped before it passed): roll back to where it started.
    const cause = causeOf(c, input, stop);
    const state = input.env?.helmRelease;
    const from = state?.revision;
    const actions: CancelAction[] = [
      resume(c.rollback, from !== undefined ? { [ANNOTATION_ROLLED_BACK_FROM]: String(from) } : undefined),
      ...(jobFinished(c.probe)
        ? []
        : [
            { kind: 'delete' as const, child: asManifest(c.probe), propagationPolicy: 'Foreground' as const },
          ]),
    ];
    return {
      ...running(
        'HelmRollbackInProgress',
        `${cause.message}; rolling the release back${from !== undefined ? ` from revision ${from}` : ''} to revision ${revisionOf(c.rollback)} with Job ${nameOf(c.rollback)}`,
      ),
      actions,
      rollback: record({
        why: cause.reason,
        ...(from !== undefined ? { fromRevision: from } : {}),
        rolledBackBy: `Job ${nameOf(c.rollback)}`,
        state: 'RollingBack',
      }),
    };
  }

  // The runner failed or is gone: helm's --atomic (or the rollback Job, helm-rollback.ts) puts the chart back.
  const h = helm(helmJobs);
  if (h.phase === 'Running') return h;
  if (h.reason === 'RollbackFailed') {
    return {
      ...h,
      rollback: record({
        why: 'HelmUpgradeFailed',
        rolledBackBy: `Job ${nameOf(c.rollback)}`,
        state: 'Failed',
        restore: restores ? 'Failed' : 'NotDeclared',
      }),
    };
  }
  return restore(c, input, { reason: h.reason as Reason, message: h.message }, 'helm --atomic', record, h);
}

/** What ended the upgrade, read from the children: the post-check, the runner, or a stop. */
function causeOf(c: SafeChildren, input: ObserveInput, stop: boolean): Cause {
  if (c.runner && jobFailed(c.runner)) {
    return { reason: 'HelmUpgradeFailed', message: `helm upgrade Job ${nameOf(c.runner)} failed` };
  }
  if (c.probe && jobFailed(c.probe)) {
    const outcome = describeOutcomes(input.pods);
    return {
      reason: 'PostCheckFailed',
      message: `the post-check Job ${nameOf(c.probe)} failed after helm upgraded the release${outcome ? ` (${outcome})` : ''}`,
    };
  }
  const why = input.op.spec.cancel ? 'spec.cancel' : stop ? 'the deadline' : 'a stop';
  return {
    reason: 'HelmUpgradeFailed',
    message: `stopped by ${why} before the post-check passed`,
  };
}

type Recorder = (
  r: Omit<RollbackRecord, 'toRevision' | 'restore'> & Partial<RollbackRecord>,
) => RollbackRecord;

/** The operator's rollback Job runs or ran: wait for it, then restore. */
function putBack(c: SafeChildren, input: ObserveInput, cause: Cause, record: Recorder): Observation {
  const rollback = c.rollback!;
  const fromText = rollback.metadata?.annotations?.[ANNOTATION_ROLLED_BACK_FROM];
  const from = fromText ? { fromRevision: Number(fromText) } : {};
  const by = `Job ${nameOf(rollback)}`;
  const to = revisionOf(rollback);
  if (!jobFinished(rollback)) {
    return {
      ...running(
        'HelmRollbackInProgress',
        `${cause.message}; rolling the release back to revision ${to} with ${by}`,
      ),
      rollback: record({ why: cause.reason, ...from, rolledBackBy: by, state: 'RollingBack' }),
    };
  }
  if (jobFailed(rollback)) {
    const state = input.env?.helmRelease;
    const ns = rollback.metadata?.namespace ?? '';
    const restores = rollback.metadata?.annotations?.[ANNOTATION_RESTORE_ON_FAILURE] === 'true';
    const then = restores
      ? `, then restore its claims from the pre-upgrade VolumeSnapshots ${c.snapshots.map(nameOf).sort().join(', ')} (a snapshot Restore Operation with parameters.snapshotName, one claim each)`
      : '';
    return {
      ...failed(
        'RollbackFailed',
        `${cause.message}; the rollback Job ${nameOf(rollback)} failed too: the release is ${state ? `at revision ${state.revision} (${state.status})` : 'in a state the operator could not read'}. Nothing is retried: run \`helm rollback ${releaseOf(rollback)} ${to} -n ${ns}\`${then}`,
        false,
      ),
      rollback: record({
        why: cause.reason,
        ...from,
        rolledBackBy: by,
        state: 'Failed',
        restore: restores ? 'Failed' : 'NotDeclared',
      }),
    };
  }
  return restore(c, input, cause, by, (r) => record({ ...from, ...r }));
}

/** The chart is back: restore the claims from the pre-upgrade snapshots when the template declares it. */
function restore(
  c: SafeChildren,
  input: ObserveInput,
  cause: Cause,
  by: string,
  record: Recorder,
  helmEnd?: Observation,
): Observation {
  const to = revisionOf(c.rollback);
  const back = helmEnd
    ? helmEnd.message
    : `${cause.message}; ${by} rolled the release back to revision ${to}`;
  const restores = c.rollback?.metadata?.annotations?.[ANNOTATION_RESTORE_ON_FAILURE] === 'true';
  if (!restores || c.snapshots.length === 0) {
    const end = `${back}; the template does not declare that the upgrade changes data, so nothing was restored`;
    return {
      ...failed(cause.reason, end, false),
      stopped: helmEnd?.stopped ?? end,
      rollback: record({ why: cause.reason, rolledBackBy: by, state: 'Done', restore: 'NotDeclared' }),
    };
  }
  const names = c.snapshots.map(nameOf).sort().join(', ');
  const restoring = (message: string, extra: Partial<Observation> = {}): Observation => ({
    ...running(
      'VolumeSnapshotRestoreInProgress',
      `${back}; restoring the claims from the pre-upgrade backup (${names}): ${message}`,
    ),
    recheckAfterMs: SAFE_RECHECK_MS,
    rollback: record({ why: cause.reason, rolledBackBy: by, state: 'Restoring', restore: 'InProgress' }),
    ...extra,
  });
  const facts = input.env?.restore;
  if (c.plan.length === 0) {
    if (!facts) return restoring("reading the release's claims and workloads");
    const target = {
      metadata: { name: input.op.spec.targetRef.name, namespace: input.op.metadata.namespace ?? '' },
      spec: { release: { name: c.rollback ? releaseOf(c.rollback) : '' } },
    } as ApplicationInstance;
    const m = materializeRestore({
      op: input.op,
      target,
      template: undefined as never,
      parameters: {},
      // Only the snapshots this Operation took: never another backup of the namespace.
      env: { veleroNamespace: '', restore: { ...facts, snapshots: c.snapshots } },
      attempt: input.attempt,
    });
    if (!m.ok) {
      return {
        ...failed(
          'RollbackFailed',
          `${back}; the restore from the pre-upgrade backup could not start: ${m.message}. Nothing is retried: restore the claims from ${names} with a snapshot Restore Operation (parameters.snapshotName)`,
          false,
        ),
        rollback: record({ why: cause.reason, rolledBackBy: by, state: 'Failed', restore: 'Failed' }),
      };
    }
    return restoring('writing the restore plan', {
      actions: m.children.map((object) => ({ kind: 'adopt' as const, object })),
    });
  }
  // The restore is the putting back a cancel asks for: not stopped by it (a snapshot Restore Operation's own
  // cancel would scale the workloads back without the data).
  const r = observeRestore(c.plan, {
    ...input,
    op: { ...input.op, spec: { ...input.op.spec, cancel: false } },
  });
  if (r.phase === 'Running') return restoring(r.message, r.actions ? { actions: r.actions } : {});
  if (r.phase === 'Failed') {
    return {
      ...failed(
        'RollbackFailed',
        `${back}; the restore from the pre-upgrade backup failed: ${r.message}. Nothing is retried: restore the claims from ${names} with a snapshot Restore Operation (parameters.snapshotName)`,
        false,
      ),
      rollback: record({ why: cause.reason, rolledBackBy: by, state: 'Failed', restore: 'Failed' }),
    };
  }
  const end = `${back}; the claims were restored from the pre-upgrade backup: ${r.message}`;
  return {
    ...failed(cause.reason, end, false),
    stopped: end,
    rollback: record({ why: cause.reason, rolledBackBy: by, state: 'Done', restore: 'Restored' }),
  };
}

/**
 * Stop a Safe Upgrade (cancel, deadline): before helm ran nothing is to undo; while helm runs, as a plain
 * Upgrade; after it, the same putting back as a failed post-check — a `settling` wait, so not even the
 * deadline cuts it short.
 */
export function cancelSafe(
  children: readonly KubernetesObject[],
  input: ObserveInput,
  helm: (jobs: readonly KubernetesObject[]) => Observation,
  cancelHelm: (jobs: readonly KubernetesObject[]) => CancelAction[],
): CancelAction[] {
  const c = split(children);
  if (c.runner && !jobFinished(c.runner) && !neverRan(c.runner)) {
    return cancelHelm([c.runner, c.rollback].filter((j): j is KubernetesObject => j !== undefined));
  }
  if (c.runner && c.snapshots.length > 0 && neverRan(c.runner)) {
    // Nothing was upgraded: the Jobs that would have run go (snapshots not ready yet go with the Operation).
    return cancelJobs(ofKind(children, 'Job'));
  }
  const obs = observeSafe(children, input, helm, true);
  if (obs.phase !== 'Running') return [];
  return [
    ...(obs.actions ?? []),
    {
      kind: 'wait',
      settling: true,
      message: obs.message,
      recheckAfterMs: obs.recheckAfterMs ?? SAFE_RECHECK_MS,
    },
  ];
}
