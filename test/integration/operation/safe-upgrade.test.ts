// Safe Upgrade (ADR 0055) on the real API server, the operator on least privilege (the CSV's rules, only the
// safeUpgrade.helm profile bound in the namespace): the pre-upgrade snapshot, the runner held until it is
// ready, the post-check, and — when the check fails — the rollback Job resumed, then the claim recreated from
// that snapshot, with status.rollback saying so; a rollback Job that fails ends RollbackFailed with a Warning
// Event. What other controllers would do the test does as the admin: the snapshot controller is the engine
// simulator; the Job controller's verdicts (Complete, Failed) and the garbage collector / pvc-protection
// releasing a deleted claim are written by hand. These are the operator's decisions; that helm and a real
// database do what they say is proven on the real node (test/e2e/production/).
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../operator/src/api/operation.ts';
import type { Template } from '../../../operator/src/catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../../../operator/src/catalog/templates/index.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { EngineSimulator } from '../../support/simulator.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { grant, operatorIdentity } from './identity.ts';
import {
  bindClaim,
  recordChartSource,
  releaseClaim,
  releaseDeletedClaim,
  releaseDeployment,
  releaseRecord,
  requests,
} from './release-fixture.ts';
import { Api, cond, eventually, type RunningController, startController } from './support.ts';

const HELM_IMAGE =
  'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000';
const CHECK_IMAGE = 'registry.example.com/postgres:15';

const helmUpgrade = BUILTIN_TEMPLATES.find((t) => t.name === 'helm-upgrade')!;
const SAFE: Template = {
  ...helmUpgrade,
  name: 'safe-upgrade',
  rbacProfile: 'safeUpgrade.helm',
  safety: {
    backup: { engine: 'snapshot' },
    postCheck: { image: CHECK_IMAGE, command: ['sh', '-c', 'psql -c "select email from users limit 1"'] },
    restoreOnFailure: true,
  },
};

type Job = KubernetesObject & { spec: { suspend?: boolean } };

describe('Safe Upgrade: backup, post-check, rollback and restore on the real API server', () => {
  const admin = adminKubeConfig();
  const api = new Api(admin);
  let kc: KubeConfig;
  let opNs: string;
  let ctl: RunningController;
  let sim: EngineSimulator;
  const simulated: string[] = [];

  const { get, post, patch } = requests(api);
  const stamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const record = (ns: string, version: number, status: string) =>
    releaseRecord(api, ns, 'app', version, status);

  /** A namespace with only safeUpgrade.helm bound, a deployed revision 1, the release's claim and Deployment. */
  async function release(prefix: string): Promise<string> {
    const ns = await createNamespace(admin, prefix);
    await grant(api, 'safeUpgrade.helm', ns, opNs);
    await api.createInstance(ns, 'app', { upgrade: 'helm' }, true);
    simulated.push(ns);
    await post(`/api/v1/namespaces/${ns}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'vworkspace-runner' },
    });
    await record(ns, 1, 'deployed');
    await recordChartSource(api, ns, 'app');
    await releaseClaim(api, ns, 'app-data');
    await releaseDeployment(api, ns, 'app-data');
    return ns;
  }
  const relabel = (ns: string, version: number, status: string) =>
    patch(`/api/v1/namespaces/${ns}/secrets/sh.helm.release.v1.app.v${version}`, {
      metadata: { labels: { status } },
    });

  const jobsOf = async (ns: string) => {
    const list = await get<{ items: Job[] }>(`/apis/batch/v1/namespaces/${ns}/jobs`);
    const ann = (j: Job, k: string) => j.metadata?.annotations?.[`ops.vworkspace.io/${k}`];
    return {
      runner: list.items.find((j) => !ann(j, 'helm-rollback-revision') && !ann(j, 'post-check')),
      rollback: list.items.find((j) => ann(j, 'helm-rollback-revision')),
      probe: list.items.find((j) => ann(j, 'post-check')),
    };
  };
  const resumed = (ns: string, which: 'runner' | 'rollback' | 'probe') =>
    eventually(
      `the ${which} Job resumed`,
      async () => {
        const j = (await jobsOf(ns))[which];
        return j && j.spec.suspend === false ? j : undefined;
      },
      60_000,
    );
  /** What the Job controller writes when a Job's pod ended. */
  async function finish(ns: string, job: Job, ok: boolean) {
    const at = stamp();
    const c = (type: string, reason: string) => ({
      type,
      status: 'True',
      lastProbeTime: at,
      lastTransitionTime: at,
      reason,
      message: reason,
    });
    await patch(`/apis/batch/v1/namespaces/${ns}/jobs/${job.metadata?.name}/status`, {
      status: ok
        ? {
            startTime: at,
            completionTime: at,
            succeeded: 1,
            conditions: [c('SuccessCriteriaMet', 'CompletionsReached'), c('Complete', 'CompletionsReached')],
          }
        : {
            startTime: at,
            failed: 1,
            conditions: [c('FailureTarget', 'BackoffLimitExceeded'), c('Failed', 'BackoffLimitExceeded')],
          },
    });
  }
  const operation = (ns: string) => api.getOperation(ns, 'up');
  /** Creates the Safe Upgrade and carries it to helm having upgraded (revision 2 deployed). */
  async function upgraded(ns: string): Promise<void> {
    await api.createOperation(ns, 'up', {
      type: 'Upgrade',
      engine: 'helm',
      template: 'safe-upgrade',
      targetRef: { name: 'app' },
      parameters: { version: '2.0.0' },
    });
    // The runner waits for the snapshot; the simulator makes it readyToUse.
    const before = await eventually(
      'the runner, its rollback Job and the post-check',
      async () => {
        const j = await jobsOf(ns);
        return j.runner && j.rollback && j.probe ? j : undefined;
      },
      60_000,
    );
    expect([before.runner?.spec.suspend, before.rollback?.spec.suspend, before.probe?.spec.suspend]).toEqual([
      true,
      true,
      true,
    ]);
    const runner = await resumed(ns, 'runner');
    const snaps = await get<{ items: KubernetesObject[] }>(
      `/apis/snapshot.storage.k8s.io/v1/namespaces/${ns}/volumesnapshots`,
    );
    expect(snaps.items.map((s) => s.metadata?.ownerReferences)).toEqual([undefined]);
    await relabel(ns, 1, 'superseded');
    await record(ns, 2, 'deployed');
    await finish(ns, runner, true);
  }

  beforeAll(async () => {
    opNs = await createNamespace(admin, 'opsafe');
    kc = await operatorIdentity(admin, api, opNs);
    ctl = startController(kc, adapterFor, {
      helmImage: HELM_IMAGE,
      templates: { templates: () => [...BUILTIN_TEMPLATES, SAFE] },
    });
    sim = new EngineSimulator(api.client, { namespaces: simulated, intervalMs: 100 });
    sim.start();
  });
  afterAll(async () => {
    await sim?.stop();
    await ctl?.stop();
  });

  it('the post-check passing keeps the new revision: Succeeded, nothing rolled back', async () => {
    const ns = await release('safeok');
    await upgraded(ns);
    const probe = await resumed(ns, 'probe');
    await finish(ns, probe, true);
    const op = await api.finished(ns, 'up', 60_000);
    expect(op.status?.phase).toBe('Succeeded');
    expect(cond(op, 'Succeeded')?.reason).toBe('HelmUpgradeSucceeded');
    expect(op.status?.rollback).toBeUndefined();
    expect((await jobsOf(ns)).rollback?.spec.suspend).toBe(true);
  });

  it('the post-check failing: rolled back to revision 1, the claim recreated from the pre-upgrade snapshot; status.rollback says so', async () => {
    const ns = await release('safefail');
    await upgraded(ns);
    const probe = await resumed(ns, 'probe');
    await finish(ns, probe, false);
    const rollback = await resumed(ns, 'rollback');
    expect(rollback.metadata?.annotations?.['ops.vworkspace.io/rolled-back-from']).toBe('2');
    const rolling = await eventually(
      'status.rollback RollingBack',
      async () => {
        const o = await operation(ns);
        return o.status?.rollback?.state === 'RollingBack' ? o : undefined;
      },
      60_000,
    );
    expect(rolling.status?.rollback).toMatchObject({
      why: 'PostCheckFailed',
      fromRevision: 2,
      toRevision: 1,
    });
    // helm rollback deploys revision 3 (= 1).
    await relabel(ns, 2, 'superseded');
    await record(ns, 3, 'deployed');
    const old = await get<KubernetesObject>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/app-data`);
    await finish(ns, rollback, true);
    // The restore: the Deployment scaled to 0, the old claim deleted (released here as pvc-protection would).
    const apps = `/apis/apps/v1/namespaces/${ns}/deployments/app-db`;
    await eventually(
      'the Deployment scaled to 0',
      async () => (await get<{ spec: { replicas: number } }>(apps)).spec.replicas === 0,
      60_000,
    );
    await releaseDeletedClaim(api, ns, 'app-data', old);
    const snapshot = (await operation(ns)).status?.rollback?.backup;
    expect(snapshot).toBeTruthy();
    const restored = await eventually(
      'the claim created from the pre-upgrade snapshot',
      async () => {
        const c = await get<KubernetesObject & { spec: { dataSource?: { name?: string } } }>(
          `/api/v1/namespaces/${ns}/persistentvolumeclaims/app-data`,
        ).catch(() => undefined);
        return c && c.metadata?.uid !== old.metadata?.uid ? c : undefined;
      },
      60_000,
    );
    expect(restored.spec.dataSource).toMatchObject({ kind: 'VolumeSnapshot', name: snapshot });
    await bindClaim(api, ns, 'app-data');
    await eventually(
      'the Deployment scaled back to 1',
      async () => (await get<{ spec: { replicas: number } }>(apps)).spec.replicas === 1,
      60_000,
    );
    await patch(`${apps}/status`, { status: { replicas: 1, readyReplicas: 1 } });
    const op = await api.finished(ns, 'up', 60_000);
    const c = cond(op, 'Succeeded');
    expect(op.status?.phase).toBe('Failed');
    expect(c?.reason).toBe('PostCheckFailed');
    expect(c?.message).toContain('the claims were restored from the pre-upgrade backup');
    expect(op.status?.rollback).toMatchObject({
      why: 'PostCheckFailed',
      fromRevision: 2,
      toRevision: 1,
      rolledBackBy: `Job ${rollback.metadata?.name}`,
      backup: snapshot,
      restore: 'Restored',
      state: 'Done',
    });
    // The plan is recorded as a child of the attempt, after the first ones.
    expect(op.status?.childRefs?.map((r) => r.kind)).toEqual([
      'Job',
      'Job',
      'Job',
      'VolumeSnapshot',
      'ConfigMap',
    ]);
  });

  it('the rollback Job failing: Failed/RollbackFailed with the helm rollback to run, a Warning Event, nothing retried', async () => {
    const ns = await release('safebroke');
    await upgraded(ns);
    await finish(ns, await resumed(ns, 'probe'), false);
    const rollback = await resumed(ns, 'rollback');
    await relabel(ns, 2, 'superseded');
    await record(ns, 3, 'failed');
    await finish(ns, rollback, false);
    const op: Operation = await api.finished(ns, 'up', 60_000);
    const c = cond(op, 'Succeeded');
    expect(op.status?.phase).toBe('Failed');
    expect(c?.reason).toBe('RollbackFailed');
    expect(c?.message).toContain('the release is at revision 3 (failed)');
    expect(c?.message).toContain(`run \`helm rollback app 1 -n ${ns}\``);
    expect(op.status?.rollback).toMatchObject({ state: 'Failed', restore: 'Failed', toRevision: 1 });
    const events = await get<{ items: { type: string; reason: string; involvedObject: { name: string } }[] }>(
      `/api/v1/namespaces/${ns}/events`,
    );
    expect(
      events.items
        .filter((e) => e.involvedObject.name === 'up' && e.reason === 'RollbackFailed')
        .map((e) => e.type),
    ).toEqual(['Warning']);
    // Nothing retried blindly: no second attempt, the claim untouched.
    expect(op.status?.attempts).toBe(1);
    const claim = await get<KubernetesObject>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/app-data`);
    expect(claim.metadata?.deletionTimestamp).toBeUndefined();
  });
});
