// What every restore drill shares once its restore is under way (velero-verify.ts, volsync-verify.ts): the
// restore's progress or failure, then the probe Job — resumed once the copy is restored, read with its pod's
// outcome — turned into the verdict with the measured RTO (restore start → probe done) and RPO (the backup's
// age then). Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import { asManifest, at, type Json, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { describeOutcomes, jobFinished, logTail, observeJob } from './runner-pod.ts';
import type { Observation, ObserveInput } from './types.ts';

/** What the verdict's messages and measures need to know of the drill. */
/** Where every drill's probe finds the restored copy of claim <pvc>: `/restored/<pvc>` (VWS_RESTORED_DIR). */
export const RESTORED_DIR = '/restored';

export interface DrillFacts {
  /** The backup restored, as the outputs name it. */
  backupName: string;
  /** Where the copy is, for messages: `scratch namespace <name>`, `claim(s) <a>, <b>`. */
  where: string;
  /** When the restore started (RFC 3339): where the RTO starts. */
  restoreStartedAt?: string | undefined;
  /** When the backup completed (RFC 3339): where the RPO starts. */
  backupCompletedAt?: string | undefined;
}

/** Whole seconds from `from` to `to`, or undefined when either is not a time. */
export const seconds = (from: string | undefined, to: string | undefined): number | undefined => {
  const a = Date.parse(from ?? '');
  const b = Date.parse(to ?? '');
  return Number.isNaN(a) || Number.isNaN(b) ? undefined : Math.max(0, Math.round((b - a) / 1000));
};

/** When a Job finished: completionTime, else the Complete / SuccessCriteriaMet condition's time. */
export function finishedAt(job: KubernetesObject): string | undefined {
  const done = str(at(job, 'status', 'completionTime'));
  if (done) return done;
  const conds = (at(job, 'status', 'conditions') as Json[] | undefined) ?? [];
  const c = conds.find(
    (x) => (x.type === 'Complete' || x.type === 'SuccessCriteriaMet') && x.status === 'True',
  );
  return str(c?.lastTransitionTime);
}

/**
 * The drill's state from the engine's observation of its restore (`restored`) and the probe Job: the
 * restore running or failed (the probe never runs), the probe resumed, running, failed with its last lines,
 * or passed with RTO and RPO.
 */
export function drillVerdict(
  restored: Observation,
  job: KubernetesObject | undefined,
  input: ObserveInput,
  outputs: Record<string, string>,
  facts: DrillFacts,
): Observation {
  const { backupName, where } = facts;
  if (restored.phase === 'Running') {
    return running('VerifyRestoreInProgress', `restoring into ${where}: ${restored.message}`, outputs);
  }
  if (restored.phase === 'Failed') {
    return failed(
      'VerifyRestoreFailed',
      `the drill failed: backup ${backupName} did not restore into ${where}: ${restored.message}. Take a new Backup and verify it; this one cannot be counted on`,
      false,
      outputs,
    );
  }
  if (!job) return running('VerifyProbeRunning', 'waiting for the probe Job to appear', outputs);
  if (at(job, 'spec', 'suspend') === true && !jobFinished(job)) {
    return {
      ...running('VerifyProbeRunning', `restored into ${where}; starting the probe`, outputs),
      actions: [{ kind: 'patch', child: asManifest(job), patch: { spec: { suspend: false } } }],
    };
  }
  const obs = observeJob(
    [job],
    { running: 'VerifyProbeRunning', succeeded: 'VerifyPassed', failed: 'VerifyProbeFailed' },
    'probe',
    input.pods,
  );
  const last = input.pods?.at(-1)?.logTail;
  const said: Record<string, string> = last ? { probeOutput: logTail(last) } : {};
  if (obs.phase === 'Running') return { ...obs, outputs: { ...outputs, ...obs.outputs } };
  if (obs.phase === 'Failed') {
    const outcome = describeOutcomes(input.pods);
    return failed(
      'VerifyProbeFailed',
      `the drill failed: the probe rejected the copy of backup ${backupName} restored into ${where}${outcome ? `: ${outcome}` : ` (${obs.message})`}. The backup cannot be counted on: find out why, take a new Backup and verify it`,
      false,
      { ...outputs, ...said },
    );
  }
  const end = finishedAt(job);
  const rto = seconds(facts.restoreStartedAt, end);
  const rpo = seconds(facts.backupCompletedAt, end);
  return succeeded(
    'VerifyPassed',
    `backup ${backupName} restored into ${where} and the probe passed${rto !== undefined ? `: RTO ${rto}s` : ''}${rpo !== undefined ? `, the backup was ${rpo}s old` : ''}`,
    {
      ...outputs,
      ...said,
      verifiedBackup: backupName,
      ...(end ? { verifiedAt: end } : {}),
      ...(rto !== undefined ? { rtoSeconds: String(rto) } : {}),
      ...(rpo !== undefined ? { rpoSeconds: String(rpo) } : {}),
    },
  );
}
