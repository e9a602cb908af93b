// Resuming or abandoning a WatchOperation's rolled-out change (spec.rollout, ADR 0056) on exactly the
// CSV's RBAC and webhooks. A resume starts the run's remaining waves with the operator's identity on
// whichever instances changed, so it needs what creating the WatchOperation needs: its patch (RBAC) and
// the type verb on the namespace's instances (the webhook, as for a CronOperation's resume). Before the
// webhook checked them on a WatchOperation, a tenant who may patch WatchOperations but not run their type
// was admitted.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_ABANDON, ANNOTATION_RESUME } from '../../../operator/src/api/annotations.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { startWorld, type World } from './harness.ts';
import { annotate, createScheduler, labelledInstance, OPS } from './schedule-support.ts';

describe('resume and abandon of a watched change on the CSV RBAC', () => {
  let w: World;
  let a: string;
  const path = () => `${OPS}/namespaces/${a}/watchoperations/fleet`;

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await labelledInstance(w, a, 'web-1', { tier: 'web' }, { 'ops.vworkspace.io/runcommand': 'job' });
    await w.grantProfile('runCommand.job', a);
    await w.grant('alice', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['watchoperations'],
        verbs: ['create', 'get', 'list', 'update', 'patch'],
      },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
    // mallory may edit WatchOperations' metadata, but not run commands on the instances.
    await w.grant('mallory', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['watchoperations'], verbs: ['get', 'patch'] },
    ]);
    await createScheduler(w.as('alice'), a, 'watchoperations', 'fleet', {
      selector: { matchLabels: { tier: 'web' } },
      triggers: { fieldPaths: ['spec.appRef.chart.version'] },
      rollout: { waves: [1], failureBudget: 0 },
      operationTemplate: {
        spec: {
          type: 'RunCommand',
          engine: 'job',
          parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
        },
      },
    });
  });
  afterAll(async () => {
    await w?.stop();
  });

  it.each([
    [ANNOTATION_RESUME, 'starts the remaining waves'],
    [ANNOTATION_ABANDON, 'ends the'],
  ])('refuses %s from a tenant without the type verb, naming the annotation', async (key, why) => {
    const denied = await w.denial(annotate(w.as('mallory'), path(), { [key]: 'now' }));
    expect(denied.code).toBe(403);
    expect(denied.causes.map((c) => c.field)).toEqual([`metadata.annotations[${key}]`]);
    expect(denied.message).toContain(why);
  });

  it('admits it from the tenant who may run the template on the instances', async () => {
    await annotate(w.as('alice'), path(), { [ANNOTATION_RESUME]: 'now', [ANNOTATION_ABANDON]: 'now' });
  });
});
