// Poor errors of issue 28: spec.targetRef.namespace was pruned by the API server (not in the schema), so a
// request for another namespace's instance ran on this namespace's namesake without a word; now it is
// refused at its field path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { runCommandSpec } from './support.ts';

const runCommand = runCommandSpec;

describe('bad input gets a clear answer', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
    for (const ns of w.namespaces) {
      await w.instance(ns, 'shop', { runcommand: 'job' });
      await w.grantProfile('runCommand.job', ns);
      await w.grant('alice', ns, [
        { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
        { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
      ]);
    }
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses spec.targetRef.namespace at its field: targets are same-namespace only', async () => {
    const [a, b] = w.namespaces;
    const d = await w.denial(
      w.operation(w.as('alice'), a, 'elsewhere', runCommand({ targetRef: { name: 'shop', namespace: b } })),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.targetRef.namespace']);
    expect(d.message).toContain('same-namespace only');
  });
});
