// Hole 13 of issue 28 (a Secret in status): a helmHookJob Migration runs the Helm hook Jobs stored in the
// release record, a Secret, with the release's values rendered into them (here the store's password in a
// hook's env). A dry run writes the Jobs it would create into status.plan, which whoever may read the
// Operation reads: a tenant without any Secret access read the password there. A plan never copies a value
// read from a Secret: what came from the release record is redacted, its shape (Jobs, images, ServiceAccount,
// security settings, names) stays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { settled } from './support.ts';

const PASSWORD = 'hunter2-correct-horse';
const STORE = 'http://store.example:8080';

describe("a dry run's plan holds no value from the release record", () => {
  let w: World;
  let ns: string;

  beforeAll(async () => {
    w = await startWorld();
    ns = w.namespaces[0];
    await w.installRelease(ns, 'shop', [
      'migration.enabled=true',
      `migration.store=${STORE}`,
      `migration.password=${PASSWORD}`,
    ]);
    await w.instance(ns, 'shop', { migration: 'helmHookJob' });
    await w.grantProfile('migration.helmHookJob', ns);
    // Operations and the migration verb; no Secret access at all.
    await w.grant('mallory', ns, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['migration'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('redacts what came from the release record, and still shows which Jobs would run', async () => {
    const mallory = w.as('mallory');
    await w.denial(mallory.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/secrets` }));
    await w.operation(mallory, ns, 'peek', {
      type: 'Migration',
      engine: 'helmHookJob',
      targetRef: { name: 'shop' },
      policy: { dryRun: true, requireReady: false },
    });
    const out = await settled(w, ns, 'peek');
    expect(out.succeeded).toMatchObject({ status: 'True', reason: 'DryRunCompleted' });
    const seen = await mallory.request<{ status?: { plan?: { children?: unknown[] } } }>({
      method: 'GET',
      path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${ns}/operations/peek`,
    });
    const plan = JSON.stringify(seen.status?.plan);
    expect(plan).not.toContain(PASSWORD);
    expect(plan).not.toContain(STORE);
    const jobs = (seen.status?.plan?.children ?? []) as {
      kind: string;
      metadata: { annotations?: Record<string, string> };
      spec: { template: { spec: { serviceAccountName?: string; containers: Record<string, unknown>[] } } };
    }[];
    expect(jobs.map((j) => [j.kind, j.metadata.annotations?.['ops.vworkspace.io/helm-hook']])).toEqual([
      ['Job', 'shop-prepare'],
      ['Job', 'shop-migrate'],
    ]);
    const container = jobs[0]?.spec.template.spec.containers[0];
    expect(container).toMatchObject({
      name: 'prepare',
      image: 'docker.io/library/busybox:1.37.0',
      env: [{ name: 'STORE_PASSWORD', value: expect.stringContaining('redacted') }],
    });
    expect(jobs[0]?.spec.template.spec.serviceAccountName).toBe('vworkspace-runner');
  });
});
