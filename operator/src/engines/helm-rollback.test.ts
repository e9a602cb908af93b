// The helm Upgrade's way back (helm-rollback.ts): which state of the runner, the rollback Job and the
// release record means what, and what a stop does.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { anInput, jobCondition, materialized, withStatus } from '../../../test/support/builders/engines.ts';
import { helmAdapter } from './helm.ts';
import type { HelmReleaseState, ObserveInput } from './types.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const STARTED: HelmReleaseState = { revision: 4, status: 'deployed', lastDeployed: 4 };

function input(o: { release?: HelmReleaseState; cancel?: boolean } = {}): ObserveInput {
  const i = anInput({
    name: 'upgrade-6-7',
    type: 'Upgrade',
    engine: 'helm',
    parameters: { version: '6.7.0' },
    env: { helmImage: HELM, helmRelease: o.release ?? STARTED },
  });
  if (o.cancel) i.op.spec.cancel = true;
  return i;
}

const [upgradeJob, rollbackJob] = materialized(
  helmAdapter.materialize(
    anInput({
      name: 'upgrade-6-7',
      type: 'Upgrade',
      engine: 'helm',
      parameters: { version: '6.7.0' },
      env: { helmImage: HELM, helmRelease: STARTED },
    }),
  ),
);
if (!upgradeJob || !rollbackJob) throw new Error('two Jobs expected');

const upgrade = (status: Record<string, unknown>) => withStatus(upgradeJob, status, 'u-uid');
type Job = KubernetesObject & { spec: { suspend?: boolean } };
const rollback = (status: Record<string, unknown> = {}, resumed = false): KubernetesObject => {
  const j = withStatus(rollbackJob, status, 'r-uid') as Job;
  return resumed ? ({ ...j, spec: { ...j.spec, suspend: false } } as Job) : j;
};
const failedJob = { conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] };
const completeJob = { conditions: [jobCondition('Complete')], startTime: '2026-11-27T10:00:00Z' };
const rolledBackByHelm: HelmReleaseState = { revision: 6, status: 'deployed', lastDeployed: 6 };
const pending: HelmReleaseState = { revision: 5, status: 'pending-upgrade', lastDeployed: 4 };

describe('helm Upgrade observe, with its rollback Job', () => {
  it('runs and succeeds on the runner alone; the suspended rollback Job changes nothing', () => {
    expect(helmAdapter.observe([upgrade({ active: 1 }), rollback()], input())).toMatchObject({
      phase: 'Running',
      reason: 'HelmUpgradeInProgress',
    });
    const done = helmAdapter.observe(
      [upgrade({ conditions: [jobCondition('Complete')] }), rollback()],
      input(),
    );
    expect(done).toMatchObject({ phase: 'Succeeded', reason: 'HelmUpgradeSucceeded' });
    expect(done.actions).toBeUndefined();
  });

  it("a failure helm rolled back itself (--atomic) fails with helm's error and the release deployed", () => {
    const o = helmAdapter.observe([upgrade(failedJob), rollback()], input({ release: rolledBackByHelm }));
    expect(o).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(o.message).toMatch(/^helm upgrade Job \S+ failed \(BackoffLimitExceeded\)/);
    expect(o.message).toContain('the release is deployed (revision 6; helm rolled it back)');
    expect(o.actions).toBeUndefined();
  });

  it('a runner that died with the release pending-upgrade resumes the rollback Job', () => {
    const o = helmAdapter.observe([upgrade(failedJob), rollback()], input({ release: pending }));
    expect(o).toMatchObject({ phase: 'Running', reason: 'HelmRollbackInProgress' });
    expect(o.message).toContain(
      'the release was left at revision 5 (pending-upgrade): rolling it back to revision 4 with Job',
    );
    expect(o.actions).toEqual([
      {
        kind: 'patch',
        child: expect.objectContaining({
          metadata: expect.objectContaining({ name: rollbackJob.metadata.name }),
        }),
        patch: { spec: { suspend: false } },
      },
    ]);
  });

  it('follows the rollback Job to its end and says what happened', () => {
    const back: HelmReleaseState = { revision: 6, status: 'deployed', lastDeployed: 6 };
    expect(
      helmAdapter.observe([upgrade(failedJob), rollback({ active: 1 }, true)], input({ release: pending })),
    ).toMatchObject({ phase: 'Running', reason: 'HelmRollbackInProgress' });
    const done = helmAdapter.observe(
      [upgrade(failedJob), rollback(completeJob, true)],
      input({ release: back }),
    );
    expect(done).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(done.message).toContain(
      `the release is deployed (revision 6; Job ${rollbackJob.metadata.name} rolled it back to revision 4)`,
    );
    const broke = helmAdapter.observe(
      [upgrade(failedJob), rollback({ ...failedJob, startTime: '2026-11-27T10:00:00Z' }, true)],
      input({ release: pending }),
    );
    expect(broke).toMatchObject({ phase: 'Failed', reason: 'RollbackFailed' });
    expect(broke.message).toContain(
      'the release is at revision 5 (pending-upgrade): run `helm rollback nextcloud-team-a 4 -n team-a`',
    );
  });
});

describe('helm Upgrade stop (cancel, deadline)', () => {
  it('first deletes the runner, and waits while helm rolls back on SIGTERM', () => {
    const children = [upgrade({ active: 1 }), rollback()];
    expect(helmAdapter.observe(children, input({ cancel: true }))).toMatchObject({
      phase: 'Running',
      reason: 'HelmUpgradeInProgress',
    });
    expect(helmAdapter.cancel(children, input({ cancel: true }))).toEqual([
      { kind: 'delete', child: expect.objectContaining({ kind: 'Job' }), propagationPolicy: 'Foreground' },
      expect.objectContaining({ kind: 'wait', settling: true }),
    ]);
  });

  it('once the runner is gone: rolls back a release left pending, then ends saying so', () => {
    const stopped = input({ cancel: true, release: pending });
    expect(helmAdapter.observe([rollback()], stopped)).toMatchObject({ phase: 'Running' });
    expect(helmAdapter.cancel([rollback()], stopped)).toEqual([
      { kind: 'patch', child: expect.objectContaining({ kind: 'Job' }), patch: { spec: { suspend: false } } },
      expect.objectContaining({ kind: 'wait', settling: true }),
    ]);
    expect(helmAdapter.cancel([rollback({ active: 1 }, true)], stopped)).toEqual([
      expect.objectContaining({ kind: 'wait', settling: true }),
    ]);
    const back = input({ cancel: true, release: { revision: 6, status: 'deployed', lastDeployed: 6 } });
    const end = helmAdapter.observe([rollback(completeJob, true)], back);
    expect(end.phase).toBe('Failed');
    expect(end.stopped).toBe(
      `the release is deployed (revision 6; Job ${rollbackJob.metadata.name} rolled it back to revision 4)`,
    );
    expect(helmAdapter.cancel([rollback(completeJob, true)], back)).toEqual([]);
  });

  it('once the runner is gone and helm rolled back itself: nothing more to do', () => {
    const stopped = input({ cancel: true, release: rolledBackByHelm });
    expect(helmAdapter.cancel([rollback()], stopped)).toEqual([]);
    const end = helmAdapter.observe([rollback()], stopped);
    expect(end).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(end.stopped).toContain('the release is deployed (revision 6;');
  });

  it('an Upgrade made before the rollback Job existed is stopped as any Job', () => {
    expect(helmAdapter.cancel([upgrade({ active: 1 })])).toEqual([
      { kind: 'delete', child: expect.objectContaining({ kind: 'Job' }), propagationPolicy: 'Foreground' },
    ]);
  });
});
