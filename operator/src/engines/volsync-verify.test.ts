// The volsync Verify drill (volsync-verify.ts): which backup it restores and from which repository, what it
// creates (copies beside the instance's claims, never into them), how it reads the restore and the probe,
// the RTO/RPO it measures, and that the copies go whatever the outcome.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  anInput,
  anOperation,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import {
  ANNOTATION_BACKUP_COMPLETED_AT,
  ANNOTATION_BACKUP_OPERATION,
  LABEL_SCRATCH_FOR,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { RESTORED_DIR } from './drill-verdict.ts';
import { ANNOTATION_PVC } from './names.ts';
import type { ChildManifest, MaterializeInput, PodOutcome, VolsyncBackupRecord } from './types.ts';
import { manualTrigger, volsyncAdapter } from './volsync.ts';
import { volsyncBackupRecords } from './volsync-verify.ts';

const PROBE = ['sh', '-c', 'echo rows=42'];
const CLAIMS = ['data-db-0', 'data-files'];
const REPOSITORIES = { 'data-db-0': 'restic-db', 'data-files': 'restic-files' };
const COMPLETED_AT = '2026-11-28T10:00:00Z';

const claim = (name: string, storage = '2Gi'): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'team-a', uid: `source-${name}` },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast',
      resources: { requests: { storage } },
    },
  }) as KubernetesObject;

const record = (o: Partial<VolsyncBackupRecord> = {}): VolsyncBackupRecord => ({
  operation: 'restic-nightly',
  completedAt: COMPLETED_AT,
  repository: REPOSITORIES,
  ...o,
});

function verify(
  o: { parameters?: Record<string, unknown>; backups?: VolsyncBackupRecord[]; claims?: string[] } = {},
): MaterializeInput {
  const claims = o.claims ?? CLAIMS;
  return anInput({
    name: 'drill',
    namespace: 'team-a',
    type: 'Verify',
    engine: 'volsync',
    parameters: o.parameters ?? { repository: REPOSITORIES, command: PROBE },
    env: {
      pvcs: claims,
      releaseClaims: claims.map((c) => claim(c)),
      volsyncBackups: o.backups ?? [record()],
    },
  });
}

function refused(input: MaterializeInput): { reason: string; message: string } {
  const r = volsyncAdapter.materialize(input);
  if (r.ok) throw new Error('materialize should have refused');
  return r;
}

const ofKind = (children: readonly KubernetesObject[], kind: string) =>
  children.filter((c) => c.kind === kind);

/** The children as the API server has them once created (uids), with the Operation recording them. */
function created(input: MaterializeInput): { op: Operation; children: ChildManifest[] } {
  const children = materialized(volsyncAdapter.materialize(input));
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

/** The children with the ReplicationDestinations synced (or not) and the probe Job's status. */
function state(
  children: readonly ChildManifest[],
  o: { synced?: boolean; mover?: Record<string, unknown>; job?: Record<string, unknown> } = {},
): KubernetesObject[] {
  return children.map((c, i) => {
    const uid = `uid-${i}`;
    if (c.kind === 'ReplicationDestination') {
      const trigger = (c.spec as { trigger: { manual: string } }).trigger.manual;
      const s = withStatus(
        c,
        {
          ...(o.synced ? { lastManualSync: trigger } : {}),
          ...(o.mover ? { latestMoverStatus: o.mover } : {}),
        },
        uid,
      );
      s.metadata = { ...s.metadata, creationTimestamp: new Date('2026-11-28T12:00:00Z') };
      return s;
    }
    if (c.kind === 'Job') {
      const j = withStatus(c, o.job ?? {}, uid) as KubernetesObject & { spec: { suspend?: boolean } };
      j.spec = { ...j.spec, suspend: o.job === undefined };
      return j;
    }
    return withStatus(c, { phase: 'Bound' }, uid);
  });
}

const pods = (exitCode: number, logTail: string): PodOutcome[] => [
  { pod: 'drill-probe-x', container: 'probe', exitCode, logTail },
];

describe('volsync Verify: which backup, which repository', () => {
  it('picks the Succeeded volsync Backups of the instance, newest first, with the repository they wrote to', () => {
    const op = (name: string, o: Partial<Operation['spec']>, phase: string, finishedAt: string) => {
      const x = anOperation({ name, type: 'Backup', engine: 'volsync', target: 'db' });
      x.spec = { ...x.spec, parameters: { repository: 'restic-db' }, ...o };
      x.status = { phase: phase as 'Succeeded', finishedAt };
      return x;
    };
    const records = volsyncBackupRecords(
      [
        op('older', {}, 'Succeeded', '2026-11-27T10:00:00Z'),
        op('newer', {}, 'Succeeded', '2026-11-28T10:00:00Z'),
        op('failed', {}, 'Failed', '2026-11-28T11:00:00Z'),
        op('velero', { engine: 'velero' }, 'Succeeded', '2026-11-28T12:00:00Z'),
        op('other-instance', { targetRef: { name: 'web' } }, 'Succeeded', '2026-11-28T12:00:00Z'),
        op('no-repository', { parameters: {} }, 'Succeeded', '2026-11-28T12:00:00Z'),
      ],
      'db',
    );
    expect(records).toEqual([
      { operation: 'newer', completedAt: '2026-11-28T10:00:00Z', repository: 'restic-db' },
      { operation: 'older', completedAt: '2026-11-27T10:00:00Z', repository: 'restic-db' },
    ]);
  });

  it('restores the newest Backup, or the one parameters.backupName names, as of its completion', () => {
    const newest = materialized(
      volsyncAdapter.materialize(
        verify({
          backups: [record(), record({ operation: 'restic-weekly', completedAt: '2026-11-21T10:00:00Z' })],
        }),
      ),
    );
    expect(ofKind(newest, 'ReplicationDestination')[0]).toMatchObject({
      metadata: {
        annotations: {
          [ANNOTATION_BACKUP_OPERATION]: 'restic-nightly',
          [ANNOTATION_BACKUP_COMPLETED_AT]: COMPLETED_AT,
        },
      },
      spec: { restic: { restoreAsOf: COMPLETED_AT } },
    });
    const named = materialized(
      volsyncAdapter.materialize(
        verify({
          parameters: { repository: REPOSITORIES, command: PROBE, backupName: 'restic-weekly' },
          backups: [record(), record({ operation: 'restic-weekly', completedAt: '2026-11-21T10:00:00Z' })],
        }),
      ),
    );
    expect(ofKind(named, 'ReplicationDestination')[0]).toMatchObject({
      spec: { restic: { restoreAsOf: '2026-11-21T10:00:00Z' } },
    });
  });

  it('refuses without a Succeeded Backup of the instance, and a backupName that is not one', () => {
    expect(refused(verify({ backups: [] }))).toMatchObject({
      reason: 'BackupNotAllowed',
      message: expect.stringContaining('run a volsync Backup Operation first'),
    });
    expect(
      refused(verify({ parameters: { repository: REPOSITORIES, command: PROBE, backupName: 'theirs' } })),
    ).toMatchObject({
      reason: 'BackupNotAllowed',
      message: expect.stringContaining('no Succeeded volsync Backup Operation theirs'),
    });
  });

  it('reads only the repository the Backup wrote to (VolSync would initialize any other one)', () => {
    const r = refused(
      verify({
        parameters: { repository: { ...REPOSITORIES, 'data-files': 'restic-elsewhere' }, command: PROBE },
      }),
    );
    expect(r.reason).toBe('InvalidParameters');
    expect(r.message).toContain('parameters.repository: Backup Operation restic-nightly wrote to');
    expect(r.message).toContain('data-files: restic-files');
  });

  it('refuses a probe image the template does not allow (parameters that bypassed the schema)', () => {
    const input = verify();
    input.parameters.image = 'evil:latest';
    expect(refused(input).message).toContain('parameters.image "evil:latest" is not allowed');
  });
});

describe('volsync Verify: the children', () => {
  it('restores each claim into a copy of its own, beside the instance’s claims, and mounts the copies in the probe', () => {
    const children = materialized(volsyncAdapter.materialize(verify()));
    expect(children.map((c) => c.kind)).toEqual([
      'PersistentVolumeClaim',
      'PersistentVolumeClaim',
      'ReplicationDestination',
      'ReplicationDestination',
      'Job',
    ]);
    const copies = ofKind(children, 'PersistentVolumeClaim') as ChildManifest[];
    const destinations = ofKind(children, 'ReplicationDestination') as ChildManifest[];
    for (const [i, source] of CLAIMS.entries()) {
      const copy = copies[i]!;
      expect(copy.metadata.name).not.toBe(source);
      expect(copy.metadata.labels?.[LABEL_SCRATCH_FOR]).toBe('team-a');
      expect(copy.metadata.annotations?.[ANNOTATION_PVC]).toBe(source);
      expect(copy).toMatchObject({
        metadata: { namespace: 'team-a', ownerReferences: [{ kind: 'Operation' }] },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'fast',
          resources: { requests: { storage: '2Gi' } },
        },
      });
      expect(destinations[i]).toMatchObject({
        spec: {
          trigger: { manual: manualTrigger('drill', 1) },
          restic: {
            repository: REPOSITORIES[source as keyof typeof REPOSITORIES],
            destinationPVC: copy.metadata.name,
            copyMethod: 'Direct',
          },
        },
      });
      // Only a restore: nothing that writes to the repository.
      const restic = (destinations[i]!.spec as { restic: Record<string, unknown> }).restic;
      expect(Object.keys(restic).sort()).toEqual([
        'copyMethod',
        'destinationPVC',
        'repository',
        'restoreAsOf',
      ]);
    }
    const job = ofKind(children, 'Job')[0] as ChildManifest & {
      spec: { suspend: boolean; template: { spec: Record<string, unknown> } };
    };
    expect(job.spec.suspend).toBe(true);
    const pod = job.spec.template.spec as {
      automountServiceAccountToken: boolean;
      volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[];
      containers: {
        volumeMounts: { name: string; mountPath: string }[];
        env: { name: string; value: string }[];
      }[];
    };
    expect(pod.automountServiceAccountToken).toBe(false);
    const byVolume = new Map(pod.volumes.map((v) => [v.name, v.persistentVolumeClaim?.claimName]));
    const mounts = pod.containers[0]!.volumeMounts.filter((m) => m.mountPath.startsWith(RESTORED_DIR));
    expect(mounts.map((m) => [m.mountPath, byVolume.get(m.name)])).toEqual(
      CLAIMS.map((c, i) => [`${RESTORED_DIR}/${c}`, copies[i]!.metadata.name]),
    );
    expect(pod.containers[0]!.env).toEqual(
      expect.arrayContaining([
        { name: 'VWS_CLAIMS', value: CLAIMS.join(',') },
        { name: 'VWS_BACKUP_NAME', value: 'restic-nightly' },
      ]),
    );
  });

  it('refuses a claim it cannot size a copy by', () => {
    const input = verify();
    input.env.releaseClaims = [claim('data-db-0'), { ...claim('data-files'), spec: {} } as KubernetesObject];
    expect(refused(input).message).toContain(
      'PersistentVolumeClaim data-files has no spec.resources.requests.storage',
    );
  });
});

describe('volsync Verify: observe', () => {
  it('waits for every restore, then resumes the probe', () => {
    const { op, children } = created(verify());
    const restoring = volsyncAdapter.observe(state(children), { op, attempt: 1 });
    expect(restoring).toMatchObject({ phase: 'Running', reason: 'VerifyRestoreInProgress' });
    const restored = volsyncAdapter.observe(state(children, { synced: true }), { op, attempt: 1 });
    expect(restored.reason).toBe('VerifyProbeRunning');
    expect(restored.actions).toEqual([
      expect.objectContaining({ kind: 'patch', patch: { spec: { suspend: false } } }),
    ]);
  });

  it('fails with what the mover said when a restore failed; the probe never runs', () => {
    const { op, children } = created(verify());
    const obs = volsyncAdapter.observe(
      state(children, {
        mover: {
          result: 'Failed',
          logs: 'Fatal: unable to open repository\nERROR: pack 3f2a: ciphertext verification failed',
        },
      }),
      { op, attempt: 1 },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'VerifyRestoreFailed', retryable: false });
    expect(obs.message).toContain('backup restic-nightly did not restore');
    expect(obs.message).toContain('ciphertext verification failed');
  });

  it('a probe that exits non-zero fails the drill with its last lines', () => {
    const { op, children } = created(verify());
    const obs = volsyncAdapter.observe(
      state(children, {
        synced: true,
        job: { conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] },
      }),
      { op, attempt: 1, pods: pods(1, 'FATAL: no pgdata in /restored/data-db-0') },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'VerifyProbeFailed' });
    expect(obs.message).toContain('no pgdata');
    expect(obs.outputs?.probeOutput).toBe('FATAL: no pgdata in /restored/data-db-0');
  });

  it('a passing probe records the verified backup, the RTO from the first restore and the backup’s age', () => {
    const { op, children } = created(verify());
    const obs = volsyncAdapter.observe(
      state(children, {
        synced: true,
        job: { completionTime: '2026-11-28T12:05:00Z', conditions: [jobCondition('Complete')] },
      }),
      { op, attempt: 1, pods: pods(0, '3 rows') },
    );
    expect(obs).toMatchObject({ phase: 'Succeeded', reason: 'VerifyPassed' });
    expect(obs.outputs).toMatchObject({
      verifiedBackup: 'restic-nightly',
      backupName: 'restic-nightly',
      verifiedAt: '2026-11-28T12:05:00Z',
      rtoSeconds: '300',
      rpoSeconds: String(2 * 3600 + 300),
      probeOutput: '3 rows',
    });
  });
});

describe('volsync Verify: the copies go whatever the outcome', () => {
  it('cleanup deletes the ReplicationDestinations and the copies it recorded, by uid; never the source claims', () => {
    const { op, children } = created(verify());
    const now = [...state(children, { synced: true }), claim('data-db-0')];
    const cleanup = volsyncAdapter.cleanup?.(now, { ...op, status: { ...op.status, phase: 'Failed' } });
    expect(cleanup?.pending).toBe(false);
    const deleted = (cleanup?.actions ?? []).map((a) =>
      a.kind === 'delete' ? [a.child.kind, a.uid] : [a.kind, undefined],
    );
    expect(deleted).toEqual([
      ['ReplicationDestination', 'uid-2'],
      ['ReplicationDestination', 'uid-3'],
      ['PersistentVolumeClaim', 'uid-0'],
      ['PersistentVolumeClaim', 'uid-1'],
    ]);
  });

  it('leaves alone an object it did not create under a child’s name, and what is already going', () => {
    const { op, children } = created(verify());
    const now = state(children, { synced: true });
    now[0]!.metadata = { ...now[0]!.metadata, uid: 'someone-elses' };
    now[1]!.metadata = { ...now[1]!.metadata, deletionTimestamp: new Date() };
    const actions = volsyncAdapter.cleanup?.(now, op).actions ?? [];
    expect(actions.map((a) => (a.kind === 'delete' ? a.uid : a.kind))).toEqual(['uid-2', 'uid-3']);
  });

  it('cancel stops the probe, the restores, and drops the copies', () => {
    const { op, children } = created(verify());
    const actions = volsyncAdapter.cancel(state(children), { op, attempt: 1 });
    expect(actions.map((a) => (a.kind === 'delete' ? a.child.kind : a.kind))).toEqual([
      'Job',
      'ReplicationDestination',
      'ReplicationDestination',
      'PersistentVolumeClaim',
      'PersistentVolumeClaim',
    ]);
  });

  it('Backup and Restore have nothing to clean up', () => {
    const op = anOperation({ type: 'Backup', engine: 'volsync' });
    expect(volsyncAdapter.cleanup?.([], op)).toEqual({ actions: [], pending: false });
  });
});
