// Resuming or abandoning a fleet run (spec.rollout) on exactly the CSV's RBAC and webhooks. A resume
// starts the run's remaining waves with the operator's identity, so it must need what running the fleet
// needs: the patch of the CronOperation (RBAC) and the type verb on its instances (the webhook, as for
// run-now and skip-next). A tenant who may patch CronOperations but not run their type used to be admitted.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_ABANDON, ANNOTATION_RESUME } from '../../../operator/src/api/annotations.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { startWorld, type World } from './harness.ts';
import { annotate, createScheduler, labelledInstance, OPS } from './schedule-support.ts';

describe('resume and abandon of a fleet run on the CSV RBAC', () => {
  let w: World;
  let a: string;
  const path = () => `${OPS}/namespaces/${a}/cronoperations/fleet`;

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await labelledInstance(w, a, 'web-1', { tier: 'web' }, { 'ops.vworkspace.io/runcommand': 'job' });
    await w.grantProfile('runCommand.job', a);
    await w.grant('alice', a, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['cronoperations'],
        verbs: ['create', 'get', 'list', 'update', 'patch'],
      },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
    ]);
    // mallory may edit CronOperations' metadata, but not run commands on the instances.
    await w.grant('mallory', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['cronoperations'], verbs: ['get', 'patch'] },
    ]);
    // eve may only read it.
    await w.grant('eve', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['cronoperations'], verbs: ['get'] },
    ]);
    await createScheduler(w.as('alice'), a, 'cronoperations', 'fleet', {
      schedule: '0 0 1 1 *',
      targetSelector: { matchLabels: { tier: 'web' } },
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
    [ANNOTATION_ABANDON, 'ends the fleet run'],
  ])('refuses %s from a tenant without the type verb, naming the annotation', async (key, why) => {
    const denied = await w.denial(annotate(w.as('mallory'), path(), { [key]: 'now' }));
    expect(denied.code).toBe(403);
    expect(denied.causes.map((c) => c.field)).toEqual([`metadata.annotations[${key}]`]);
    expect(denied.message).toContain(why);
  });

  it('refuses it to a tenant who may not patch the CronOperation (RBAC), and admits the one who may run it', async () => {
    const denied = await w.denial(annotate(w.as('eve'), path(), { [ANNOTATION_RESUME]: 'now' }));
    expect(denied.code).toBe(403);
    await annotate(w.as('alice'), path(), { [ANNOTATION_RESUME]: 'now' });
  });
});
