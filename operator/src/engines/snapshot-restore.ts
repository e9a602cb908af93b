// snapshot engine, Restore: the release's PersistentVolumeClaims restored from VolumeSnapshots, the CSI
// way — a claim cannot be refilled in place, so it is recreated with the snapshot as its dataSource. Pure.
//
//   1. scale the release's Deployments and StatefulSets to 0 (their /scale, nothing else of them changes)
//   2. once no pod mounts a claim to restore: delete the claim (the pvc-protection finalizer holds it until
//      then anyway; its old volume follows its reclaim policy)
//   3. once it is gone: create it again, same name, labels and annotations (Helm still owns it), with
//      `dataSource` the VolumeSnapshot and at least the old volume's size
//   4. once every claim is the restored one: scale the workloads back; done when the claims are Bound and
//      the workloads ready.
//
// The child is the plan, a ConfigMap owned by the Operation, written before anything is touched: which
// claim (by the uid it had) comes from which snapshot, and how many replicas each workload had. A restart
// finds it (deterministic name) and goes on from what it says; every step is decided again from the
// cluster as it is (EngineEnvironment.restore), so repeating one is harmless. The recreated claims are the
// application's data: they never carry an owner reference.
//
// Stopped (cancel, deadline) before any claim was deleted, the workloads are scaled back and nothing else
// changed. After that there is no way back but forward: the restore is finished (a `settling` wait), and
// the message says so.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ANNOTATION_ATTEMPT,
  ANNOTATION_PVC,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_OPERATION_UID,
  MANAGED_BY,
} from '../api/annotations.ts';
import { childMetadata, childName, NAME_LIMITS } from './names.ts';
import { arr, at, isRecord, type Json, nameOf, num, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import type {
  CancelAction,
  ChildAction,
  ChildManifest,
  MaterializeInput,
  MaterializeResult,
  Observation,
  ObserveInput,
  RestoreFacts,
} from './types.ts';

export const RESTORE_PLAN_KEY = 'plan.json';
const SNAPSHOT_GROUP = 'snapshot.storage.k8s.io';
/** How often a running restore looks again: its progress shows on pods, claims and workloads, not on its child. */
export const RESTORE_RECHECK_MS = 5_000;

export interface PlannedClaim {
  name: string;
  /** The claim as it was: a claim with this uid is the one to replace. */
  uid: string;
  snapshot: string;
  /** What is created once it is gone. */
  manifest: ChildManifest;
}

export interface PlannedWorkload {
  kind: 'Deployment' | 'StatefulSet';
  name: string;
  replicas: number;
}

export interface RestorePlan {
  claims: PlannedClaim[];
  workloads: PlannedWorkload[];
}

type Refusal = { ok: false; reason: string; message: string };

/** The snapshot's claim: the annotation the snapshot engine writes, else its source. */
export function claimOf(snapshot: KubernetesObject): string {
  return (
    snapshot.metadata?.annotations?.[ANNOTATION_PVC] ??
    str(at(snapshot, 'spec', 'source', 'persistentVolumeClaimName')) ??
    ''
  );
}

const ready = (s: KubernetesObject) => at(s, 'status', 'readyToUse') === true;
const created = (o: KubernetesObject) => String(o.metadata?.creationTimestamp ?? '');

/**
 * Which snapshot restores which claim: `snapshotName` (one snapshot, of one of the release's claims), else
 * the newest complete snapshot Backup of the instance — the VolumeSnapshots one attempt of one Backup
 * Operation made (labels ops.vworkspace.io/instance and operation-uid, annotation attempt), all readyToUse.
 */
export function chooseSnapshots(
  parameters: Json,
  target: MaterializeInput['target'],
  facts: RestoreFacts,
): { ok: true; picks: { claim: string; snapshot: string }[] } | Refusal {
  const instance = target.metadata.name ?? '';
  const ns = target.metadata.namespace ?? '';
  const claims = new Set(facts.pvcs.map(nameOf));
  const named = str(parameters.snapshotName);
  const snapshots = facts.snapshots ?? [];
  if (named) {
    const s = snapshots.find((x) => nameOf(x) === named);
    if (!s || !ready(s)) {
      return {
        ok: false,
        reason: 'BackupNotFound',
        message: `parameters.snapshotName: there is no readyToUse VolumeSnapshot ${named} in namespace ${ns}; name one that \`kubectl get volumesnapshots -n ${ns}\` shows READYTOUSE true`,
      };
    }
    const claim = claimOf(s);
    if (!claims.has(claim)) {
      return {
        ok: false,
        reason: 'InvalidParameters',
        message: `parameters.snapshotName: VolumeSnapshot ${named} is of claim ${claim || '(unknown)'}, which is not one of release ${target.spec.release.name}'s PersistentVolumeClaims (${[...claims].join(', ') || 'none'})`,
      };
    }
    return { ok: true, picks: [{ claim, snapshot: named }] };
  }
  const sets = new Map<string, KubernetesObject[]>();
  for (const s of snapshots) {
    const l = s.metadata?.labels ?? {};
    if (l[LABEL_INSTANCE] !== instance || l[LABEL_MANAGED_BY] !== MANAGED_BY) continue;
    const key = `${l[LABEL_OPERATION_UID] ?? ''}/${s.metadata?.annotations?.[ANNOTATION_ATTEMPT] ?? ''}`;
    sets.set(key, [...(sets.get(key) ?? []), s]);
  }
  const takenAt = (set: KubernetesObject[]) => set.map(created).sort().at(-1) ?? '';
  const newest = [...sets.values()]
    .filter((set) => set.every(ready) && set.some((s) => claims.has(claimOf(s))))
    .sort((a, b) => takenAt(b).localeCompare(takenAt(a)))[0];
  if (!newest) {
    return {
      ok: false,
      reason: 'BackupNotFound',
      message: `no complete snapshot Backup of ApplicationInstance ${instance} in namespace ${ns} (VolumeSnapshots labelled ${LABEL_INSTANCE}=${instance}, every one readyToUse); run a Backup with engine snapshot first, or name parameters.snapshotName`,
    };
  }
  return {
    ok: true,
    picks: newest
      .filter((s) => claims.has(claimOf(s)))
      .map((s) => ({ claim: claimOf(s), snapshot: nameOf(s) }))
      .sort((a, b) => a.claim.localeCompare(b.claim)),
  };
}

/** Annotations the control plane writes on a claim and its binding; a new claim gets its own. */
const CONTROL_PLANE_ANNOTATION =
  /^(pv\.kubernetes\.io|volume\.kubernetes\.io|volume\.beta\.kubernetes\.io)\//;

/** The claim to create: the old one's identity (Helm's labels and annotations too), the snapshot as its source. */
export function restoredClaim(old: KubernetesObject, snapshot: string): ChildManifest {
  const annotations = Object.fromEntries(
    Object.entries(old.metadata?.annotations ?? {}).filter(([k]) => !CONTROL_PLANE_ANNOTATION.test(k)),
  );
  const spec = isRecord(at(old, 'spec')) ? (at(old, 'spec') as Json) : {};
  // At least the old volume's size: a claim smaller than the snapshot's restoreSize is refused.
  const size =
    str(at(old, 'status', 'capacity', 'storage')) ?? str(at(spec, 'resources', 'requests', 'storage'));
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: nameOf(old),
      namespace: old.metadata?.namespace ?? '',
      ...(old.metadata?.labels ? { labels: { ...old.metadata.labels } } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: {
      accessModes: arr(spec.accessModes),
      ...(spec.storageClassName !== undefined ? { storageClassName: spec.storageClassName } : {}),
      ...(spec.volumeMode !== undefined ? { volumeMode: spec.volumeMode } : {}),
      resources: { requests: { storage: size ?? '1Gi' } },
      dataSource: { apiGroup: SNAPSHOT_GROUP, kind: 'VolumeSnapshot', name: snapshot },
    },
  };
}

function workloadsOf(facts: RestoreFacts): PlannedWorkload[] {
  return facts.workloads
    .filter((w) => w.kind === 'Deployment' || w.kind === 'StatefulSet')
    .map((w) => ({
      kind: w.kind as PlannedWorkload['kind'],
      name: nameOf(w),
      replicas: num(at(w, 'spec', 'replicas')) ?? 1,
    }))
    .sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
}

export function materializeRestore(input: MaterializeInput): MaterializeResult {
  const { op, target, parameters, env, attempt } = input;
  const facts = env.restore;
  if (!facts || facts.pvcs.length === 0) {
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `the snapshot engine restores the release's PersistentVolumeClaims, and namespace ${op.metadata.namespace ?? ''} has none labelled app.kubernetes.io/instance=${target.spec.release.name}; check the release`,
    };
  }
  const chosen = chooseSnapshots(parameters, target, facts);
  if (!chosen.ok) return chosen;
  const byName = new Map(facts.pvcs.map((p) => [nameOf(p), p]));
  const plan: RestorePlan = {
    claims: chosen.picks.map(({ claim, snapshot }) => {
      const old = byName.get(claim)!;
      return { name: claim, uid: old.metadata?.uid ?? '', snapshot, manifest: restoredClaim(old, snapshot) };
    }),
    workloads: workloadsOf(facts),
  };
  const child: ChildManifest = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMetadata(op, {
      name: childName(op, attempt, NAME_LIMITS.snapshot, 'restore-plan'),
      attempt,
      labels: { [LABEL_INSTANCE]: target.metadata.name ?? '' },
    }),
    immutable: true,
    data: { [RESTORE_PLAN_KEY]: JSON.stringify(plan) },
  };
  return { ok: true, children: [child] };
}

/** The plan the child holds; undefined when it is not there or not readable. */
export function planOf(children: readonly KubernetesObject[]): RestorePlan | undefined {
  const cm = ofKind(children, 'ConfigMap')[0];
  const text = str(at(cm, 'data', RESTORE_PLAN_KEY));
  if (!text) return undefined;
  try {
    const p = JSON.parse(text) as RestorePlan;
    return Array.isArray(p.claims) && Array.isArray(p.workloads) ? p : undefined;
  } catch {
    return undefined;
  }
}

type ClaimState = 'original' | 'deleting' | 'gone' | 'restored' | 'other';

function claimState(c: PlannedClaim, pvcs: readonly KubernetesObject[]): ClaimState {
  const pvc = pvcs.find((p) => nameOf(p) === c.name);
  if (!pvc) return 'gone';
  if (pvc.metadata?.deletionTimestamp) return 'deleting';
  if (pvc.metadata?.uid === c.uid) return 'original';
  const source = at(pvc, 'spec', 'dataSource');
  return str(at(source, 'kind')) === 'VolumeSnapshot' && str(at(source, 'name')) === c.snapshot
    ? 'restored'
    : 'other';
}

/**
 * Pods that name one of `claims`: running ones (wait for them to stop), and finished ones, which count
 * too — the pvc-protection controller keeps a claim while any scheduled pod names it, completed or not —
 * and which no scaling removes.
 */
function podsReferring(
  pods: readonly KubernetesObject[],
  claims: ReadonlySet<string>,
): { running: string[]; finished: string[] } {
  const referring = pods.filter((p) =>
    arr(at(p, 'spec', 'volumes')).some((v) =>
      claims.has(str(at(v, 'persistentVolumeClaim', 'claimName')) ?? ''),
    ),
  );
  const done = (p: KubernetesObject) => ['Succeeded', 'Failed'].includes(str(at(p, 'status', 'phase')) ?? '');
  return {
    running: referring
      .filter((p) => !done(p))
      .map(nameOf)
      .sort(),
    finished: referring.filter(done).map(nameOf).sort(),
  };
}

function scale(w: PlannedWorkload, namespace: string, replicas: number): ChildAction {
  return {
    kind: 'patch',
    subresource: 'scale',
    child: { apiVersion: 'apps/v1', kind: w.kind, metadata: { name: w.name, namespace } },
    patch: { spec: { replicas } },
  };
}

function current(w: PlannedWorkload, facts: RestoreFacts): KubernetesObject | undefined {
  return facts.workloads.find((x) => x.kind === w.kind && nameOf(x) === w.name);
}

/** Scale actions bringing every workload of the plan to `replicas(w)`, where it is not there yet. */
function scaleTo(
  plan: RestorePlan,
  facts: RestoreFacts,
  ns: string,
  replicas: (w: PlannedWorkload) => number,
) {
  return plan.workloads.flatMap((w) => {
    const now = current(w, facts);
    return now && num(at(now, 'spec', 'replicas')) !== replicas(w) ? [scale(w, ns, replicas(w))] : [];
  });
}

interface Step {
  phase: 'Running' | 'Succeeded';
  message: string;
  actions: ChildAction[];
}

/** Forward: the next step of the restore from the cluster as it is (steps 1–4 of the header). */
function forward(plan: RestorePlan, facts: RestoreFacts, ns: string): Step {
  const states = plan.claims.map((c) => ({ c, state: claimState(c, facts.pvcs) }));
  const pending = states.filter((s) => s.state !== 'restored');
  const from = plan.claims.map((c) => `${c.name} from ${c.snapshot}`).join(', ');
  if (pending.length > 0) {
    const down = scaleTo(plan, facts, ns, () => 0);
    // Only claims still to go: a pod may already mount a restored one, or wait for a gone one.
    const old = new Set(pending.filter((p) => p.state !== 'gone').map((p) => p.c.name));
    const pods = podsReferring(facts.pods, old);
    if (pods.running.length > 0) {
      return {
        phase: 'Running',
        message: `restoring ${from}: the workloads are scaled to 0; waiting for pod(s) ${pods.running.join(', ')} to stop mounting the claims`,
        actions: down,
      };
    }
    if (pods.finished.length > 0) {
      return {
        phase: 'Running',
        message: `restoring ${from}: finished pod(s) ${pods.finished.join(', ')} still name the claims, and Kubernetes does not delete a claim a pod names; delete them (kubectl delete pod -n ${ns} ${pods.finished.join(' ')}) and the restore goes on`,
        actions: down,
      };
    }
    const actions: ChildAction[] = [...down];
    const doing: string[] = [];
    for (const { c, state } of pending) {
      if (state === 'gone') {
        actions.push({ kind: 'ensure', object: c.manifest });
        doing.push(`creating ${c.name} from VolumeSnapshot ${c.snapshot}`);
      } else if (state === 'deleting') doing.push(`waiting for the old ${c.name} to be deleted`);
      else {
        const pvc = facts.pvcs.find((p) => nameOf(p) === c.name)!;
        actions.push({
          kind: 'delete',
          child: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: c.name, namespace: ns },
          },
          propagationPolicy: 'Background',
          // Only the claim looked at now: never one created since under the same name.
          ...(pvc.metadata?.uid ? { uid: pvc.metadata.uid } : {}),
        });
        doing.push(`deleting the old ${c.name}`);
      }
    }
    return { phase: 'Running', message: `restoring ${from}: ${doing.join('; ')}`, actions };
  }
  const up = scaleTo(plan, facts, ns, (w) => w.replicas);
  const unbound = plan.claims
    .filter(
      (c) =>
        str(
          at(
            facts.pvcs.find((p) => nameOf(p) === c.name),
            'status',
            'phase',
          ),
        ) !== 'Bound',
    )
    .map((c) => c.name);
  const notReady = plan.workloads
    .filter((w) => {
      const now = current(w, facts);
      return w.replicas > 0 && (num(at(now, 'status', 'readyReplicas')) ?? 0) < w.replicas;
    })
    .map((w) => `${w.kind} ${w.name}`);
  if (up.length > 0 || unbound.length > 0 || notReady.length > 0) {
    const waits = [
      ...(unbound.length > 0 ? [`claim(s) ${unbound.join(', ')} to be Bound`] : []),
      ...(notReady.length > 0 ? [`${notReady.join(', ')} to be ready`] : []),
    ];
    return {
      phase: 'Running',
      message: `restored ${from}; the workloads are scaled back${waits.length > 0 ? `; waiting for ${waits.join(' and ')}` : ''}`,
      actions: up,
    };
  }
  return {
    phase: 'Succeeded',
    message: `restored ${from}; ${plan.workloads.map((w) => `${w.kind} ${w.name} (${w.replicas})`).join(', ') || 'no workloads'} back and ready`,
    actions: [],
  };
}

/** Whether a claim was already replaced (deleted, being deleted, or recreated): no way back. */
function touched(plan: RestorePlan, facts: RestoreFacts): boolean {
  return plan.claims.some((c) => claimState(c, facts.pvcs) !== 'original');
}

function outputs(plan: RestorePlan): Record<string, string> {
  const out: Record<string, string> = { snapshotNames: plan.claims.map((c) => c.snapshot).join(',') };
  for (const c of plan.claims) out[`snapshot.${c.name}`] = c.snapshot;
  return out;
}

export function observeRestore(children: readonly KubernetesObject[], input: ObserveInput): Observation {
  const plan = planOf(children);
  const facts = input.env?.restore;
  if (!plan)
    return running('VolumeSnapshotRestoreInProgress', 'waiting for the restore plan (ConfigMap) to appear');
  const out = outputs(plan);
  if (!facts) {
    return {
      ...running(
        'VolumeSnapshotRestoreInProgress',
        'cannot read the claims, workloads and pods of the namespace (the restore.snapshot profile is no longer bound?); waiting',
        out,
      ),
      recheckAfterMs: RESTORE_RECHECK_MS,
    };
  }
  const ns = children[0]?.metadata?.namespace ?? '';
  if (input.op.spec.cancel && !touched(plan, facts)) {
    const back = scaleTo(plan, facts, ns, (w) => w.replicas).length === 0;
    if (back) {
      const end = `no claim was replaced; the workloads are back to their replicas (${plan.workloads.map((w) => `${w.kind} ${w.name}: ${w.replicas}`).join(', ') || 'none'})`;
      return {
        ...failed('VolumeSnapshotRestoreFailed', `stopped before any claim was replaced: ${end}`, false, out),
        stopped: end,
      };
    }
    return running(
      'VolumeSnapshotRestoreInProgress',
      'scaling the workloads back: nothing was replaced yet',
      out,
    );
  }
  const step = forward(plan, facts, ns);
  if (step.phase === 'Succeeded') {
    return {
      ...succeeded('VolumeSnapshotRestored', step.message, out),
      ...(input.op.spec.cancel ? { stopped: `finished the restore (${step.message})` } : {}),
    };
  }
  return {
    ...running('VolumeSnapshotRestoreInProgress', step.message, out),
    ...(step.actions.length > 0 ? { actions: step.actions } : {}),
    recheckAfterMs: RESTORE_RECHECK_MS,
  };
}

export function cancelRestore(children: readonly KubernetesObject[], input?: ObserveInput): CancelAction[] {
  const plan = planOf(children);
  const facts = input?.env?.restore;
  if (!plan || !facts) return [];
  const ns = children[0]?.metadata?.namespace ?? '';
  if (!touched(plan, facts)) return scaleTo(plan, facts, ns, (w) => w.replicas);
  const step = forward(plan, facts, ns);
  if (step.phase === 'Succeeded') return [];
  return [
    ...step.actions,
    {
      kind: 'wait',
      settling: true,
      message: `a claim was already replaced, so the restore is finished rather than undone: ${step.message}`,
    },
  ];
}
