// The chart's hook Jobs of an abandoned helm upgrade (helm-hook-stop.ts): which Jobs are stopped, and how
// a stopped or failed Upgrade stops them before it ends (observe and cancel of the helm adapter).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { anInput, jobCondition, materialized, withStatus } from '../../../test/support/builders/engines.ts';
import { helmAdapter } from './helm.ts';
import { abandonedHookJobs } from './helm-hook-stop.ts';
import type { HelmReleaseState, ObserveInput } from './types.ts';

const HELM =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const STARTED_AT = '2026-11-27T21:50:00Z';
const DEPLOYED: HelmReleaseState = { revision: 6, status: 'deployed', lastDeployed: 6 };

function input(
  hookJobs: readonly KubernetesObject[],
  o: { cancel?: boolean; release?: HelmReleaseState } = {},
): ObserveInput {
  const i = anInput({
    name: 'upgrade-db',
    type: 'Upgrade',
    engine: 'helm',
    parameters: { version: '2.0.0' },
    env: { helmImage: HELM, helmRelease: o.release ?? DEPLOYED, helmHookJobs: hookJobs },
  });
  i.op.status = { phase: 'Running', startedAt: STARTED_AT };
  if (o.cancel) i.op.spec.cancel = true;
  return i;
}

const [upgradeJob, rollbackJob] = materialized(
  helmAdapter.materialize(
    anInput({
      name: 'upgrade-db',
      type: 'Upgrade',
      engine: 'helm',
      parameters: { version: '2.0.0' },
      env: { helmImage: HELM, helmRelease: { revision: 5, status: 'deployed', lastDeployed: 5 } },
    }),
  ),
);
if (!upgradeJob || !rollbackJob) throw new Error('two Jobs expected');
// The release is the first positional argument of `helm rollback`, after `--` (ADR 0028).
const rollbackArgv =
  (rollbackJob.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec
    .containers[0]?.args ?? [];
const RELEASE = String(rollbackArgv[rollbackArgv.indexOf('--') + 1]);
const NS = rollbackJob.metadata.namespace;

interface HookOptions {
  release?: string;
  hook?: string;
  created?: string;
  finished?: boolean;
  operation?: boolean;
  deleting?: boolean;
}

function aJob(name: string, o: HookOptions = {}): KubernetesObject {
  const job: KubernetesObject & { status: Record<string, unknown> } = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: NS,
      uid: `${name}-uid`,
      creationTimestamp: (o.created ?? '2026-11-27T21:50:30Z') as unknown as Date,
      labels: {
        'app.kubernetes.io/instance': o.release ?? RELEASE,
        ...(o.operation ? { 'ops.vworkspace.io/operation': 'some-migration' } : {}),
      },
      annotations: o.hook === '' ? {} : { 'helm.sh/hook': o.hook ?? 'post-install,pre-upgrade' },
      ...(o.deleting ? { deletionTimestamp: '2026-11-27T21:52:00Z' as unknown as Date } : {}),
    },
    status: o.finished ? { conditions: [jobCondition('Complete')] } : { active: 1 },
  };
  return job;
}

const names = (jobs: readonly KubernetesObject[]) => jobs.map((j) => j.metadata?.name);

describe('abandonedHookJobs', () => {
  it("selects the release's running upgrade hook Jobs created since the Operation started, by name", () => {
    const jobs = [
      aJob('db-postgres-migrations'),
      aJob('db-post-upgrade-check', { hook: 'post-upgrade', created: STARTED_AT }),
      aJob('a-being-deleted', { hook: ' pre-upgrade ', deleting: true }),
    ];
    expect(names(abandonedHookJobs(jobs, RELEASE, STARTED_AT))).toEqual([
      'a-being-deleted',
      'db-post-upgrade-check',
      'db-postgres-migrations',
    ]);
  });

  it.each<[string, HookOptions]>([
    ['another release', { release: 'other' }],
    ['a Job that is no hook', { hook: '' }],
    ['an install-only hook', { hook: 'pre-install,post-install' }],
    ['a hook the rollback may run', { hook: 'pre-upgrade,pre-rollback' }],
    ['an older hook Job (before the Operation started)', { created: '2026-11-27T21:49:59Z' }],
    ['a finished hook Job', { finished: true }],
    ['a Job an Operation made (helmHookJob engine)', { operation: true }],
  ])('leaves alone %s', (_, o) => {
    expect(abandonedHookJobs([aJob('db-postgres-migrations', o)], RELEASE, STARTED_AT)).toEqual([]);
  });

  it('selects nothing when the Operation has no start time', () => {
    expect(abandonedHookJobs([aJob('db-postgres-migrations')], RELEASE, undefined)).toEqual([]);
  });
});

const failedUpgrade = withStatus(
  upgradeJob,
  { conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] },
  'u-uid',
);
const rollbackWith = (stopped?: string): KubernetesObject => {
  const j = withStatus(rollbackJob, {}, 'r-uid');
  if (stopped)
    j.metadata = {
      ...j.metadata,
      annotations: { ...j.metadata?.annotations, 'ops.vworkspace.io/helm-stopped-hooks': stopped },
    };
  return j;
};
const hook = aJob('db-postgres-migrations');
const stranger = aJob('other-migrations', { release: 'other' });

describe('a failed helm Upgrade stops the hook Jobs helm left running', () => {
  it('first records their names on the rollback Job, then deletes them in the foreground, then ends', () => {
    const record = helmAdapter.observe([failedUpgrade, rollbackWith()], input([hook, stranger]));
    expect(record).toMatchObject({ phase: 'Running', reason: 'HelmRollbackInProgress' });
    expect(record.message).toContain("stopping the chart's hook Job db-postgres-migrations");
    expect(record.actions).toEqual([
      {
        kind: 'patch',
        child: expect.objectContaining({
          metadata: expect.objectContaining({ name: rollbackJob.metadata.name }),
        }),
        patch: {
          metadata: { annotations: { 'ops.vworkspace.io/helm-stopped-hooks': 'db-postgres-migrations' } },
        },
      },
    ]);
    expect(record.recheckAfterMs).toBeGreaterThan(0);

    const recorded = rollbackWith('db-postgres-migrations');
    const del = helmAdapter.observe([failedUpgrade, recorded], input([hook, stranger]));
    expect(del.phase).toBe('Running');
    expect(del.actions).toEqual([
      {
        kind: 'delete',
        child: expect.objectContaining({
          kind: 'Job',
          metadata: expect.objectContaining({ name: 'db-postgres-migrations' }),
        }),
        propagationPolicy: 'Foreground',
        uid: 'db-postgres-migrations-uid',
      },
    ]);

    const going = helmAdapter.observe(
      [failedUpgrade, recorded],
      input([aJob('db-postgres-migrations', { deleting: true })]),
    );
    expect(going).toMatchObject({ phase: 'Running', actions: [] });
    expect(going.message).toContain('waiting for their pods to go');

    const end = helmAdapter.observe([failedUpgrade, recorded], input([stranger]));
    expect(end).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(end.message).toContain(
      "the release is deployed (revision 6; helm rolled it back); the operator stopped the chart's hook Job db-postgres-migrations, which helm had started for the abandoned upgrade",
    );
    expect(end.stopped).toContain("stopped the chart's hook Job db-postgres-migrations");
  });

  it('stops them before the rollback Job is resumed when the runner left the release pending', () => {
    const pending: HelmReleaseState = { revision: 7, status: 'pending-upgrade', lastDeployed: 6 };
    const o = helmAdapter.observe([failedUpgrade, rollbackWith()], input([hook], { release: pending }));
    expect(o.actions?.map((a) => a.kind)).toEqual(['patch']);
    // The rollback Job stays suspended until the hook Jobs are gone: only the record is patched.
    expect(o.actions?.[0]).toMatchObject({
      kind: 'patch',
      patch: {
        metadata: { annotations: { 'ops.vworkspace.io/helm-stopped-hooks': 'db-postgres-migrations' } },
      },
    });
    expect(o.actions?.[0]).not.toHaveProperty('patch.spec');
  });

  it('an Upgrade without leftover hook Jobs ends as before, naming none', () => {
    const o = helmAdapter.observe([failedUpgrade, rollbackWith()], input([stranger]));
    expect(o).toMatchObject({ phase: 'Failed', reason: 'HelmUpgradeFailed' });
    expect(o.message).not.toContain('hook Job');
  });
});

describe('a cancelled helm Upgrade stops the hook Jobs once helm is gone', () => {
  it('leaves them while helm still runs (its SIGTERM rollback comes first)', () => {
    const runningUpgrade = withStatus(upgradeJob, { active: 1 }, 'u-uid');
    const actions = helmAdapter.cancel([runningUpgrade, rollbackWith()], input([hook], { cancel: true }));
    expect(
      actions.filter((a) => a.kind === 'delete').map((a) => a.kind === 'delete' && a.child.metadata.name),
    ).toEqual([upgradeJob.metadata.name]);
  });

  it('with the runner gone: records, deletes, and waits (settling, rechecking) for them to go', () => {
    const first = helmAdapter.cancel([rollbackWith()], input([hook], { cancel: true }));
    expect(first.map((a) => a.kind)).toEqual(['patch', 'wait']);
    expect(first[1]).toMatchObject({ kind: 'wait', settling: true, recheckAfterMs: expect.any(Number) });
    const second = helmAdapter.cancel(
      [rollbackWith('db-postgres-migrations')],
      input([hook], { cancel: true }),
    );
    expect(second.map((a) => a.kind)).toEqual(['delete', 'wait']);
    const done = helmAdapter.cancel([rollbackWith('db-postgres-migrations')], input([], { cancel: true }));
    expect(done).toEqual([]);
    const o = helmAdapter.observe([rollbackWith('db-postgres-migrations')], input([], { cancel: true }));
    expect(o.stopped).toContain("the operator stopped the chart's hook Job db-postgres-migrations");
  });
});
