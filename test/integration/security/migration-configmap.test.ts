// Issue 28, migration ConfigMaps (parameters.configMapName): the Job in a namespace ConfigMap is written by
// whoever may write ConfigMaps there, so its text and its Job are untrusted.
// - Poor errors: invalid YAML, or YAML nested 100,000 levels deep, left the Operation without any status
//   while its reconcile failed in a loop. Each now ends the Operation with a condition that says what is
//   wrong and what to do, and nothing is created.
// - Decided (ADR 0028): pod and Job fields that place or multiply the pod beyond what a migration needs —
//   nodeName (skips the scheduler and every taint), a system-* priority class (preempts node-critical
//   pods), a toleration of every taint, parallelism or completions above 1 — are refused like the
//   privileged ones, naming each field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { startWorld, type World } from './harness.ts';
import { childrenOf, jobsIn, settled } from './support.ts';

const job = (pod: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'shop-migrate' },
  spec: {
    ...spec,
    template: {
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'migrate', image: 'docker.io/library/busybox:1.37.0', command: ['true'] }],
        ...pod,
      },
    },
  },
});

describe('migration: the ConfigMap text and its Job are untrusted', () => {
  let w: World;
  let ns: string;
  const mallory = () => w.as('mallory');

  async function writeConfigMap(name: string, text: string) {
    await mallory().request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { 'job.yaml': text } },
    });
  }
  async function migrate(name: string, configMapName: string) {
    await w.operation(mallory(), ns, name, {
      type: 'Migration',
      engine: 'helmHookJob',
      targetRef: { name: 'shop' },
      parameters: { configMapName },
      policy: { requireReady: false },
    });
    const out = await settled(w, ns, name);
    expect(await childrenOf(w, jobsIn(ns), name)).toEqual([]);
    return out;
  }

  beforeAll(async () => {
    w = await startWorld();
    ns = w.namespaces[0];
    await w.instance(ns, 'shop', { migration: 'helmHookJob' });
    await w.grantProfile('migration.helmHookJob', ns);
    await w.grant('mallory', ns, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['migration'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('ends an Operation whose ConfigMap holds invalid YAML with a condition saying where and what to do', async () => {
    await writeConfigMap('broken', 'apiVersion: batch/v1\nkind: Job\nspec: [unclosed\n');
    const out = await migrate('broken-yaml', 'broken');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(out.accepted?.message).toContain('ConfigMap broken');
    expect(out.accepted?.message).toContain('is not valid YAML');
    expect(out.accepted?.message).toContain('fix the ConfigMap');
  });

  it('ends an Operation whose ConfigMap nests 100,000 levels deep with a condition naming the limit', async () => {
    const depth = 100_000;
    await writeConfigMap('deep', `${'['.repeat(depth)}${']'.repeat(depth)}\n`);
    const out = await migrate('deep-yaml', 'deep');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(out.accepted?.message).toContain('ConfigMap deep');
    expect(out.accepted?.message).toMatch(/nested more than \d+ levels/);
  });

  it('refuses placing the pod on a node, critical priority, tolerating every taint and 50 pods at once', async () => {
    await writeConfigMap(
      'placed',
      YAML.stringify(
        job(
          {
            nodeName: 'control-plane-1',
            priorityClassName: 'system-node-critical',
            tolerations: [{ operator: 'Exists' }],
          },
          { parallelism: 50, completions: 50 },
        ),
      ),
    );
    const out = await migrate('placed', 'placed');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'UnsafePodSpec' });
    for (const field of [
      'spec.template.spec.nodeName',
      'spec.template.spec.priorityClassName',
      'spec.template.spec.tolerations[0]',
      'spec.parallelism',
      'spec.completions',
    ]) {
      expect(out.accepted?.message).toContain(`${field}: `);
    }
  });
});
