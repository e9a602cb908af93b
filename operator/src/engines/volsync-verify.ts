// volsync engine, Verify: a restore drill of a restic backup (ADR 0060). Restores what a Succeeded volsync
// Backup Operation of the instance wrote (parameters.backupName, else the newest) into fresh claims the
// drill creates, runs the template's probe Job with those claims mounted at /restored/<claim>, and reports
// the verdict with the measured RTO (restore start → probe done) and the backup's age (RPO). The claims and
// ReplicationDestinations go whatever the outcome (cleanup). Pure.
//
// Why not a scratch namespace (velero's drill, ADR 0054): VolSync's restic mover reads the repository
// Secret from the ReplicationDestination's own namespace, and restic data has no objects to restore, only a
// volume's files, which a probe must mount. A scratch namespace would need the repository credentials
// copied into it and the operator creating Jobs there (cluster-wide Job and Secret creation); here no
// credential leaves its namespace and the operator needs nothing beyond a profile bound in it. The copies
// are claims of their own (never the instance's: derived names, adopted never, deleted by recorded uid).
//
// Children, created in this order: one PersistentVolumeClaim per claim of the release (its size, class,
// access and volume mode), one ReplicationDestination per claim restoring into it (copyMethod Direct, the
// Backup's repository Secret, restoreAsOf the Backup's completion: the snapshot that Backup made, never a
// later one), and the probe Job, created suspended and resumed once every ReplicationDestination synced.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_BACKUP_COMPLETED_AT,
  ANNOTATION_BACKUP_OPERATION,
  ANNOTATION_PVC,
  LABEL_INSTANCE,
  LABEL_SCRATCH_FOR,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { probeParameters } from './drill-probe.ts';
import { drillVerdict, RESTORED_DIR } from './drill-verdict.ts';
import { childMetadata, childName, NAME_LIMITS } from './names.ts';
import { asManifest, at, type Json, nameOf, ofKind, str, stringArray } from './object.ts';
import { failed, running } from './observation.ts';
import { releasePvcs } from './pvcs.ts';
import { runnerJob } from './runner-pod.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
  VolsyncBackupRecord,
} from './types.ts';
import { PROBE_CONTAINER } from './velero-verify.ts';
import { claimRepositories } from './volsync-repositories.ts';

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** When an Operation finished: status.finishedAt (as schedule/history.ts reads it), else its creation. */
function finishedMs(o: Operation): number {
  const t = Date.parse(o.status?.finishedAt ?? String(o.metadata.creationTimestamp ?? ''));
  return Number.isNaN(t) ? 0 : t;
}

/**
 * The Succeeded volsync Backups of instance `instance` among `ops` (one namespace's), newest first (ties:
 * the later name). Only Operations that name their repository in spec.parameters count: that is what the
 * drill must read.
 */
export function volsyncBackupRecords(ops: readonly Operation[], instance: string): VolsyncBackupRecord[] {
  return ops
    .filter(
      (o) =>
        o.spec?.type === 'Backup' &&
        o.spec.engine === 'volsync' &&
        o.spec.targetRef?.name === instance &&
        o.status?.phase === 'Succeeded' &&
        o.spec.parameters?.repository !== undefined,
    )
    .map((o) => ({ o, at: finishedMs(o) }))
    .sort((x, y) => y.at - x.at || (y.o.metadata.name ?? '').localeCompare(x.o.metadata.name ?? ''))
    .map(({ o, at }) => ({
      operation: o.metadata.name ?? '',
      completedAt: iso(at),
      repository: o.spec.parameters?.repository,
    }));
}

/** The repository maps of two Operations name the same Secret for every claim. */
function sameRepositories(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([claim, secret]) => b.get(claim) === secret);
}

const describeMap = (m: ReadonlyMap<string, string>) =>
  [...m].map(([claim, secret]) => `${claim}: ${secret}`).join(', ');

/**
 * The claim a restored copy of `claim` goes to: like the source (size, class, access and volume mode); or
 * why there can be none.
 */
function copyClaim(
  input: MaterializeInput,
  claim: string,
  source: KubernetesObject | undefined,
  name: string,
): ChildManifest | string {
  const storage = str(at(source, 'spec', 'resources', 'requests', 'storage'));
  if (!storage) {
    return `PersistentVolumeClaim ${claim} has no spec.resources.requests.storage to size its restored copy by`;
  }
  const accessModes = stringArray(at(source, 'spec', 'accessModes'));
  const storageClassName = str(at(source, 'spec', 'storageClassName'));
  const volumeMode = str(at(source, 'spec', 'volumeMode'));
  const namespace = input.op.metadata.namespace ?? '';
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: childMetadata(input.op, {
      name,
      attempt: input.attempt,
      labels: { [LABEL_SCRATCH_FOR]: namespace, [LABEL_INSTANCE]: input.op.spec.targetRef.name },
      annotations: { [ANNOTATION_PVC]: claim },
    }),
    spec: {
      accessModes: accessModes.length > 0 ? accessModes : ['ReadWriteOnce'],
      resources: { requests: { storage } },
      ...(storageClassName !== undefined ? { storageClassName } : {}),
      ...(volumeMode !== undefined ? { volumeMode } : {}),
    },
  };
}

export function materializeVolsyncVerify(input: MaterializeInput, trigger: string): MaterializeResult {
  const { op, parameters, env, template, attempt } = input;
  const namespace = op.metadata.namespace ?? '';
  const instance = op.spec.targetRef.name;
  const found = releasePvcs(input, 'volsync');
  if (!found.ok) return found;
  const wanted = claimRepositories(parameters.repository, found.pvcs);
  if (!wanted.ok) return wanted;
  const named = str(parameters.backupName);
  const records = env.volsyncBackups ?? [];
  const backup = named ? records.find((r) => r.operation === named) : records[0];
  if (!backup) {
    return {
      ok: false,
      reason: 'BackupNotAllowed',
      message: named
        ? `parameters.backupName: there is no Succeeded volsync Backup Operation ${named} of ApplicationInstance ${instance} in namespace ${namespace}; name one (kubectl get operations -n ${namespace}), or leave backupName out to verify the newest`
        : `there is no Succeeded volsync Backup Operation of ApplicationInstance ${instance} in namespace ${namespace} to verify; run a volsync Backup Operation first`,
    };
  }
  // The drill reads exactly the repository the Backup wrote: VolSync's restore initializes a repository it
  // does not find, so a drill of any other one could write a new, empty repository into the bucket.
  const written = claimRepositories(backup.repository, found.pvcs);
  if (!written.ok || !sameRepositories(written.byClaim, wanted.byClaim)) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: `parameters.repository: Backup Operation ${backup.operation} wrote to ${written.ok ? describeMap(written.byClaim) : JSON.stringify(backup.repository)}, not ${describeMap(wanted.byClaim)}; name the repository Secret(s) the Backup wrote to (a drill reads only what a Backup of this namespace wrote)`,
    };
  }
  const probeRun = probeParameters(input);
  if (!probeRun.ok) return probeRun;
  const { image, command } = probeRun;
  const sources = new Map((env.releaseClaims ?? []).map((c) => [c.metadata?.name ?? '', c]));
  const claims: ChildManifest[] = [];
  const destinations: ChildManifest[] = [];
  for (const claim of found.pvcs) {
    const copyName = childName(op, attempt, NAME_LIMITS.job, `copy-${claim}`);
    const copy = copyClaim(input, claim, sources.get(claim), copyName);
    if (typeof copy === 'string') return { ok: false, reason: 'InvalidParameters', message: copy };
    claims.push(copy);
    destinations.push({
      apiVersion: 'volsync.backube/v1alpha1',
      kind: 'ReplicationDestination',
      metadata: childMetadata(op, {
        name: childName(op, attempt, NAME_LIMITS.volsync, claim),
        attempt,
        annotations: {
          [ANNOTATION_PVC]: claim,
          [ANNOTATION_BACKUP_OPERATION]: backup.operation,
          [ANNOTATION_BACKUP_COMPLETED_AT]: backup.completedAt,
        },
      }),
      spec: {
        trigger: { manual: trigger },
        // Only a restore: no unlock, no forget, no prune (the repository is only ever read).
        restic: {
          repository: wanted.byClaim.get(claim),
          destinationPVC: copyName,
          copyMethod: 'Direct',
          restoreAsOf: backup.completedAt,
        },
      },
    });
  }
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
    containerEnv: [
      { name: 'VWS_RESTORED_DIR', value: RESTORED_DIR },
      { name: 'VWS_BACKUP_NAME', value: backup.operation },
      { name: 'VWS_CLAIMS', value: found.pvcs.join(',') },
    ],
  });
  // The probe reads the copies; it needs no API access.
  const podSpec = at(probe, 'spec', 'template', 'spec') as Json;
  podSpec.automountServiceAccountToken = false;
  podSpec.volumes = [
    ...(podSpec.volumes as Json[]),
    ...claims.map((c, i) => ({
      name: `restored-${i}`,
      persistentVolumeClaim: { claimName: c.metadata.name },
    })),
  ];
  const container = (podSpec.containers as Json[])[0] as Json;
  container.volumeMounts = [
    ...(container.volumeMounts as Json[]),
    ...found.pvcs.map((claim, i) => ({ name: `restored-${i}`, mountPath: `${RESTORED_DIR}/${claim}` })),
  ];
  return { ok: true, children: [...claims, ...destinations, probe] };
}

/**
 * The drill's state. `restored` is the volsync adapter's observation of the ReplicationDestinations
 * (volsync.ts), so what the mover said of a damaged repository reaches the message.
 */
export function observeVolsyncVerify(
  children: readonly KubernetesObject[],
  input: ObserveInput,
  restored: Observation,
): Observation {
  const claims = ofKind(children, 'PersistentVolumeClaim');
  const destinations = ofKind(children, 'ReplicationDestination');
  const job = ofKind(children, 'Job')[0];
  const first = destinations[0];
  const backupName = first?.metadata?.annotations?.[ANNOTATION_BACKUP_OPERATION] ?? '';
  const outputs: Record<string, string> = {
    ...(claims.length > 0 ? { restoredClaims: claims.map(nameOf).join(',') } : {}),
    ...(destinations.length > 0
      ? { replicationDestinations: destinations.map(nameOf).join(','), backupName }
      : {}),
    ...(job ? { probeJobName: nameOf(job) } : {}),
  };
  if (destinations.length === 0) {
    if (claims.some((c) => !c.metadata?.deletionTimestamp)) {
      return running('VerifyRestoreInProgress', 'waiting for the ReplicationDestinations to appear', outputs);
    }
    return failed(
      'VerifyRestoreFailed',
      "the drill's ReplicationDestinations and restored claims are gone (stopped or deleted); nothing was verified",
      false,
      outputs,
    );
  }
  // The restore starts when the first ReplicationDestination is created (VolSync starts its mover then).
  const start = destinations
    .map((d) => d.metadata?.creationTimestamp)
    .filter((t) => t !== undefined)
    .map((t) => new Date(t).toISOString())
    .sort()[0];
  return drillVerdict(restored, job, input, outputs, {
    backupName,
    where: `claim(s) ${claims.map(nameOf).join(', ')}`,
    restoreStartedAt: start,
    backupCompletedAt: first?.metadata?.annotations?.[ANNOTATION_BACKUP_COMPLETED_AT],
  });
}

/** The children among `children` that are the very ones this Operation created (the uids it recorded). */
function own(children: readonly KubernetesObject[], op: Operation, kind: string): KubernetesObject[] {
  const recorded = new Set((op.status?.childRefs ?? []).flatMap((r) => (r.uid ? [r.uid] : [])));
  return ofKind(children, kind).filter((c) => recorded.has(c.metadata?.uid ?? ''));
}

/**
 * The ReplicationDestinations (VolSync stops; the garbage collector removes its mover Job and cache claim:
 * in the background, see volsync.ts cancel) and the restored claims, each by the uid recorded, not yet
 * being deleted. The probe Job stays (its log is the verdict) until the Operation goes.
 */
function dropCopies(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  return [...own(children, op, 'ReplicationDestination'), ...own(children, op, 'PersistentVolumeClaim')]
    .filter((c) => !c.metadata?.deletionTimestamp)
    .map((c) => ({
      kind: 'delete' as const,
      child: asManifest(c),
      propagationPolicy: 'Background' as const,
      ...(c.metadata?.uid ? { uid: c.metadata.uid } : {}),
    }));
}

/** Cancel and deadline: stop the probe, stop the restore, drop the copies. */
export function cancelVolsyncVerify(children: readonly KubernetesObject[], op: Operation): CancelAction[] {
  const jobs = ofKind(children, 'Job').map((j) => ({
    kind: 'delete' as const,
    child: asManifest(j),
    propagationPolicy: 'Foreground' as const,
  }));
  return [...jobs, ...dropCopies(children, op)];
}

/**
 * Once the drill has ended, whatever the outcome: the restored copies go. Everything is namespaced and owned
 * by the Operation, so deleting the Operation removes the rest (no finalizer is needed).
 */
export const cleanupVolsyncVerify: NonNullable<EngineAdapter['cleanup']> = (children, op) => ({
  actions: dropCopies(children, op),
  pending: false,
});
