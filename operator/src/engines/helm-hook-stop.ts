// helm Upgrade: the chart's hook Jobs of an abandoned upgrade. helm creates a chart's pre-upgrade and
// post-upgrade hook Jobs itself and waits for them; stopped (cancel, deadline) or killed, it rolls the
// release back but leaves such a Job running. A migration hook that goes on would change the database
// under the rolled-back release, so before the Operation ends (and before its rollback Job runs) the
// operator deletes those Jobs in the foreground (their pods go first) and records their names on the
// rollback Job, whose annotation the final message reads. Pure.
//
// Helm labels no hook resource, so a hook Job is tied to the release the way charts label everything
// they render (app.kubernetes.io/instance=<release>, which the reconciler lists by), to the upgrade by its
// helm.sh/hook events, and to this Operation by being created at or after the Operation started. A Job
// that is also a rollback hook is left alone: the rollback that puts the release back may run it.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_HELM_STOPPED_HOOKS,
  HELM_HOOK_ANNOTATION,
  LABEL_HELM_INSTANCE,
  LABEL_OPERATION,
} from '../api/annotations.ts';
import { asManifest } from './object.ts';
import { jobFinished } from './runner-pod.ts';
import type { ChildAction } from './types.ts';

const UPGRADE_EVENTS = ['pre-upgrade', 'post-upgrade'];
const ROLLBACK_EVENTS = ['pre-rollback', 'post-rollback'];
/** Deleted hook Jobs are not the Operation's children, so no watch event says they are gone. */
export const HOOK_STOP_RECHECK_MS = 5000;

function hookEvents(job: KubernetesObject): string[] {
  const value = job.metadata?.annotations?.[HELM_HOOK_ANNOTATION] ?? '';
  return value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
}

/**
 * The Jobs helm started for the abandoned upgrade of `release` that are still running (or being deleted):
 * labelled app.kubernetes.io/instance=<release>, a pre-upgrade or post-upgrade hook and no rollback hook,
 * not made by an Operation, created at or after `since` (the Operation's start), not finished. Sorted by
 * name. None when `since` is unknown.
 */
export function abandonedHookJobs(
  jobs: readonly KubernetesObject[],
  release: string,
  since: string | undefined,
): KubernetesObject[] {
  const from = Date.parse(since ?? '');
  if (Number.isNaN(from)) return [];
  return jobs
    .filter((job) => {
      const events = hookEvents(job);
      const created = new Date(job.metadata?.creationTimestamp ?? Number.NaN).getTime();
      return (
        job.metadata?.labels?.[LABEL_HELM_INSTANCE] === release &&
        job.metadata.labels[LABEL_OPERATION] === undefined &&
        events.some((e) => UPGRADE_EVENTS.includes(e)) &&
        !events.some((e) => ROLLBACK_EVENTS.includes(e)) &&
        created >= from &&
        !jobFinished(job)
      );
    })
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
}

/** The hook Jobs the rollback Job records as stopped. */
export function stoppedHooks(rollback: KubernetesObject): string[] {
  const value = rollback.metadata?.annotations?.[ANNOTATION_HELM_STOPPED_HOOKS] ?? '';
  return value.split(',').filter((n) => n !== '');
}

/** "; it stopped the chart's hook Job(s) …" for the final message, or '' when none was stopped. */
export function describeStoppedHooks(rollback: KubernetesObject): string {
  const names = stoppedHooks(rollback);
  if (names.length === 0) return '';
  const jobs = names.length === 1 ? 'Job' : 'Jobs';
  return `; the operator stopped the chart's hook ${jobs} ${names.join(', ')}, which helm had started for the abandoned upgrade`;
}

export interface HookStop {
  actions: ChildAction[];
  message: string;
}

/**
 * The next step of stopping the abandoned upgrade's hook Jobs, or undefined when none is left: first
 * record their names on the rollback Job (so the message can name them once they are gone), then delete
 * them in the foreground (only those objects: uid preconditions), then wait until they are gone.
 */
export function stopHookJobs(
  rollback: KubernetesObject,
  hookJobs: readonly KubernetesObject[] | undefined,
  release: string,
  since: string | undefined,
): HookStop | undefined {
  const jobs = abandonedHookJobs(hookJobs ?? [], release, since);
  if (jobs.length === 0) return undefined;
  const names = jobs.map((j) => j.metadata?.name ?? '');
  const message = `stopping the chart's hook ${names.length === 1 ? 'Job' : 'Jobs'} ${names.join(', ')}, which helm started for the abandoned upgrade (they would go on changing the application under the previous revision)`;
  const recorded = stoppedHooks(rollback);
  const missing = names.filter((n) => !recorded.includes(n));
  if (missing.length > 0) {
    const all = [...recorded, ...missing].sort().join(',');
    return {
      actions: [
        {
          kind: 'patch',
          child: asManifest(rollback),
          patch: { metadata: { annotations: { [ANNOTATION_HELM_STOPPED_HOOKS]: all } } },
        },
      ],
      message,
    };
  }
  const live = jobs.filter((j) => j.metadata?.deletionTimestamp === undefined);
  return {
    actions: live.map((j) => ({
      kind: 'delete' as const,
      child: asManifest({ apiVersion: 'batch/v1', kind: 'Job', ...j }),
      propagationPolicy: 'Foreground' as const,
      ...(j.metadata?.uid ? { uid: j.metadata.uid } : {}),
    })),
    message: live.length > 0 ? message : `${message}; waiting for their pods to go`,
  };
}
