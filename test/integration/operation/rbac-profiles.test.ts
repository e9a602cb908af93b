// Every RBAC profile the changed built-in templates use suffices on least privilege (issue 22 item 7): the
// reconciler runs as a ServiceAccount holding exactly the CSV's rules, and in each namespace only the
// template's profile ClusterRole is bound, as docs/security/rbac.md tells a namespace owner. A missing
// rule would show as RbacProfileMissing or as a reconcile that fails with 403 and never moves on; each
// case instead reaches the engine's next state. The engines' controllers are the simulator (VolumeSnapshot,
// ReplicationDestination); what the control plane's controllers would do (the garbage collector and the
// pvc-protection controller releasing a deleted claim, a Deployment becoming ready) the test does, as the
// admin. The real controllers: test/e2e/engines/.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('the profiles of the built-in templates suffice on least privilege', () => {
  const admin = adminKubeConfig();
  const api = new Api(admin);
  let kc: KubeConfig;
  let opNs: string;
  let ctl: RunningController;
  let sim: EngineSimulator;
  const simulated: string[] = [];

  const { get, post, patch } = requests(api);
  const phaseOf = async (ns: string, name: string) => (await api.getOperation(ns, name)).status?.phase;

  /** A namespace with only `profiles` bound to the operator, and the release's instance. */
  async function namespaceWith(prefix: string, profiles: string[], capabilities: Record<string, string>) {
    const ns = await createNamespace(admin, prefix);
    for (const p of profiles) await grant(api, p, ns, opNs);
    await api.createInstance(ns, 'app', capabilities, true);
    simulated.push(ns);
    return ns;
  }

  const claim = (ns: string, name: string) => releaseClaim(api, ns, name);
  const bind = (ns: string, name: string) => bindClaim(api, ns, name);

  beforeAll(async () => {
    opNs = await createNamespace(admin, 'opid');
    kc = await operatorIdentity(admin, api, opNs);
    ctl = startController(kc, adapterFor, { helmImage: HELM_IMAGE });
    sim = new EngineSimulator(api.client, { namespaces: simulated, intervalMs: 100 });
    sim.start();
  });
  afterAll(async () => {
    await sim?.stop();
    await ctl?.stop();
  });

  it('backup.snapshot and restore.snapshot: snapshots released; the claim replaced from one, the workload scaled down and back', async () => {
    const ns = await namespaceWith('snaprbac', ['backup.snapshot', 'restore.snapshot'], {
      backup: 'snapshot',
      restore: 'snapshot',
    });
    await claim(ns, 'app-data');
    const apps = `/apis/apps/v1/namespaces/${ns}/deployments`;
    await releaseDeployment(api, ns, 'app-data');

    await api.createOperation(ns, 'snap', { type: 'Backup', engine: 'snapshot', targetRef: { name: 'app' } });
    await eventually('the Backup Succeeded', async () => (await phaseOf(ns, 'snap')) === 'Succeeded', 60_000);
    const snapshot = String((await api.getOperation(ns, 'snap')).status?.outputs?.['snapshot.app-data']);
    const vs = await get<KubernetesObject>(
      `/apis/snapshot.storage.k8s.io/v1/namespaces/${ns}/volumesnapshots/${snapshot}`,
    );
    expect(vs.metadata?.ownerReferences).toBeUndefined();

    const old = await get<KubernetesObject>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/app-data`);
    await api.createOperation(ns, 'restore', {
      type: 'Restore',
      engine: 'snapshot',
      targetRef: { name: 'app' },
    });
    await eventually(
      'the Deployment scaled to 0 through /scale',
      async () => (await get<{ spec: { replicas: number } }>(`${apps}/app-db`)).spec.replicas === 0,
      60_000,
    );
    // The claim deleted; the pvc-protection controller would release it (no pod mounts it).
    await releaseDeletedClaim(api, ns, 'app-data', old);
    const restored = await eventually(
      'the claim created from the snapshot',
      async () => {
        const c = await get<KubernetesObject & { spec: { dataSource?: { name?: string } } }>(
          `/api/v1/namespaces/${ns}/persistentvolumeclaims/app-data`,
        ).catch(() => undefined);
        return c && c.metadata?.uid !== old.metadata?.uid ? c : undefined;
      },
      60_000,
    );
    expect(restored.spec.dataSource).toMatchObject({ kind: 'VolumeSnapshot', name: snapshot });
    await bind(ns, 'app-data');
    await eventually(
      'the Deployment scaled back to 1',
      async () => (await get<{ spec: { replicas: number } }>(`${apps}/app-db`)).spec.replicas === 1,
      60_000,
    );
    await patch(`${apps}/app-db/status`, { status: { replicas: 1, readyReplicas: 1 } });
    await eventually(
      'the Restore Succeeded',
      async () => (await phaseOf(ns, 'restore')) === 'Succeeded',
      60_000,
    );
    expect(cond(await api.getOperation(ns, 'restore'), 'Succeeded')?.reason).toBe('VolumeSnapshotRestored');
  });

  it('upgrade.helm: the runner and its suspended rollback Job; once the runner is gone with the release pending, the rollback is resumed', async () => {
    const ns = await namespaceWith('helmrbac', ['upgrade.helm'], { upgrade: 'helm' });
    await post(`/api/v1/namespaces/${ns}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'vworkspace-runner' },
    });
    const record = (version: number, status: string) => releaseRecord(api, ns, 'app', version, status);
    await record(1, 'deployed');
    await recordChartSource(api, ns, 'app');
    await api.createOperation(ns, 'up', {
      type: 'Upgrade',
      engine: 'helm',
      targetRef: { name: 'app' },
      parameters: { version: '2.0.0' },
    });
    const jobs = `/apis/batch/v1/namespaces/${ns}/jobs`;
    type Job = KubernetesObject & { spec: { suspend?: boolean } };
    const [runner, rollback] = await eventually(
      'the runner and the rollback Job',
      async () => {
        const list = await get<{ items: Job[] }>(jobs);
        const rb = list.items.find(
          (j) => j.metadata?.annotations?.['ops.vworkspace.io/helm-rollback-revision'],
        );
        const up = list.items.find((j) => j !== rb);
        return rb && up ? ([up, rb] as const) : undefined;
      },
      60_000,
    );
    expect(rollback.metadata?.annotations?.['ops.vworkspace.io/helm-rollback-revision']).toBe('1');
    expect(rollback.spec.suspend).toBe(true);
    // helm had started the chart's pre-upgrade hook Job; beside it a Job that is no hook and another
    // release's hook Job, which are left alone.
    const aJob = (name: string, instance: string, hook?: string) =>
      post(jobs, {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: {
          name,
          labels: { 'app.kubernetes.io/instance': instance },
          ...(hook ? { annotations: { 'helm.sh/hook': hook } } : {}),
        },
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'm', image: 'registry.invalid/m:1' }] },
          },
        },
      });
    await aJob('app-migrations', 'app', 'post-install,pre-upgrade');
    await aJob('app-worker', 'app');
    await aJob('other-migrations', 'other', 'pre-upgrade');
    // helm died mid-upgrade: revision 2 left pending-upgrade; the runner is cancelled away.
    await record(2, 'pending-upgrade');
    await api.patchOperation(ns, 'up', { spec: { cancel: true } });
    const deleting = await eventually(
      'the runner deleted in the foreground',
      async () => {
        const j = await get<Job>(`${jobs}/${runner.metadata?.name}`);
        return j.metadata?.deletionTimestamp ? j : undefined;
      },
      60_000,
    );
    // What the garbage collector does once the runner's pods are gone.
    await patch(`${jobs}/${runner.metadata?.name}`, {
      metadata: { finalizers: null, resourceVersion: deleting.metadata?.resourceVersion },
    });
    // The abandoned upgrade's hook Job is stopped (foreground) before the rollback runs; the others stay.
    const hook = await eventually(
      'the hook Job deleted in the foreground',
      async () => {
        const j = await get<Job>(`${jobs}/app-migrations`);
        return j.metadata?.deletionTimestamp ? j : undefined;
      },
      60_000,
    );
    const recorded = await get<Job>(`${jobs}/${rollback.metadata?.name}`);
    expect(recorded.metadata?.annotations?.['ops.vworkspace.io/helm-stopped-hooks']).toBe('app-migrations');
    expect(recorded.spec.suspend).toBe(true);
    expect(cond(await api.getOperation(ns, 'up'), 'Running')?.message).toContain(
      "stopping the chart's hook Job app-migrations",
    );
    for (const name of ['app-worker', 'other-migrations'])
      expect((await get<Job>(`${jobs}/${name}`)).metadata?.deletionTimestamp).toBeUndefined();
    await patch(`${jobs}/app-migrations`, {
      metadata: { finalizers: null, resourceVersion: hook.metadata?.resourceVersion },
    });
    await eventually(
      'the rollback Job resumed',
      async () => (await get<Job>(`${jobs}/${rollback.metadata?.name}`)).spec.suspend === false,
      60_000,
    );
    // The status says so on the reconcile that resumed the Job, written after it.
    const op = await eventually(
      'the Operation saying it rolls the release back',
      async () => {
        const o = await api.getOperation(ns, 'up');
        return /rolling (it|the release) back to revision 1 with Job/.test(cond(o, 'Running')?.message ?? '')
          ? o
          : undefined;
      },
      60_000,
    );
    expect(op.status?.phase).toBe('Running');
  });

  it('restore.volsync: a ReplicationDestination per claim, Succeeded', async () => {
    const ns = await namespaceWith('vsrbac', ['restore.volsync'], { restore: 'volsync' });
    await claim(ns, 'app-data');
    await post(`/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'restic-repo' },
      stringData: { RESTIC_REPOSITORY: 's3:http://minio/bucket', RESTIC_PASSWORD: 'x' },
    });
    await api.createOperation(ns, 'restore', {
      type: 'Restore',
      engine: 'volsync',
      targetRef: { name: 'app' },
      parameters: { repository: 'restic-repo' },
    });
    await eventually(
      'the Restore Succeeded',
      async () => (await phaseOf(ns, 'restore')) === 'Succeeded',
      60_000,
    );
  });
});
