// kubectl vws backfill acts as the user who runs it (docs/adr/0047-catch-up-policy-and-backfill.md): the
// plugin creates the Operations itself, with the user's credentials, without the CronOperation's
// controller reference or the operator's acts-for annotation. So a tenant gets through it exactly what
// RBAC and the webhook give them when they create an Operation themselves: no create on operations ⇒
// Forbidden; create but not the type verb on the target ⇒ the webhook's refusal; the scheduler's
// authority (its editor's) is never borrowed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { formatTime } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { main } from '../../../operator/src/cli/kubectl-vws.ts';
import { startWorld, type World } from './harness.ts';
import { createScheduler, OPS } from './schedule-support.ts';

const HOUR = 3_600_000;

describe('kubectl vws backfill gives a tenant nothing RBAC denies them', () => {
  let w: World;
  let a: string;
  const dir = mkdtempSync(join(tmpdir(), 'vws-backfill-'));

  /** A kubeconfig file for `user`: the admin's credentials impersonating them, as `w.as` does. */
  function kubeconfigOf(user: string): string {
    const cluster = w.adminKc.getCurrentCluster();
    const me = w.adminKc.getCurrentUser();
    if (!cluster || !me) throw new Error('the admin kubeconfig has no current cluster or user');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [cluster],
      users: [{ ...me, name: user, impersonateUser: user }],
      contexts: [{ name: user, cluster: cluster.name, user }],
      currentContext: user,
    });
    const path = join(dir, `${user}.kubeconfig`);
    writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
    return path;
  }

  async function backfill(user: string, from: string, to: string) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      [
        'backfill',
        'cronoperation',
        'nightly',
        '--from',
        from,
        '--to',
        to,
        '-n',
        a,
        '--kubeconfig',
        kubeconfigOf(user),
      ],
      { out: (l) => out.push(l), err: (l) => err.push(l) },
    );
    return { code, out, err };
  }

  const operations = async () =>
    (
      await w.admin.request<{ items: Operation[] }>({
        method: 'GET',
        path: `${OPS}/namespaces/${a}/operations`,
      })
    ).items
      .map((o) => o.metadata.name)
      .sort();

  beforeAll(async () => {
    w = await startWorld();
    [a] = w.namespaces;
    await w.instance(a, 'shop', { runcommand: 'job' });
    await w.grantProfile('runCommand.job', a);
    const scheduling = {
      apiGroups: ['ops.vworkspace.io'],
      resources: ['cronoperations', 'operations'],
      verbs: ['create', 'get', 'list', 'update', 'patch'],
    };
    await w.grant('alice', a, [
      scheduling,
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        verbs: ['get', 'runcommand'],
      },
    ]);
    // May read the CronOperation and create Operations, but may not runcommand the instance.
    await w.grant('mallory', a, [scheduling]);
    // May only read the CronOperation.
    await w.grant('reader', a, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['cronoperations'], verbs: ['get'] },
    ]);
    // alice's CronOperation: its runs carry her authority when the operator creates them.
    await createScheduler(w.as('alice'), a, 'cronoperations', 'nightly', {
      schedule: '0 * * * *',
      operationTemplate: {
        spec: {
          type: 'RunCommand',
          engine: 'job',
          targetRef: { name: 'shop' },
          parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
        },
      },
    });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await w?.stop();
  });

  const hourAgo = (h: number) => formatTime(Math.floor((Date.now() - h * HOUR) / HOUR) * HOUR);

  it('refuses a user who may not create Operations, and one without the type verb on the target', async () => {
    const reader = await backfill('reader', hourAgo(3), hourAgo(2));
    expect(reader.code).toBe(1);
    expect(reader.err).toHaveLength(2);
    expect(reader.err[0]).toMatch(
      /^Error from server \(Forbidden\) for slot .*: .*"reader" cannot create resource "operations"/,
    );

    const mallory = await backfill('mallory', hourAgo(3), hourAgo(2));
    expect(mallory.code).toBe(1);
    expect(mallory.err).toHaveLength(2);
    expect(mallory.err[0]).toMatch(/^Error from server \(Forbidden\) for slot .*may not runcommand/);
    expect(await operations()).toEqual([]);
  });

  it('creates the slots for a user whom RBAC allows, as that user', async () => {
    const alice = await backfill('alice', hourAgo(3), hourAgo(2));
    expect(alice.err).toEqual([]);
    expect(alice.code).toBe(0);
    const created = await operations();
    expect(created).toHaveLength(2);
    for (const name of created) {
      const op = await w.getOperation(a, name ?? '');
      expect(op.metadata.annotations?.['ops.vworkspace.io/created-by']).toBe('alice');
      expect(op.metadata.ownerReferences ?? []).toEqual([]);
    }
  });
});
