// The snapshot Restore (snapshot-restore.ts): which snapshots, the plan, and each step decided from the
// cluster as it is.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  aClaim,
  anInput,
  aPodMounting,
  aSnapshotOf,
  aWorkload,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { snapshotAdapter } from './snapshot.ts';
import { planOf, type RestorePlan } from './snapshot-restore.ts';
import type { ChildAction, MaterializeInput, RestoreFacts } from './types.ts';

const CLAIM = 'data-db-0';
const facts = (o: Partial<RestoreFacts> = {}): RestoreFacts => ({
  pvcs: [aClaim(CLAIM)],
  workloads: [aWorkload('StatefulSet', 'db', 2), aWorkload('Deployment', 'web', 3)],
  pods: [aPodMounting('db-0', CLAIM)],
  snapshots: [
    aSnapshotOf('nightly-1-a', CLAIM, { op: 'nightly-1', created: '2026-11-25T02:00:00Z' }),
    aSnapshotOf('nightly-2-a', CLAIM, { op: 'nightly-2', created: '2026-11-26T02:00:00Z' }),
    // The newest, but not complete (still being cut): never the one restored.
    aSnapshotOf('nightly-3-a', CLAIM, { op: 'nightly-3', created: '2026-11-27T02:00:00Z', ready: false }),
  ],
  ...o,
});

function input(
  parameters: Record<string, unknown> = {},
  f: RestoreFacts = facts(),
  cancel = false,
): MaterializeInput {
  const i = anInput({
    name: 'bring-back',
    type: 'Restore',
    engine: 'snapshot',
    parameters,
    env: { restore: f },
  });
  if (cancel) i.op.spec.cancel = true;
  return i;
}

const [planChild] = materialized(snapshotAdapter.materialize(input()));
if (!planChild) throw new Error('a plan child expected');
const plan = planOf([planChild]) as RestorePlan;

/** What happens next, for the cluster as `f` describes it. */
const next = (f: RestoreFacts, cancel = false) =>
  snapshotAdapter.observe([withStatus(planChild, {})], {
    ...input({}, f, cancel),
    env: { veleroNamespace: 'velero', restore: f },
  });

const kinds = (actions: readonly ChildAction[] | undefined) =>
  (actions ?? []).map((a) =>
    a.kind === 'patch'
      ? `scale ${a.child.kind} ${a.child.metadata.name} to ${(a.patch.spec as { replicas: number }).replicas}`
      : a.kind === 'delete'
        ? `delete ${a.child.metadata.name}${a.uid ? ` (uid ${a.uid})` : ''}`
        : a.kind === 'ensure'
          ? `create ${a.object.metadata.name} from ${(a.object.spec as { dataSource: { name: string } }).dataSource.name}`
          : a.kind,
  );

describe('snapshot Restore: what it restores', () => {
  it('plans the newest complete snapshot Backup of the instance, with the workloads and their replicas', () => {
    expect(planChild).toMatchObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      immutable: true,
      metadata: { ownerReferences: [{ kind: 'Operation', controller: true }] },
    });
    expect(plan.claims.map((c) => [c.name, c.uid, c.snapshot])).toEqual([
      [CLAIM, `uid-${CLAIM}`, 'nightly-2-a'],
    ]);
    expect(plan.workloads).toEqual([
      { kind: 'Deployment', name: 'web', replicas: 3 },
      { kind: 'StatefulSet', name: 'db', replicas: 2 },
    ]);
  });

  it('recreates the claim as it was, Helm still its owner, from the snapshot and at least the old size', () => {
    expect(plan.claims[0]?.manifest).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: CLAIM,
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/instance': 'nextcloud-team-a', 'app.kubernetes.io/managed-by': 'Helm' },
        // The control plane's own annotations (binding, provisioner) are left to the new claim's.
        annotations: { 'meta.helm.sh/release-name': 'nextcloud-team-a' },
      },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'csi-hostpath',
        volumeMode: 'Filesystem',
        resources: { requests: { storage: '2Gi' } },
        dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'nightly-2-a' },
      },
    });
    expect(plan.claims[0]?.manifest.metadata).not.toHaveProperty('ownerReferences');
  });

  it('restores the one claim of a named snapshot; refuses one that is not ready or not of the release', () => {
    const [child] = materialized(snapshotAdapter.materialize(input({ snapshotName: 'nightly-1-a' })));
    expect(planOf(child ? [child] : [])?.claims.map((c) => c.snapshot)).toEqual(['nightly-1-a']);
    expect(snapshotAdapter.materialize(input({ snapshotName: 'nightly-3-a' }))).toMatchObject({
      ok: false,
      reason: 'BackupNotFound',
    });
    const other = facts({ snapshots: [aSnapshotOf('elsewhere', 'other-claim')] });
    const r = snapshotAdapter.materialize(input({ snapshotName: 'elsewhere' }, other));
    expect(r).toMatchObject({ ok: false, reason: 'InvalidParameters' });
    if (!r.ok) expect(r.message).toContain('not one of release nextcloud-team-a');
  });

  it('says there is nothing to restore without a complete snapshot Backup of this instance, or without claims', () => {
    const none = facts({
      snapshots: [
        aSnapshotOf('theirs', CLAIM, { instance: 'another' }),
        aSnapshotOf('half', CLAIM, { ready: false }),
      ],
    });
    const r = snapshotAdapter.materialize(input({}, none));
    expect(r).toMatchObject({ ok: false, reason: 'BackupNotFound' });
    if (!r.ok)
      expect(r.message).toContain('run a Backup with engine snapshot first, or name parameters.snapshotName');
    expect(snapshotAdapter.materialize(input({}, facts({ pvcs: [] })))).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
    });
  });
});

describe('snapshot Restore: each step from the cluster as it is', () => {
  const original = facts();
  const stopped = facts({
    workloads: [aWorkload('StatefulSet', 'db', 0), aWorkload('Deployment', 'web', 0)],
    pods: [],
  });

  it('scales the workloads to 0 and waits while a pod mounts the claim', () => {
    const o = next(original);
    expect(o).toMatchObject({
      phase: 'Running',
      reason: 'VolumeSnapshotRestoreInProgress',
      recheckAfterMs: 5000,
    });
    expect(o.message).toContain('waiting for pod(s) db-0 to stop mounting the claims');
    expect(kinds(o.actions)).toEqual(['scale Deployment web to 0', 'scale StatefulSet db to 0']);
    const scale = o.actions?.[0];
    expect(scale).toMatchObject({ kind: 'patch', subresource: 'scale' });
  });

  it('does not delete a claim a finished pod still names (Kubernetes would not let it go): says which to delete', () => {
    const o = next({ ...stopped, pods: [aPodMounting('migrate-x', CLAIM, 'Succeeded')] });
    expect(o.actions).toBeUndefined();
    expect(o.message).toContain(
      'finished pod(s) migrate-x still name the claims, and Kubernetes does not delete a claim a pod names; delete them (kubectl delete pod -n team-a migrate-x)',
    );
  });

  it('then deletes the old claim (that uid only), waits for it, creates it from the snapshot', () => {
    expect(kinds(next(stopped).actions)).toEqual([`delete ${CLAIM} (uid uid-${CLAIM})`]);
    const deleting = next({ ...stopped, pvcs: [aClaim(CLAIM, { deleting: true })] });
    expect(deleting.actions).toBeUndefined();
    expect(deleting.message).toContain(`waiting for the old ${CLAIM} to be deleted`);
    expect(kinds(next({ ...stopped, pvcs: [] }).actions)).toEqual([`create ${CLAIM} from nightly-2-a`]);
  });

  it('once the claim is the restored one: scales back, waits for Bound and ready, then succeeds', () => {
    const restored = aClaim(CLAIM, { uid: 'new', fromSnapshot: 'nightly-2-a', phase: 'Pending' });
    const up = next({ ...stopped, pvcs: [restored] });
    expect(kinds(up.actions)).toEqual(['scale Deployment web to 3', 'scale StatefulSet db to 2']);
    const starting = next({
      ...stopped,
      pvcs: [restored],
      workloads: [aWorkload('StatefulSet', 'db', 2, 0), aWorkload('Deployment', 'web', 3, 3)],
    });
    expect(starting.actions).toBeUndefined();
    expect(starting.message).toContain(
      `waiting for claim(s) ${CLAIM} to be Bound and StatefulSet db to be ready`,
    );
    const done = next({
      ...stopped,
      pvcs: [aClaim(CLAIM, { uid: 'new', fromSnapshot: 'nightly-2-a' })],
      workloads: original.workloads,
    });
    expect(done).toMatchObject({
      phase: 'Succeeded',
      reason: 'VolumeSnapshotRestored',
      outputs: { snapshotNames: 'nightly-2-a', [`snapshot.${CLAIM}`]: 'nightly-2-a' },
    });
  });

  it('a claim recreated by someone else (not from the snapshot) is replaced too', () => {
    const foreign = aClaim(CLAIM, { uid: 'someone-elses' });
    expect(kinds(next({ ...stopped, pvcs: [foreign] }).actions)).toEqual([
      `delete ${CLAIM} (uid someone-elses)`,
    ]);
  });
});

describe('snapshot Restore: stopped', () => {
  const children: KubernetesObject[] = [withStatus(planChild, {})];
  const stop = (f: RestoreFacts) =>
    snapshotAdapter.cancel(children, {
      ...input({}, f, true),
      env: { veleroNamespace: 'velero', restore: f },
    });

  it('before any claim was replaced: scales the workloads back and ends saying nothing was restored', () => {
    const down = facts({ workloads: [aWorkload('StatefulSet', 'db', 0), aWorkload('Deployment', 'web', 0)] });
    expect(kinds(stop(down))).toEqual(['scale Deployment web to 3', 'scale StatefulSet db to 2']);
    expect(next(down, true)).toMatchObject({ phase: 'Running' });
    const back = next(facts(), true);
    expect(back).toMatchObject({ phase: 'Failed', reason: 'VolumeSnapshotRestoreFailed' });
    expect(back.stopped).toContain('no claim was replaced');
  });

  it('after a claim was deleted: finishes the restore instead (a settling wait), then ends saying so', () => {
    const gone = facts({
      pvcs: [],
      workloads: [aWorkload('StatefulSet', 'db', 0), aWorkload('Deployment', 'web', 0)],
      pods: [],
    });
    const actions = stop(gone);
    expect(kinds(actions)).toEqual([`create ${CLAIM} from nightly-2-a`, 'wait']);
    expect(actions.at(-1)).toMatchObject({ kind: 'wait', settling: true });
    const done = next(facts({ pvcs: [aClaim(CLAIM, { uid: 'new', fromSnapshot: 'nightly-2-a' })] }), true);
    expect(done).toMatchObject({ phase: 'Succeeded' });
    expect(done.stopped).toContain('finished the restore');
  });
});
