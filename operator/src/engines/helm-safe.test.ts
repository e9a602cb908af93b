// Safe Upgrade (helm-safe.ts, ADR 0055): which children a template with `safety` makes, and what each state
// of the backup, the runner, the post-check, the rollback Job and the restore means.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  aClaim,
  anInput,
  aPodMounting,
  aWorkload,
  builtinWith,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import type { Safety } from '../catalog/template.ts';
import { helmAdapter } from './helm.ts';
import { isRollbackJob } from './helm-rollback.ts';
import { isPostCheckJob, POST_CHECK_CONTAINER } from './helm-safe.ts';
import type {
  ChildManifest,
  HelmReleaseState,
  MaterializeInput,
  ObserveInput,
  RestoreFacts,
} from './types.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const PSQL = 'registry.example.com/postgres:15';
const STARTED: HelmReleaseState = { revision: 4, status: 'deployed', lastDeployed: 4 };
const UPGRADED: HelmReleaseState = { revision: 5, status: 'deployed', lastDeployed: 5 };
const SAFETY: Safety = {
  backup: { engine: 'snapshot' },
  postCheck: { image: PSQL, command: ['sh', '-c', 'psql -c "select email from users limit 1"'] },
  restoreOnFailure: true,
};

function input(
  o: {
    safety?: Safety;
    profile?: string;
    release?: HelmReleaseState | null;
    cancel?: boolean;
    restore?: RestoreFacts;
  } = {},
): MaterializeInput {
  const i = anInput({
    name: 'safe-up',
    type: 'Upgrade',
    engine: 'helm',
    parameters: { version: '6.7.0' },
    template: builtinWith('Upgrade', 'helm', {
      safety: o.safety ?? SAFETY,
      rbacProfile: o.profile ?? 'safeUpgrade.helm',
    }),
    env: {
      helmImage: HELM,
      ...(o.release === null ? {} : { helmRelease: o.release ?? STARTED }),
      pvcs: ['data-db-0'],
      ...(o.restore ? { restore: o.restore } : {}),
    },
  });
  if (o.cancel) i.op.spec.cancel = true;
  return i;
}

const children = materialized(helmAdapter.materialize(input()));
const runnerM = children.find((c) => c.kind === 'Job' && !isRollbackJob(c) && !isPostCheckJob(c))!;
const rollbackM = children.find((c) => c.kind === 'Job' && isRollbackJob(c))!;
const probeM = children.find((c) => c.kind === 'Job' && isPostCheckJob(c))!;
const snapshotM = children.find((c) => c.kind === 'VolumeSnapshot')!;

type Spec = { spec: Record<string, unknown> };
const job = (m: ChildManifest, status: Record<string, unknown>, resumed: boolean, uid: string) => {
  const j = withStatus(m, status, uid) as KubernetesObject & Spec;
  return resumed ? ({ ...j, spec: { ...j.spec, suspend: false } } as KubernetesObject) : j;
};
const running = { active: 1, startTime: '2026-11-27T10:00:00Z' };
const complete = { conditions: [jobCondition('Complete')], startTime: '2026-11-27T10:00:00Z' };
const failedJob = {
  conditions: [jobCondition('Failed', 'BackoffLimitExceeded')],
  startTime: '2026-11-27T10:00:00Z',
};
const runner = (s: Record<string, unknown> = complete) => job(runnerM, s, true, 'u-uid');
const rollback = (s: Record<string, unknown> = {}, resumed = false, from?: number) => {
  const j = job(rollbackM, s, resumed, 'r-uid');
  if (from !== undefined) j.metadata!.annotations!['ops.vworkspace.io/rolled-back-from'] = String(from);
  return j;
};
const probe = (s: Record<string, unknown> = {}, resumed = false) => job(probeM, s, resumed, 'p-uid');
/** The pre-upgrade snapshot, readyToUse and released from the Operation (a backup that outlives it). */
const snapshot = (ready = true, owned = false): KubernetesObject => {
  const s = withStatus(snapshotM, { readyToUse: ready }, 's-uid');
  if (!owned) delete s.metadata!.ownerReferences;
  else
    s.metadata!.ownerReferences = [
      { apiVersion: 'ops.vworkspace.io/v1alpha1', kind: 'Operation', name: 'safe-up', uid: 'op' },
    ];
  return s;
};
const obsInput = (o: Parameters<typeof input>[0] = {}): ObserveInput => {
  const i = input(o);
  return { op: i.op, attempt: 1, env: i.env };
};

describe('Safe Upgrade materialize', () => {
  it('makes the runner and its rollback Job suspended, the template post-check suspended and a snapshot of each claim', () => {
    expect(children.map((c) => `${c.kind}`)).toEqual(['Job', 'Job', 'Job', 'VolumeSnapshot']);
    expect((runnerM as unknown as Spec).spec.suspend).toBe(true);
    expect((rollbackM as unknown as Spec).spec.suspend).toBe(true);
    expect(rollbackM.metadata.annotations).toMatchObject({
      'ops.vworkspace.io/helm-rollback-revision': '4',
      'ops.vworkspace.io/restore-on-failure': 'true',
    });
    const pod = (
      probeM as unknown as { spec: { suspend: boolean; template: { spec: Record<string, unknown> } } }
    ).spec;
    expect(pod.suspend).toBe(true);
    expect(pod.template.spec.automountServiceAccountToken).toBe(false);
    expect(pod.template.spec.serviceAccountName).toBe('default');
    const [container] = pod.template.spec.containers as {
      name: string;
      image: string;
      command: string[];
      env: unknown[];
    }[];
    expect(container).toMatchObject({
      name: POST_CHECK_CONTAINER,
      image: PSQL,
      command: SAFETY.postCheck!.command,
    });
    expect(container!.env).toEqual(
      expect.arrayContaining([
        { name: 'VWS_REVISION_BEFORE', value: '4' },
        { name: 'VWS_NAMESPACE', value: 'team-a' },
      ]),
    );
    expect(snapshotM).toMatchObject({ spec: { source: { persistentVolumeClaimName: 'data-db-0' } } });
  });

  it('a plain Upgrade keeps its two Jobs, without the Safe Upgrade annotation', () => {
    const plain = materialized(
      helmAdapter.materialize(
        anInput({
          name: 'up',
          type: 'Upgrade',
          engine: 'helm',
          parameters: { version: '6.7.0' },
          env: { helmImage: HELM, helmRelease: STARTED },
        }),
      ),
    );
    expect(plain).toHaveLength(2);
    expect(plain[1]?.metadata.annotations?.['ops.vworkspace.io/restore-on-failure']).toBeUndefined();
  });

  it('refuses what cannot be put back: no deployed revision, a restore without a backup, a backup without the profile', () => {
    expect(helmAdapter.materialize(input({ release: null }))).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
    });
    const noBackup = helmAdapter.materialize(input({ safety: { restoreOnFailure: true } }));
    expect(noBackup).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    const profile = helmAdapter.materialize(input({ profile: 'upgrade.helm' }));
    expect(profile).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!profile.ok) expect(profile.message).toContain('safeUpgrade.helm');
  });

  it('takes no parameter for the check: the requester cannot name its image or command', () => {
    expect(() =>
      anInput({
        type: 'Upgrade',
        engine: 'helm',
        parameters: { version: '6.7.0', postCheck: { image: 'evil', command: ['sh'] } },
      }),
    ).toThrow(/postCheck/);
  });
});

describe('Safe Upgrade observe', () => {
  it('waits for the backup, releases it from the Operation, then resumes the runner', () => {
    const suspended = withStatus(runnerM, {}, 'u-uid');
    const cutting = helmAdapter.observe([suspended, rollback(), probe(), snapshot(false, true)], obsInput());
    expect(cutting).toMatchObject({ phase: 'Running', reason: 'VolumeSnapshotInProgress' });
    expect(cutting.message).toMatch(/^pre-upgrade backup: /);
    expect(cutting.recheckAfterMs).toBeGreaterThan(0);
    const owned = helmAdapter.observe([suspended, rollback(), probe(), snapshot(true, true)], obsInput());
    expect(owned.actions).toEqual([
      expect.objectContaining({ kind: 'patch', patch: { metadata: { ownerReferences: null } } }),
    ]);
    const taken = helmAdapter.observe([suspended, rollback(), probe(), snapshot()], obsInput());
    expect(taken).toMatchObject({ phase: 'Running', reason: 'HelmUpgradeInProgress' });
    expect(taken.actions).toEqual([
      expect.objectContaining({
        kind: 'patch',
        child: expect.objectContaining({
          metadata: expect.objectContaining({ name: runnerM.metadata.name }),
        }),
        patch: { spec: { suspend: false } },
      }),
    ]);
  });

  it('a failed backup fails the Upgrade before anything touched the release', () => {
    const broken = withStatus(snapshotM, { readyToUse: false, error: { message: 'no CSI driver' } }, 's-uid');
    const o = helmAdapter.observe(
      [withStatus(runnerM, {}, 'u-uid'), rollback(), probe(), broken],
      obsInput(),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'VolumeSnapshotFailed' });
    expect(o.message).toContain('the pre-upgrade backup failed, so the release was not upgraded');
  });

  it('once helm upgraded, starts the post-check; it passing keeps the new revision', () => {
    const start = helmAdapter.observe(
      [runner(), rollback(), probe(), snapshot()],
      obsInput({ release: UPGRADED }),
    );
    expect(start).toMatchObject({ phase: 'Running', reason: 'PostCheckRunning' });
    expect(start.actions).toEqual([expect.objectContaining({ patch: { spec: { suspend: false } } })]);
    const ok = helmAdapter.observe(
      [runner(), rollback(), probe(complete, true), snapshot()],
      obsInput({ release: UPGRADED }),
    );
    expect(ok).toMatchObject({ phase: 'Succeeded', reason: 'HelmUpgradeSucceeded' });
    expect(ok.message).toContain(`the post-check Job ${probeM.metadata.name} passed`);
    expect(ok.rollback).toBeUndefined();
  });

  it('a failed post-check resumes the rollback Job, recording the revision it rolls back from', () => {
    const o = helmAdapter.observe(
      [runner(), rollback(), probe(failedJob, true), snapshot()],
      obsInput({ release: UPGRADED }),
    );
    expect(o).toMatchObject({ phase: 'Running', reason: 'HelmRollbackInProgress' });
    expect(o.message).toContain(`the post-check Job ${probeM.metadata.name} failed`);
    expect(o.message).toContain('rolling the release back from revision 5 to revision 4');
    expect(o.actions).toEqual([
      expect.objectContaining({
        kind: 'patch',
        patch: {
          metadata: { annotations: { 'ops.vworkspace.io/rolled-back-from': '5' } },
          spec: { suspend: false },
        },
      }),
    ]);
    expect(o.rollback).toMatchObject({
      why: 'PostCheckFailed',
      fromRevision: 5,
      toRevision: 4,
      state: 'RollingBack',
    });
  });

  it('the rollback done without restoreOnFailure: Failed with the post-check reason, nothing restored', () => {
    const i = input({ safety: { postCheck: SAFETY.postCheck! } });
    const kids = materialized(helmAdapter.materialize(i));
    const [r, p, rb] = kids as [ChildManifest, ChildManifest, ChildManifest];
    expect(kids).toHaveLength(3);
    const o = helmAdapter.observe(
      [job(r, complete, false, 'u'), job(rb, complete, true, 'r'), job(p, failedJob, true, 'p')],
      {
        op: i.op,
        attempt: 1,
        env: { ...i.env, helmRelease: { revision: 6, status: 'deployed', lastDeployed: 6 } },
      },
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'PostCheckFailed', retryable: false });
    expect(o.message).toContain('rolled the release back to revision 4');
    expect(o.message).toContain('nothing was restored');
    expect(o.rollback).toMatchObject({ restore: 'NotDeclared', state: 'Done', toRevision: 4 });
  });

  it('the rollback done with restoreOnFailure: writes the restore plan from this Operation’s snapshots only', () => {
    const facts: RestoreFacts = {
      pvcs: [aClaim('data-db-0', { release: 'nextcloud-team-a' })],
      workloads: [aWorkload('StatefulSet', 'db', 1)],
      pods: [aPodMounting('db-0', 'data-db-0')],
      // Another backup of the namespace is never the one restored.
      snapshots: [{ ...snapshot(), metadata: { ...snapshot().metadata, name: 'someone-elses' } }],
    };
    const o = helmAdapter.observe(
      [runner(), rollback(complete, true, 5), probe(failedJob, true), snapshot()],
      obsInput({ release: { revision: 6, status: 'deployed', lastDeployed: 6 }, restore: facts }),
    );
    expect(o).toMatchObject({ phase: 'Running', reason: 'VolumeSnapshotRestoreInProgress' });
    expect(o.actions).toHaveLength(1);
    const adopt = o.actions?.[0];
    if (adopt?.kind !== 'adopt') throw new Error('an adopt action expected');
    const plan = JSON.parse(
      String((adopt.object as unknown as { data: Record<string, string> }).data['plan.json']),
    );
    expect(plan.claims.map((c: { snapshot: string }) => c.snapshot)).toEqual([snapshotM.metadata.name]);
    expect(o.rollback).toMatchObject({
      fromRevision: 5,
      toRevision: 4,
      state: 'Restoring',
      restore: 'InProgress',
      backup: snapshotM.metadata.name,
    });

    // The plan carried out (the claim recreated from the snapshot, the StatefulSet back and ready): Failed,
    // saying it was rolled back and restored.
    const planChild = {
      ...adopt.object,
      metadata: { ...adopt.object.metadata, uid: 'plan-uid' },
    } as KubernetesObject;
    const restored: RestoreFacts = {
      pvcs: [
        aClaim('data-db-0', {
          uid: 'new',
          fromSnapshot: snapshotM.metadata.name,
          release: 'nextcloud-team-a',
        }),
      ],
      workloads: [aWorkload('StatefulSet', 'db', 1)],
      pods: [],
    };
    const end = helmAdapter.observe(
      [runner(), rollback(complete, true, 5), probe(failedJob, true), snapshot(), planChild],
      obsInput({ release: { revision: 6, status: 'deployed', lastDeployed: 6 }, restore: restored }),
    );
    expect(end).toMatchObject({ phase: 'Failed', reason: 'PostCheckFailed', retryable: false });
    expect(end.message).toContain('the claims were restored from the pre-upgrade backup');
    expect(end.rollback).toMatchObject({ state: 'Done', restore: 'Restored', why: 'PostCheckFailed' });
  });

  it('a rollback Job that fails is RollbackFailed: never retried, saying which helm rollback and which snapshots', () => {
    const o = helmAdapter.observe(
      [runner(), rollback(failedJob, true, 5), probe(failedJob, true), snapshot()],
      obsInput({ release: { revision: 6, status: 'failed', lastDeployed: 5 } }),
    );
    expect(o).toMatchObject({ phase: 'Failed', reason: 'RollbackFailed', retryable: false });
    expect(o.message).toContain('the release is at revision 6 (failed)');
    expect(o.message).toContain('run `helm rollback nextcloud-team-a 4 -n team-a`');
    expect(o.message).toContain(
      `restore its claims from the pre-upgrade VolumeSnapshots ${snapshotM.metadata.name}`,
    );
    expect(o.rollback).toMatchObject({ state: 'Failed', restore: 'Failed', fromRevision: 5 });
  });

  it('a runner helm rolled back itself (--atomic) goes straight to the restore', () => {
    const o = helmAdapter.observe(
      [runner(failedJob), rollback(), probe(), snapshot()],
      obsInput({
        release: { revision: 6, status: 'deployed', lastDeployed: 6 },
        restore: { pvcs: [], workloads: [], pods: [] },
      }),
    );
    // No claim left to restore is a restore that cannot start: loud, not silent.
    expect(o).toMatchObject({ phase: 'Failed', reason: 'RollbackFailed' });
    expect(o.rollback).toMatchObject({ rolledBackBy: 'helm --atomic', why: 'HelmUpgradeFailed' });
  });
});

describe('Safe Upgrade cancel', () => {
  it('during the post-check, puts the release back: resumes the rollback Job and waits, settling', () => {
    const kids = [runner(), rollback(), probe(running, true), snapshot()];
    const actions = helmAdapter.cancel(kids, obsInput({ release: UPGRADED, cancel: true }));
    expect(actions).toEqual([
      expect.objectContaining({
        kind: 'patch',
        patch: expect.objectContaining({ spec: { suspend: false } }),
      }),
      expect.objectContaining({
        kind: 'delete',
        child: expect.objectContaining({ metadata: expect.objectContaining({ name: probeM.metadata.name }) }),
      }),
      expect.objectContaining({ kind: 'wait', settling: true }),
    ]);
  });

  it('while restoring the claims, keeps restoring: a cancel does not leave the old chart on the new data', () => {
    const facts: RestoreFacts = {
      pvcs: [aClaim('data-db-0', { release: 'nextcloud-team-a' })],
      workloads: [aWorkload('StatefulSet', 'db', 1)],
      pods: [aPodMounting('db-0', 'data-db-0')],
    };
    const kids = [runner(), probe(failedJob, true), rollback(complete, true, 5), snapshot()];
    const first = helmAdapter.observe(kids, obsInput({ restore: facts }));
    const adopt = first.actions?.[0];
    if (adopt?.kind !== 'adopt') throw new Error('an adopt action expected');
    const plan = {
      ...adopt.object,
      metadata: { ...adopt.object.metadata, uid: 'plan-uid' },
    } as KubernetesObject;
    const actions = helmAdapter.cancel([...kids, plan], obsInput({ restore: facts, cancel: true }));
    // Scaling the StatefulSet down to replace its claim, not back up; and a settling wait.
    expect(actions).toEqual([
      expect.objectContaining({ kind: 'patch', subresource: 'scale', patch: { spec: { replicas: 0 } } }),
      expect.objectContaining({ kind: 'wait', settling: true }),
    ]);
  });

  it('before the upgrade started, ends at once: nothing was touched', () => {
    const o = helmAdapter.observe(
      [withStatus(runnerM, {}, 'u-uid'), rollback(), probe(), snapshot(false, true)],
      obsInput({ cancel: true }),
    );
    expect(o).toMatchObject({ phase: 'Failed' });
    expect(o.stopped).toContain('the release and its data were not touched');
  });
});
