// The snapshot Verify drill (snapshot-verify.ts): which snapshots it may restore, what it creates (claims
// from them and the probe, never a snapshot), how it reads the verdict and measures RTO/RPO, and that the
// restored claims — only those — go whatever the outcome.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  aClaim,
  anInput,
  aSnapshotOf,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { ANNOTATION_BACKUP_COMPLETED_AT } from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { snapshotAdapter } from './snapshot.ts';
import type { ChildManifest, MaterializeInput, PodOutcome } from './types.ts';

const PROBE = ['sh', '-c', 'test -s $VWS_RESTORED_DIR/data-db-0/PG_VERSION'];
const CUT = '2026-11-28T10:00:00Z';

const cutSnapshot = (s: KubernetesObject, restoreSize = '2Gi') => ({
  ...s,
  status: { readyToUse: true, creationTime: CUT, restoreSize },
});

function drill(snapshots: KubernetesObject[], parameters: Record<string, unknown> = {}): MaterializeInput {
  return anInput({
    name: 'drill',
    namespace: 'team-a',
    type: 'Verify',
    engine: 'snapshot',
    parameters: { command: PROBE, ...parameters },
    env: { restore: { pvcs: [aClaim('data-db-0')], workloads: [], pods: [], snapshots } },
  });
}

const nightly = [
  cutSnapshot(aSnapshotOf('db-old', 'data-db-0', { op: 'old', created: '2026-11-27T10:00:00Z' })),
  cutSnapshot(aSnapshotOf('db-new', 'data-db-0', { op: 'new', created: '2026-11-28T10:00:00Z' })),
];

/** The children as created (uids) and the Operation recording them. */
function created(input: MaterializeInput): { op: Operation; children: ChildManifest[] } {
  const children = materialized(snapshotAdapter.materialize(input));
  const op = structuredClone(input.op);
  op.status = {
    phase: 'Running',
    childRefs: children.map((c, i) => ({
      apiVersion: c.apiVersion,
      kind: c.kind,
      name: c.metadata.name,
      namespace: c.metadata.namespace,
      uid: `uid-${i}`,
    })),
  };
  return { op, children };
}

function state(
  children: readonly ChildManifest[],
  claim: Record<string, unknown>,
  job: Record<string, unknown>,
): KubernetesObject[] {
  return children.map((c, i) => {
    const o = withStatus(c, c.kind === 'Job' ? job : claim, `uid-${i}`);
    o.metadata = { ...o.metadata, creationTimestamp: new Date('2026-11-28T12:00:00Z') };
    return o;
  });
}

describe('snapshot Verify: what it restores', () => {
  it('restores the newest snapshot Backup into new claims of the namespace and mounts them in the probe', () => {
    const children = materialized(snapshotAdapter.materialize(drill(nightly)));
    expect(children.map((c) => c.kind)).toEqual(['PersistentVolumeClaim', 'Job']);
    const [copy, probe] = children as [ChildManifest, ChildManifest];
    expect(copy.metadata.namespace).toBe('team-a');
    expect(copy.metadata.name).not.toBe('data-db-0');
    expect(copy.metadata.annotations?.[ANNOTATION_BACKUP_COMPLETED_AT]).toBe(new Date(CUT).toISOString());
    expect(copy.spec).toMatchObject({
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'db-new' },
      resources: { requests: { storage: '2Gi' } },
      storageClassName: 'csi-hostpath',
    });
    const pod = (probe.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    // The copy's files readable to the probe's (non-root) group; still the restricted profile.
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, fsGroup: 65532 });
    expect(pod.volumes).toContainEqual({
      name: 'restored-0',
      persistentVolumeClaim: { claimName: copy.metadata.name },
    });
    const container = (pod.containers as { volumeMounts: unknown[]; env: unknown[] }[])[0];
    expect(container?.volumeMounts).toContainEqual({ name: 'restored-0', mountPath: '/restored/data-db-0' });
    expect(container?.env).toContainEqual({ name: 'VWS_SNAPSHOT_NAMES', value: 'db-new' });
  });

  it('restores a named snapshot of the instance', () => {
    const [copy] = materialized(snapshotAdapter.materialize(drill(nightly, { snapshotName: 'db-old' })));
    expect(copy?.spec).toMatchObject({ dataSource: { name: 'db-old' } });
  });

  it('refuses a snapshot no Backup of this instance made, with the same words as a missing one', () => {
    const handMade = cutSnapshot(aSnapshotOf('hand-made', 'data-db-0'));
    delete handMade.metadata?.labels?.['app.kubernetes.io/managed-by'];
    const otherInstance = cutSnapshot(aSnapshotOf('theirs', 'data-db-0', { instance: 'wiki' }));
    for (const name of ['hand-made', 'theirs', 'absent']) {
      const r = snapshotAdapter.materialize(
        drill([...nightly, handMade, otherInstance], { snapshotName: name }),
      );
      expect(r).toMatchObject({ ok: false, reason: 'BackupNotAllowed' });
      expect(!r.ok && r.message).toContain(
        `there is no VolumeSnapshot ${name} made by a snapshot Backup of ApplicationInstance nextcloud in namespace team-a`,
      );
    }
  });

  it('says what to do when the instance has no complete snapshot Backup', () => {
    const r = snapshotAdapter.materialize(drill([aSnapshotOf('cutting', 'data-db-0', { ready: false })]));
    expect(r).toMatchObject({ ok: false, reason: 'BackupNotFound' });
    expect(!r.ok && r.message).toContain('run a Backup with engine snapshot first');
  });

  it('refuses a probe image outside the allowlist', () => {
    expect(() => drill(nightly, { image: 'evil/image:latest' })).toThrow();
  });
});

describe('snapshot Verify: the verdict', () => {
  const { op, children } = created(drill(nightly));
  const input = { op, attempt: 1 };

  it('waits while the copies bind', () => {
    const obs = snapshotAdapter.observe(state(children, { phase: 'Pending' }, {}), input);
    expect(obs).toMatchObject({ phase: 'Running', reason: 'VerifyRestoreInProgress' });
    expect(obs.message).toContain('restoring VolumeSnapshot(s) db-new');
  });

  it('fails with what the probe said when it exits non-zero', () => {
    const pods: PodOutcome[] = [
      { pod: 'p', container: 'probe', exitCode: 1, reason: 'Error', logTail: 'PG_VERSION: missing' },
    ];
    const obs = snapshotAdapter.observe(
      state(
        children,
        { phase: 'Bound' },
        { failed: 1, conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] },
      ),
      { ...input, pods },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'VerifyProbeFailed', retryable: false });
    expect(obs.message).toContain('PG_VERSION: missing');
    expect(obs.outputs?.probeOutput).toContain('PG_VERSION: missing');
    expect(obs.outputs?.verifiedBackup).toBeUndefined();
  });

  it('passes with RTO from the first copy to the probe and RPO from the snapshot cut', () => {
    const pods: PodOutcome[] = [{ pod: 'p', container: 'probe', exitCode: 0, logTail: 'ok' }];
    const obs = snapshotAdapter.observe(
      state(
        children,
        { phase: 'Bound' },
        { succeeded: 1, completionTime: '2026-11-28T12:01:30Z', conditions: [jobCondition('Complete')] },
      ),
      { ...input, pods },
    );
    expect(obs).toMatchObject({ phase: 'Succeeded', reason: 'VerifyPassed' });
    expect(obs.outputs).toMatchObject({
      verifiedBackup: 'db-new',
      rtoSeconds: '90',
      rpoSeconds: String(2 * 3600 + 90),
      verifiedAt: '2026-11-28T12:01:30Z',
    });
  });
});

describe('snapshot Verify: clean-up', () => {
  const { op, children } = created(drill(nightly));

  it('deletes exactly the restored claims it recorded, by uid, and never a snapshot', () => {
    const live = state(children, { phase: 'Bound' }, {});
    const stranger = aClaim('data-db-0', { uid: 'theirs' });
    const source = nightly[1] as KubernetesObject;
    const { actions, pending } = snapshotAdapter.cleanup?.([...live, stranger, source], op) ?? {
      actions: [],
      pending: false,
    };
    expect(pending).toBe(true);
    expect(actions).toEqual([
      expect.objectContaining({
        kind: 'delete',
        uid: 'uid-0',
        child: expect.objectContaining({
          kind: 'PersistentVolumeClaim',
          metadata: expect.objectContaining({ name: children[0]?.metadata.name }),
        }),
      }),
    ]);
  });

  it('is done once the copies are being deleted', () => {
    const going = state(children, { phase: 'Bound' }, {}).map((c) =>
      c.kind === 'PersistentVolumeClaim'
        ? { ...c, metadata: { ...c.metadata, deletionTimestamp: new Date() } }
        : c,
    );
    expect(snapshotAdapter.cleanup?.(going, op)).toEqual({ actions: [], pending: false });
  });

  it('a cancel stops the probe and drops the copies', () => {
    const actions = snapshotAdapter.cancel(state(children, { phase: 'Bound' }, {}), { op, attempt: 1 });
    expect(actions.map((a) => (a.kind === 'delete' ? a.child.kind : a.kind))).toEqual([
      'Job',
      'PersistentVolumeClaim',
    ]);
  });
});
