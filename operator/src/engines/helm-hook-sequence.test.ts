// helmHookJob from the release record's Helm hooks (ADR 0017): which hooks run, in which order, how a
// sequence of hook Jobs is created (later ones suspended) and followed (resumed one by one, the first
// failure ends it).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  aHookJob,
  anInput,
  aReleaseHook,
  type aTerminatedPod,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { ANNOTATION_HELM_HOOK, ANNOTATION_HELM_HOOK_STEP } from '../api/annotations.ts';
import type { ReleaseHook } from '../release/helm-release.ts';
import { helmHookJobAdapter, hookJobsFor } from './helm-hook-job.ts';
import type { ChildManifest, ReleaseHooks } from './types.ts';

const input = (
  releaseHooks: ReleaseHooks | undefined,
  parameters: Record<string, unknown> = {},
  namespace?: string,
) =>
  anInput({
    name: 'migrate-30',
    type: 'Migration',
    engine: 'helmHookJob',
    parameters,
    env: releaseHooks ? { releaseHooks } : {},
    ...(namespace ? { instance: { namespace } } : {}),
  });

/** The release record of the examples: a ServiceAccount hook, two pre-upgrade Jobs, a post-install Job. */
const HOOKS: ReleaseHook[] = [
  aReleaseHook({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'migrator' } }, { weight: -10 }),
  aReleaseHook(aHookJob('schema'), { weight: 5 }),
  aReleaseHook(aHookJob('data'), { weight: 5 }),
  aReleaseHook(aHookJob('prepare'), { weight: -1, events: ['pre-install', 'pre-upgrade'] }),
  aReleaseHook(aHookJob('warm-cache'), { events: ['post-install'] }),
];

const spec = (c: KubernetesObject) => (c as ChildManifest).spec as Record<string, unknown>;
const step = (c: KubernetesObject) => c.metadata?.annotations?.[ANNOTATION_HELM_HOOK_STEP];

describe('which hooks a Migration runs', () => {
  it("the Jobs of the event, in Helm's order: hook-weight, equal weights by name", () => {
    expect(hookJobsFor(HOOKS, 'pre-upgrade').map((h) => h.name)).toEqual(['prepare', 'data', 'schema']);
    expect(hookJobsFor(HOOKS, 'post-install').map((h) => h.name)).toEqual(['warm-cache']);
    expect(hookJobsFor(HOOKS, 'post-upgrade')).toEqual([]);
  });

  it('defaults to pre-upgrade; parameters.hook chooses another event', () => {
    const pre = materialized(helmHookJobAdapter.materialize(input({ revision: 3, hooks: HOOKS })));
    expect(pre.map((c) => c.metadata.annotations?.[ANNOTATION_HELM_HOOK])).toEqual([
      'prepare',
      'data',
      'schema',
    ]);
    const post = materialized(
      helmHookJobAdapter.materialize(input({ revision: 3, hooks: HOOKS }, { hook: 'post-install' })),
    );
    expect(post.map((c) => c.metadata.annotations?.[ANNOTATION_HELM_HOOK])).toEqual(['warm-cache']);
  });

  it('a release without a Job hook for the event, without a record or with an unreadable one: CapabilityMissing saying what to do', () => {
    const none = helmHookJobAdapter.materialize(
      input({ revision: 3, hooks: HOOKS }, { hook: 'post-upgrade' }),
    );
    expect(none).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!none.ok) {
      expect(none.message).toContain('revision 3 has no Job hook for the event post-upgrade');
      expect(none.message).toContain('migrator (ServiceAccount, pre-upgrade)');
      expect(none.message).toContain('helm.sh/hook: post-upgrade');
    }
    const noRecord = helmHookJobAdapter.materialize(input({ hooks: [] }));
    expect(noRecord).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!noRecord.ok) expect(noRecord.message).toContain('has no release record');
    const unread = helmHookJobAdapter.materialize(input(undefined));
    expect(unread).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    const broken = helmHookJobAdapter.materialize(
      input({ revision: 2, hooks: [], problem: 'Helm release Secret team-a/x has no data.release' }),
    );
    expect(broken).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
      message: expect.stringContaining('has no data.release'),
    });
  });

  it('never reaches into a release of another namespace', () => {
    const r = helmHookJobAdapter.materialize(
      anInput({
        name: 'migrate-30',
        type: 'Migration',
        engine: 'helmHookJob',
        env: { releaseHooks: { revision: 1, hooks: HOOKS } },
        instance: { namespace: 'team-a' },
      }),
    );
    expect(r.ok).toBe(true);
    const other = input({ revision: 1, hooks: HOOKS });
    other.target.spec.release.namespace = 'team-b';
    expect(helmHookJobAdapter.materialize(other)).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
      message: expect.stringContaining("not in the Operation's namespace"),
    });
  });

  it('a hook that asks for more than restricted is refused naming the hook and the field; a manifest that is not YAML too', () => {
    const hostile = aReleaseHook(aHookJob('prepare', { hostNetwork: true }), {
      path: 'shop/templates/migrate.yaml',
    });
    const r = helmHookJobAdapter.materialize(input({ revision: 4, hooks: [hostile] }));
    expect(r).toMatchObject({ ok: false, reason: 'UnsafePodSpec' });
    if (!r.ok) {
      expect(r.message).toContain('hook prepare (shop/templates/migrate.yaml, pre-upgrade) of release');
      expect(r.message).toContain('spec.template.spec.hostNetwork: ');
    }
    const garbled = { ...aReleaseHook(aHookJob('prepare')), manifest: 'kind: Job\n  bad: [' };
    expect(helmHookJobAdapter.materialize(input({ revision: 4, hooks: [garbled] }))).toMatchObject({
      ok: false,
      reason: 'CapabilityMissing',
      message: expect.stringContaining('is not valid YAML'),
    });
  });
});

describe('a sequence of hook Jobs', () => {
  const children = materialized(helmHookJobAdapter.materialize(input({ revision: 3, hooks: HOOKS })));
  const [first, second, third] = children as [ChildManifest, ChildManifest, ChildManifest];

  it('is created at once: the first runs, the later ones wait suspended; steps and names are distinct', () => {
    expect(children.map(step)).toEqual(['1/3', '2/3', '3/3']);
    expect(spec(first)).not.toHaveProperty('suspend');
    expect(spec(second).suspend).toBe(true);
    expect(spec(third).suspend).toBe(true);
    expect(new Set(children.map((c) => c.metadata.name)).size).toBe(3);
    for (const c of children) {
      expect(c.metadata.name).toMatch(/^migrate-30-[a-z2-7]{8}$/);
      expect(Object.keys(c.metadata.annotations ?? {}).some((k) => k.startsWith('helm.sh/'))).toBe(false);
      expect(spec(c).backoffLimit).toBe(0);
    }
    // Deterministic: the same input gives the same names.
    const again = materialized(helmHookJobAdapter.materialize(input({ revision: 3, hooks: HOOKS })));
    expect(again.map((c) => c.metadata.name)).toEqual(children.map((c) => c.metadata.name));
  });

  it("a chart Job's own suspend: true does not stop the first step", () => {
    const job = aHookJob('prepare');
    (job.spec as Record<string, unknown>).suspend = true;
    const [only] = materialized(
      helmHookJobAdapter.materialize(input({ revision: 1, hooks: [aReleaseHook(job)] })),
    );
    expect(spec(only!)).not.toHaveProperty('suspend');
  });

  const complete = (c: ChildManifest) => withStatus(c, { conditions: [jobCondition('Complete')] });
  const observe = (cs: KubernetesObject[], pods?: ReturnType<typeof aTerminatedPod>[]) =>
    helmHookJobAdapter.observe(cs, {
      ...input({ revision: 3, hooks: HOOKS }),
      ...(pods ? { pods: pods.map((p) => ({ pod: p.metadata?.name ?? '', container: 'migrate' })) } : {}),
    });

  it('runs step by step: a waiting step whose predecessors completed is resumed', () => {
    const running = observe([withStatus(first, { active: 1 }), second, third]);
    expect(running).toMatchObject({ phase: 'Running', reason: 'HelmHookJobRunning' });
    expect(running.message).toContain('hook 1/3 prepare');
    expect(running.actions).toBeUndefined();

    const next = observe([complete(first), withStatus(second, {}), withStatus(third, {})]);
    expect(next).toMatchObject({ phase: 'Running', reason: 'HelmHookJobRunning' });
    expect(next.message).toContain('hook 2/3 data');
    expect(next.actions).toEqual([
      expect.objectContaining({ kind: 'patch', patch: { spec: { suspend: false } } }),
    ]);
    const [action] = next.actions ?? [];
    expect(action?.kind === 'patch' && action.child.metadata.name).toBe(second.metadata.name);
    expect(next.outputs).toEqual({
      jobName: second.metadata.name,
      jobNames: `${first.metadata.name},${second.metadata.name}`,
    });

    // Resumed (the patch arrived): no action any more, the step is followed.
    const resumed = { ...withStatus(second, { active: 1 }) };
    (resumed as { spec: Record<string, unknown> }).spec = { ...spec(second), suspend: false };
    const following = observe([complete(first), resumed, third]);
    expect(following.actions).toBeUndefined();
    expect(following.phase).toBe('Running');
  });

  it('the first failure ends the sequence: Failed with that hook, what completed before, its pod outcome', () => {
    const failedSecond = withStatus(second, {
      conditions: [
        jobCondition('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
      ],
    });
    const obs = helmHookJobAdapter.observe([complete(first), failedSecond, third], {
      ...input({ revision: 3, hooks: HOOKS }),
      pods: [{ pod: 'p-1', container: 'migrate', exitCode: 4, reason: 'Error', logTail: 'no such table' }],
    });
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'HelmHookJobFailed', retryable: true });
    expect(obs.message).toContain(
      'container migrate of pod p-1 exited with code 4 (Error); last log lines: no such table',
    );
    expect(obs.message).toContain(
      `migration hook 2/3 data (the hook Jobs before it completed: ${first.metadata.name}) Job ${second.metadata.name} failed (BackoffLimitExceeded`,
    );
    expect(obs.actions).toBeUndefined();
  });

  it('all steps completed: Succeeded naming the Jobs in order', () => {
    const obs = observe(children.map(complete));
    expect(obs).toMatchObject({ phase: 'Succeeded', reason: 'HelmHookJobSucceeded' });
    expect(obs.message).toContain('3 hook Jobs completed in order');
    expect(obs.outputs).toEqual({
      jobName: third.metadata.name,
      jobNames: children.map((c) => c.metadata.name).join(','),
    });
  });

  it('a step deleted by someone else fails the sequence (retryable)', () => {
    const obs = observe([complete(first), third]);
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'HelmHookJobFailed', retryable: true });
    expect(obs.message).toContain('hook 2/3 was deleted');
  });

  it('cancel deletes every step, the waiting ones too', () => {
    const actions = helmHookJobAdapter.cancel([complete(first), withStatus(second, { active: 1 }), third]);
    expect(actions.map((a) => a.kind === 'delete' && a.child.metadata.name)).toEqual(
      children.map((c) => c.metadata.name),
    );
  });
});

describe('what a dry run shows of hooks from the release record', () => {
  it('a plan with every value the record gave redacted; the Jobs themselves keep them', () => {
    const withPassword = aHookJob('migrate', {
      containers: [{ name: 'migrate', image: 'app:1', env: [{ name: 'PASSWORD', value: 'hunter2' }] }],
    });
    const r = helmHookJobAdapter.materialize(input({ revision: 1, hooks: [aReleaseHook(withPassword)] }));
    if (!r.ok) throw new Error(r.message);
    expect(JSON.stringify(r.children)).toContain('hunter2');
    expect(r.plan).toHaveLength(1);
    expect(JSON.stringify(r.plan)).not.toContain('hunter2');
    expect(r.plan?.[0]?.metadata.name).toBe(r.children[0]?.metadata.name);
  });

  it('refuses a hook manifest nested deeper than any Job, naming the hook', () => {
    const deep = { ...aReleaseHook(aHookJob('deep')), manifest: `${'['.repeat(5000)}${']'.repeat(5000)}` };
    const r = helmHookJobAdapter.materialize(input({ revision: 2, hooks: [deep] }));
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
    if (!r.ok)
      expect(r.message).toMatch(/^hook deep \(.*\) of release .* revision 2 is nested more than 64 levels/);
  });
});
