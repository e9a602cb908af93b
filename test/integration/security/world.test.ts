// The security world itself: the operator really runs on the CSV's RBAC (what it may and may not do is the
// CSV's answer, not an admin's), its webhooks judge requests in the world's namespaces only, and a tenant
// is whoever the impersonated user's grants say.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { testClient } from '../../support/clients.ts';
import { startWorld, type World } from './harness.ts';

interface Review {
  status?: { allowed?: boolean };
}

async function operatorMay(w: World, namespace: string, verb: string, resource: string, group = '') {
  const kc = new KubeConfig();
  kc.loadFromFile(w.operatorKubeconfigPath);
  const res = await testClient(kc).request<Review>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace, verb, resource, group } },
    },
  });
  return res.status?.allowed === true;
}

describe('security world', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('runs the operator on the CSV permissions: it may watch Operations but not create Jobs before a profile is bound', async () => {
    const [a] = w.namespaces;
    expect(await operatorMay(w, a, 'watch', 'operations', 'ops.vworkspace.io')).toBe(true);
    expect(await operatorMay(w, a, 'create', 'jobs', 'batch')).toBe(false);
    await w.grantProfile('runCommand.job', a);
    expect(await operatorMay(w, a, 'create', 'jobs', 'batch')).toBe(true);
    expect(await operatorMay(w, w.namespaces[1], 'create', 'jobs', 'batch')).toBe(false);
  });

  it('registers the CSV webhooks for the world: a tenant without the type verb is refused at spec.targetRef.name', async () => {
    const [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await w.grant('eve', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create'] },
    ]);
    const d = await w.denial(
      w.operation(w.as('eve'), a, 'eve-run', {
        type: 'RunCommand',
        engine: 'job',
        targetRef: { name: 'shop' },
        parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
      }),
    );
    expect(d.code).toBe(403);
    expect(d.message).toMatch(/runcommand/);
    expect(d.causes.map((c) => c.field)).toContain('spec.targetRef.name');
  });
});
