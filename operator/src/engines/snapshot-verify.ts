// snapshot engine, Verify: a restore drill of a snapshot Backup (ADR 0054, ADR 0059). Each VolumeSnapshot of
// the chosen Backup is restored into a new PersistentVolumeClaim of the Operation's own namespace (the CSI
// way: the snapshot as the claim's dataSource), the template's probe Job mounts the copies, and its verdict,
// the measured RTO (first claim created → probe done) and the snapshot's age (RPO) are the outcome. The
// restored claims go whatever the outcome (cleanup). Pure.
//
// Why the Operation's namespace and not a scratch namespace (ADR 0059): a snapshot restores into one claim,
// not into the release's objects, so nothing collides with the instance; a claim from a VolumeSnapshot of
// its own namespace needs no VolumeSnapshotContent the operator would have to create cluster-wide (a right
// that could bind any team's snapshot handle), and the source VolumeSnapshot and its content are only ever
// read: the CSI driver copies the storage snapshot into a new volume.
//
// Which snapshots: parameters.snapshotName (one), else the newest complete snapshot Backup of the instance.
// Either must carry the labels the snapshot engine's Backup writes (managed-by, instance): a VolumeSnapshot
// someone made by hand in the namespace is not a backup of the instance.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_BACKUP_COMPLETED_AT,
  ANNOTATION_PVC,
  ANNOTATION_SNAPSHOT,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { probeParameters } from './drill-probe.ts';
import { finishedAt, RESTORED_DIR, seconds } from './drill-verdict.ts';
import { childMetadata, childName, NAME_LIMITS } from './names.ts';
import { asManifest, at, type Json, nameOf, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import { describeOutcomes, logTail, observeJob, RUNNER_UID, runnerJob } from './runner-pod.ts';
import { chooseSnapshots, claimOf } from './snapshot-restore.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
} from './types.ts';
import { PROBE_CONTAINER } from './velero-verify.ts';

/** A copy's size when neither the snapshot nor its claim says one (a snapshot not ready reports none). */
const DEFAULT_SIZE = '1Gi';

const isBackupOf = (instance: string) => (s: KubernetesObject) =>
  s.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY && s.metadata.labels[LABEL_INSTANCE] === instance;

/** When a snapshot was cut: status.creationTime (the storage's), else when the object was made. */
function cutAt(s: KubernetesObject): string | undefined {
  const t = str(at(s, 'status', 'creationTime')) ?? s.metadata?.creationTimestamp;
  return t ? new Date(t).toISOString() : undefined;
}

export function materializeSnapshotVerify(input: MaterializeInput): MaterializeResult {
  const { op, parameters, env, template, attempt, target } = input;
  const namespace = op.metadata.namespace ?? '';
  const instance = target.metadata.name ?? '';
  const facts = env.restore;
  if (!facts) {
    return {
      ok: false,
      reason: 'BackupNotFound',
      message: `cannot read the VolumeSnapshots of namespace ${namespace} (is the verify.snapshot profile bound here?)`,
    };
  }
  // Only the instance's own snapshot Backups count; a foreign one reads exactly as a missing one.
  const backups = (facts.snapshots ?? []).filter(isBackupOf(instance));
  const named = str(parameters.snapshotName);
  if (named && !backups.some((s) => nameOf(s) === named)) {
    return {
      ok: false,
      reason: 'BackupNotAllowed',
      message: `parameters.snapshotName: there is no VolumeSnapshot ${named} made by a snapshot Backup of ApplicationInstance ${instance} in namespace ${namespace}; name one of the outputs.snapshotNames of a Backup Operation here, or leave snapshotName out to verify the newest one`,
    };
  }
  // Every claim a backup was taken of, whether or not the release still has it: a drill proves the backup.
  const claims = backups.map((s) => ({ metadata: { name: claimOf(s) } }));
  const chosen = chooseSnapshots(parameters, target, { ...facts, pvcs: claims, snapshots: backups });
  if (!chosen.ok) return chosen;
  const probeRun = probeParameters(input);
  if (!probeRun.ok) return probeRun;
  const { image, command } = probeRun;
  const byName = new Map(backups.map((s) => [nameOf(s), s]));
  const cut = chosen.picks
    .map((p) => cutAt(byName.get(p.snapshot) ?? {}))
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  const copies: ChildManifest[] = chosen.picks.map((p) => {
    const snapshot = byName.get(p.snapshot);
    const source = facts.pvcs.find((c) => nameOf(c) === p.claim);
    // At least the snapshot's size (the CSI driver refuses a smaller volume); the source claim's class
    // and access modes when it still exists, else the cluster's defaults.
    const size =
      str(at(snapshot, 'status', 'restoreSize')) ??
      str(at(source, 'spec', 'resources', 'requests', 'storage')) ??
      DEFAULT_SIZE;
    const className = str(at(source, 'spec', 'storageClassName'));
    const modes = at(source, 'spec', 'accessModes');
    return {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: childMetadata(op, {
        name: childName(op, attempt, NAME_LIMITS.snapshot, p.claim),
        attempt,
        labels: { [LABEL_INSTANCE]: instance },
        annotations: {
          [ANNOTATION_PVC]: p.claim,
          [ANNOTATION_SNAPSHOT]: p.snapshot,
          ...(cut ? { [ANNOTATION_BACKUP_COMPLETED_AT]: cut } : {}),
        },
      }),
      spec: {
        accessModes: Array.isArray(modes) && modes.length > 0 ? modes : ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        ...(className ? { storageClassName: className } : {}),
        dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: p.snapshot },
      },
    };
  });
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
    containerEnv: [
      { name: 'VWS_RESTORED_DIR', value: RESTORED_DIR },
      { name: 'VWS_SNAPSHOT_NAMES', value: chosen.picks.map((p) => p.snapshot).join(',') },
    ],
  });
  const podSpec = at(probe, 'spec', 'template', 'spec') as Json;
  // The probe reads the copies; it needs no API access.
  podSpec.automountServiceAccountToken = false;
  // The copies hold the application's files under its own user (a database's data directory is 0700): the
  // runner's group as fsGroup lets a driver that supports it (CSIDriver fsGroupPolicy) give the probe read
  // access to the copy. Only the copy's ownership changes, never the snapshot's.
  podSpec.securityContext = { ...(podSpec.securityContext as Json), fsGroup: RUNNER_UID };
  const container = (podSpec.containers as Json[])[0] as Json;
  copies.forEach((c, i) => {
    const claim = chosen.picks[i]?.claim ?? '';
    (podSpec.volumes as Json[]).push({
      name: `restored-${i}`,
      persistentVolumeClaim: { claimName: c.metadata.name },
    });
    (container.volumeMounts as Json[]).push({ name: `restored-${i}`, mountPath: `${RESTORED_DIR}/${claim}` });
  });
  return { ok: true, children: [...copies, probe] };
}

/** The drill's state: the copies binding, then the probe's verdict. */
export function observeSnapshotVerify(
  children: readonly KubernetesObject[],
  input: ObserveInput,
): Observation {
  const copies = ofKind(children, 'PersistentVolumeClaim');
  const job = ofKind(children, 'Job')[0];
  const snapshots = copies.map((c) => c.metadata?.annotations?.[ANNOTATION_SNAPSHOT] ?? '').filter(Boolean);
  const backup = snapshots.join(',');
  const outputs: Record<string, string> = {
    ...(copies.length > 0 ? { backupName: backup, restoredClaims: copies.map(nameOf).join(',') } : {}),
    ...(job ? { probeJobName: nameOf(job) } : {}),
  };
  const lost = copies.find((c) => c.metadata?.deletionTimestamp);
  if (copies.length === 0 || !job) {
    return running(
      'VerifyRestoreInProgress',
      'waiting for the restored claims and the probe Job to appear',
      outputs,
    );
  }
  const obs = observeJob(
    [job],
    { running: 'VerifyProbeRunning', succeeded: 'VerifyPassed', failed: 'VerifyProbeFailed' },
    'probe',
    input.pods,
  );
  if (obs.phase === 'Running') {
    if (lost) {
      return failed(
        'VerifyRestoreFailed',
        `the restored claim ${nameOf(lost)} is being deleted before the probe finished (stopped or deleted by hand); nothing was verified`,
        false,
        outputs,
      );
    }
    const pending = copies.filter((c) => at(c, 'status', 'phase') !== 'Bound').map(nameOf);
    if (pending.length > 0) {
      return running(
        'VerifyRestoreInProgress',
        `restoring VolumeSnapshot(s) ${backup} into ${pending.join(', ')} (the probe's pod waits for them; kubectl describe pvc ${pending[0]} shows the CSI driver's progress)`,
        outputs,
      );
    }
    return { ...obs, outputs: { ...outputs, ...obs.outputs } };
  }
  const last = input.pods?.at(-1)?.logTail;
  const said: Record<string, string> = last ? { probeOutput: logTail(last) } : {};
  if (obs.phase === 'Failed') {
    const outcome = describeOutcomes(input.pods);
    return failed(
      'VerifyProbeFailed',
      `the drill failed: the probe rejected the copy of VolumeSnapshot(s) ${backup}${outcome ? `: ${outcome}` : ` (${obs.message})`}. The backup cannot be counted on: find out why, take a new Backup and verify it`,
      false,
      { ...outputs, ...said },
    );
  }
  const start = copies
    .map((c) => c.metadata?.creationTimestamp)
    .filter((t) => t !== undefined)
    .map((t) => new Date(t).toISOString())
    .sort()[0];
  const end = finishedAt(job);
  const rto = seconds(start, end);
  const rpo = seconds(copies[0]?.metadata?.annotations?.[ANNOTATION_BACKUP_COMPLETED_AT], end);
  return succeeded(
    'VerifyPassed',
    `VolumeSnapshot(s) ${backup} restored into new claims and the probe passed${rto !== undefined ? `: RTO ${rto}s` : ''}${rpo !== undefined ? `, the backup was ${rpo}s old` : ''}`,
    {
      ...outputs,
      ...said,
      verifiedBackup: backup,
      ...(end ? { verifiedAt: end } : {}),
      ...(rto !== undefined ? { rtoSeconds: String(rto) } : {}),
      ...(rpo !== undefined ? { rpoSeconds: String(rpo) } : {}),
    },
  );
}

/**
 * The restored claims this Operation created (the uid its status recorded), not yet being deleted, deleted
 * by that uid: never a claim made since under the name, never the source snapshots (they are no child).
 */
function deleteCopies(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  const recorded = new Set(
    (op.status?.childRefs ?? []).flatMap((r) => (r.kind === 'PersistentVolumeClaim' && r.uid ? [r.uid] : [])),
  );
  return ofKind(children, 'PersistentVolumeClaim')
    .filter((c) => recorded.has(c.metadata?.uid ?? '') && !c.metadata?.deletionTimestamp)
    .map((c) => ({
      kind: 'delete' as const,
      child: asManifest(c),
      propagationPolicy: 'Background' as const,
      ...(c.metadata?.uid ? { uid: c.metadata.uid } : {}),
    }));
}

/** Cancel and deadline: stop the probe, drop the copies. */
export function cancelSnapshotVerify(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  const jobs: CancelAction[] = ofKind(children, 'Job').map((j) => ({
    kind: 'delete',
    child: asManifest(j),
    propagationPolicy: 'Foreground',
  }));
  return [...jobs, ...deleteCopies(children, op)];
}

/**
 * Once the drill has ended, whatever the outcome: delete the restored claims (their volumes follow the
 * class's reclaim policy). The probe Job stays until the Operation goes (its log is the verdict); the
 * claims carry the Operation as owner, so deleting the Operation removes whatever is left.
 */
export const cleanupSnapshotVerify: NonNullable<EngineAdapter['cleanup']> = (children, op) => {
  const actions = deleteCopies(children, op);
  return { actions, pending: actions.length > 0 };
};
