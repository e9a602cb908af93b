// helm Upgrade: what puts the release back when the runner does not finish by itself (DESIGN §4: "a
// failed or cancelled Upgrade leaves the release on its previous revision (rolled back), never
// `pending-*`"). Pure.
//
// helm does most of it: with --atomic a failed upgrade is rolled back, and helm answers SIGTERM (a cancel
// or a deadline deletes the runner's pod) by cancelling the upgrade and running that same rollback
// (helm v3 cmd/helm/upgrade.go: the SIGTERM handler; pkg/action/upgrade.go: handleContext → failRelease).
// The runner pod's grace period is helm's --timeout plus a margin, so that rollback can finish. What helm
// cannot cover is its own death before it is done (killed after the grace period, OOM, a lost node): the
// release stays pending-upgrade or pending-rollback and no later `helm upgrade` runs ("another operation is
// in progress"). So every Upgrade carries a second Job, created suspended beside the runner:
// `helm rollback <release> <revision> --wait`, to the newest revision deployed when the Upgrade started.
// It is resumed only when the runner has failed or is gone AND the release record (env.helmRelease, the
// labels of its Secrets) says the newest revision is not deployed.
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_HELM_ROLLBACK_REVISION } from '../api/annotations.ts';
import { describeStoppedHooks, HOOK_STOP_RECHECK_MS, stopHookJobs } from './helm-hook-stop.ts';
import { arr, asManifest, at, ofKind, str } from './object.ts';
import { failed, running } from './observation.ts';
import { describeOutcomes, jobFailed, jobFinished, neverRan } from './runner-pod.ts';
import type { CancelAction, HelmReleaseState, Observation, ObserveInput } from './types.ts';

/** Part of the rollback Job's name (childName's suffix): `<op>-<hash of uid, attempt, "rollback">`. */
export const ROLLBACK_JOB_SUFFIX = 'rollback';
/** Added to helm's --timeout for the runner pod's grace period: its SIGTERM rollback waits that long. */
export const STOP_GRACE_MARGIN_SECONDS = 60;

/** `helm rollback` to `revision`, waiting for it as long as the upgrade would have (--timeout). */
export function rollbackArgs(
  release: string,
  revision: number,
  timeout: string,
  namespace: string,
): string[] {
  // As the upgrade's: every value in its flag and the positional arguments after `--` (ADR 0028).
  return [
    'rollback',
    '--wait',
    `--timeout=${timeout}`,
    `--namespace=${namespace}`,
    '--',
    release,
    String(revision),
  ];
}

export function isRollbackJob(job: KubernetesObject): boolean {
  return job.metadata?.annotations?.[ANNOTATION_HELM_ROLLBACK_REVISION] !== undefined;
}

/** Whether the release needs putting back: its newest revision is not deployed (pending-*, failed). */
export function needsRollback(state: HelmReleaseState | undefined): state is HelmReleaseState {
  return state !== undefined && state.status !== 'deployed';
}

interface Jobs {
  upgrade?: KubernetesObject;
  rollback?: KubernetesObject;
  revision: string;
}

function jobsOf(children: readonly KubernetesObject[]): Jobs {
  const jobs = ofKind(children, 'Job');
  const rollback = jobs.find(isRollbackJob);
  const upgrade = jobs.find((j) => !isRollbackJob(j));
  return {
    ...(rollback ? { rollback } : {}),
    ...(upgrade ? { upgrade } : {}),
    revision: rollback?.metadata?.annotations?.[ANNOTATION_HELM_ROLLBACK_REVISION] ?? '',
  };
}

const nameOf = (j: KubernetesObject | undefined) => j?.metadata?.name ?? '';

function where(state: HelmReleaseState | undefined): string {
  return state
    ? `at revision ${state.revision} (${state.status})`
    : 'in a state the operator could not read (no release record)';
}

/** The release as it ended, for the Cancelled / DeadlineExceeded message. */
function describeEnd(state: HelmReleaseState | undefined, how: string): string {
  return state?.status === 'deployed'
    ? `the release is deployed (revision ${state.revision}; ${how})`
    : `the release is ${where(state)}`;
}

/** The release the rollback Job rolls back (its `helm rollback <release> …` arguments). */
function releaseOfRollback(rollback: KubernetesObject): string {
  const args = arr(at(arr(at(rollback, 'spec', 'template', 'spec', 'containers'))[0], 'args'));
  // After `--`; a rollback Job made by an older operator has the release right after `rollback`.
  const sep = args.indexOf('--');
  return str(args[sep >= 0 ? sep + 1 : 1]) ?? '<release>';
}

/** The next step of stopping the abandoned upgrade's hook Jobs (helm-hook-stop.ts), if any is left. */
function stopHooksOf(rollback: KubernetesObject, input: ObserveInput | undefined) {
  return stopHookJobs(
    rollback,
    input?.env?.helmHookJobs,
    releaseOfRollback(rollback),
    input?.op.status?.startedAt,
  );
}

/**
 * The Operation's state while a rollback Job exists, or undefined when the runner's own observation
 * decides (it still runs without a stop asked, or it completed: the new revision is deployed).
 * `runner` is that observation, of the runner Job and its pods.
 */
export function observeRollback(
  children: readonly KubernetesObject[],
  input: ObserveInput,
  runner: (jobs: readonly KubernetesObject[]) => Observation,
): Observation | undefined {
  const { upgrade, rollback, revision } = jobsOf(children);
  if (!rollback) return undefined;
  if (upgrade && !jobFinished(upgrade)) {
    if (!input.op.spec.cancel) return undefined;
    return running(
      'HelmUpgradeInProgress',
      `stopping helm upgrade Job ${nameOf(upgrade)}: on SIGTERM helm rolls the release back itself (--atomic), within its --timeout`,
    );
  }
  if (upgrade && !jobFailed(upgrade)) return undefined;
  const state = input.env?.helmRelease;
  const base = upgrade ? runner([upgrade]) : undefined;
  const lead =
    base?.message ?? `the helm upgrade Job was stopped (${input.op.spec.cancel ? 'spec.cancel' : 'deleted'})`;
  const retryable = base?.retryable ?? false;
  const release = releaseOfRollback(rollback);
  const ns = rollback.metadata?.namespace ?? '';
  const hooks = stopHooksOf(rollback, input);
  if (hooks) {
    return {
      ...running('HelmRollbackInProgress', `${lead}; ${hooks.message}`),
      actions: hooks.actions,
      recheckAfterMs: HOOK_STOP_RECHECK_MS,
    };
  }
  const stoppedHooks = describeStoppedHooks(rollback);
  if (!neverRan(rollback)) {
    if (!jobFinished(rollback)) {
      return running(
        'HelmRollbackInProgress',
        `${lead}; rolling the release back to revision ${revision} with Job ${nameOf(rollback)}`,
      );
    }
    if (jobFailed(rollback)) {
      const outcome = upgrade ? '' : describeOutcomes(input.pods);
      return failed(
        'RollbackFailed',
        `${lead}; the rollback Job ${nameOf(rollback)} failed too${outcome ? ` (${outcome})` : ''}; the release is ${where(state)}: run \`helm rollback ${release} ${revision} -n ${ns}\`${stoppedHooks}`,
        false,
      );
    }
    const done = `Job ${nameOf(rollback)} rolled it back to revision ${revision}`;
    const end = `${describeEnd(state, done)}${stoppedHooks}`;
    return { ...failed('HelmUpgradeFailed', `${lead}; ${end}`, retryable), stopped: end };
  }
  if (needsRollback(state)) {
    return {
      ...running(
        'HelmRollbackInProgress',
        `${lead}; the release was left ${where(state)}: rolling it back to revision ${revision} with Job ${nameOf(rollback)}`,
      ),
      actions: [{ kind: 'patch', child: asManifest(rollback), patch: { spec: { suspend: false } } }],
    };
  }
  const end = `${describeEnd(
    state,
    upgrade ? 'helm rolled it back' : 'helm rolled it back when stopped, or had not changed it yet',
  )}${stoppedHooks}`;
  return { ...failed('HelmUpgradeFailed', `${lead}; ${end}`, retryable), stopped: end };
}

/**
 * Stop an Upgrade: delete the runner (its pod gets SIGTERM and helm rolls back), then, once it is gone,
 * resume the rollback Job if the release was left pending. Every step is a `settling` wait: not even the
 * deadline ends the Operation while the release is being put back.
 */
export function cancelRollback(children: readonly KubernetesObject[], input?: ObserveInput): CancelAction[] {
  const { upgrade, rollback, revision } = jobsOf(children);
  if (upgrade && !jobFinished(upgrade)) {
    return [
      { kind: 'delete', child: asManifest(upgrade), propagationPolicy: 'Foreground' },
      ...(rollback
        ? [
            {
              kind: 'wait' as const,
              settling: true,
              message: `stopping helm upgrade Job ${nameOf(upgrade)}: on SIGTERM helm rolls the release back itself (--atomic), within its --timeout; then the release record is checked`,
            },
          ]
        : []),
    ];
  }
  if (!rollback || (upgrade && !jobFailed(upgrade))) return [];
  const hooks = stopHooksOf(rollback, input);
  if (hooks) {
    return [
      ...hooks.actions,
      { kind: 'wait', settling: true, message: hooks.message, recheckAfterMs: HOOK_STOP_RECHECK_MS },
    ];
  }
  if (!neverRan(rollback)) {
    if (jobFinished(rollback)) return [];
    return [
      {
        kind: 'wait',
        settling: true,
        message: `rolling the release back to revision ${revision} with Job ${nameOf(rollback)}`,
      },
    ];
  }
  const state = input?.env?.helmRelease;
  if (!needsRollback(state)) return [];
  return [
    { kind: 'patch', child: asManifest(rollback), patch: { spec: { suspend: false } } },
    {
      kind: 'wait',
      settling: true,
      message: `the release was left ${where(state)}: rolling it back to revision ${revision} with Job ${nameOf(rollback)}`,
    },
  ];
}
