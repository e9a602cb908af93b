// The engine adapters against the real upstream CRDs (Velero, Argo Workflows, VolSync, external-
// snapshotter) and the built-in batch/v1 Job on a real API server: every materialized child is created
// with strict field validation (an unknown or misspelt field is an error, not silently pruned), the
// simulator moves it the way the real controller does, and `observe` must report the right reason.
import type { KubernetesObject } from '@kubernetes/client-node';
import { PATCH_TYPES, type RestClient, resourcePath, splitApiVersion } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION } from '../../../operator/src/api/constants.ts';
import type { Engine, OperationType } from '../../../operator/src/api/enums.ts';
import type { EffectiveTemplate } from '../../../operator/src/catalog/template.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineEnvironment,
  MaterializeInput,
  Observation,
} from '../../../operator/src/engines/types.ts';
import {
  anInput,
  aReleaseHook,
  aVeleroBackup,
  builtinWith,
  materialized,
} from '../../support/builders/engines.ts';
import { testClient } from '../../support/clients.ts';
import { ANNOTATION_OUTCOME, EngineSimulator, HOLD } from '../../support/simulator.ts';
import { eventually } from '../runtime/support.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

let client: RestClient;
let sim: EngineSimulator;
let ns: string;
let veleroNs: string;
let seq = 0;

beforeAll(async () => {
  const kc = adminKubeConfig();
  client = testClient(kc);
  ns = await createNamespace(kc, 'eng');
  veleroNs = await createNamespace(kc, 'velero');
  sim = new EngineSimulator(client, { namespaces: [ns, veleroNs], intervalMs: 100 });
  sim.start();
});

afterAll(async () => {
  await sim?.stop();
});

const PLURALS: Record<string, string> = { Job: 'jobs', DeleteBackupRequest: 'deletebackuprequests' };

function pathOf(
  o: { apiVersion?: string; kind?: string; metadata?: { namespace?: string } },
  name?: string,
): string {
  const { group, version } = splitApiVersion(o.apiVersion ?? '');
  const fromAdapters = ['velero', 'workflow', 'volsync', 'snapshot']
    .flatMap((e) => adapterFor(e as Engine).childKinds)
    .find((k) => k.kind === o.kind)?.plural;
  const plural = fromAdapters ?? PLURALS[o.kind ?? ''] ?? '';
  return resourcePath({ group, version, plural, namespace: o.metadata?.namespace }, name);
}

/** Creates with strict field validation: a field the real schema does not know fails the test. */
async function create(obj: ChildManifest): Promise<KubernetesObject> {
  return client.request<KubernetesObject>({
    method: 'POST',
    path: pathOf(obj),
    query: { fieldValidation: 'Strict' },
    body: obj,
  });
}

interface Run {
  input: MaterializeInput;
  children: ChildManifest[];
  engine: Engine;
}

/** A real Operation (for a real uid and owner), then its engine's children, created on the API server. */
async function run(
  type: OperationType,
  engine: Engine,
  parameters: Record<string, unknown>,
  o: {
    env?: Partial<EngineEnvironment>;
    outcome?: string;
    instanceAnnotations?: Record<string, string>;
    template?: EffectiveTemplate;
  } = {},
): Promise<Run> {
  const name = `${engine.toLowerCase()}-${type.toLowerCase()}-${++seq}`;
  const op = await client.request<KubernetesObject>({
    method: 'POST',
    path: resourcePath({ ...OPERATION, namespace: ns }),
    body: {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: { name, ...(o.outcome ? { annotations: { [ANNOTATION_OUTCOME]: o.outcome } } : {}) },
      spec: { type, engine, targetRef: { name: 'nextcloud' }, parameters },
    },
  });
  const input = anInput({
    name,
    namespace: ns,
    uid: op.metadata?.uid ?? null,
    type,
    engine,
    parameters,
    env: { veleroNamespace: veleroNs, ...o.env },
    instance: { annotations: o.instanceAnnotations ?? {} },
    ...(o.template ? { template: o.template } : {}),
  });
  const children = materialized(adapterFor(engine).materialize(input));
  for (const c of children) await create(c);
  return { input, children, engine };
}

async function current(r: Run): Promise<KubernetesObject[]> {
  return Promise.all(
    r.children.map((c) =>
      client.request<KubernetesObject>({ method: 'GET', path: pathOf(c, c.metadata.name) }),
    ),
  );
}

/** Observes the real children until the adapter reports `reason` (or the simulator is stuck). */
async function until(r: Run, reason: string): Promise<Observation> {
  let last: Observation | undefined;
  try {
    return await eventually(`${r.engine} to report ${reason}`, async () => {
      last = adapterFor(r.engine).observe(await current(r), r.input);
      // What the reconciler does for a running observation (e.g. release finished VolumeSnapshots).
      for (const a of last.actions ?? []) {
        if (a.kind !== 'patch') throw new Error(`no test support for action ${a.kind}`);
        await client.request({
          method: 'PATCH',
          path: pathOf(a.child, a.child.metadata.name),
          body: a.patch,
          contentType: PATCH_TYPES.merge,
        });
      }
      return last.reason === reason ? last : undefined;
    });
  } catch (err) {
    throw new Error(
      `${String(err)}; last observation ${JSON.stringify(last)}; simulator errors ${sim.lastErrors.join('; ')}`,
    );
  }
}

async function perform(action: CancelAction): Promise<void> {
  if (action.kind === 'create') await create(action.object);
  if (action.kind === 'patch') {
    await client.request({
      method: 'PATCH',
      path: pathOf(action.child, action.child.metadata.name),
      contentType: PATCH_TYPES.merge,
      body: action.patch,
    });
  }
  if (action.kind === 'delete') {
    await client.request({
      method: 'DELETE',
      path: pathOf(action.child, action.child.metadata.name),
      body: { propagationPolicy: action.propagationPolicy ?? 'Background' },
    });
  }
}

describe('simulator', () => {
  it('moves a velero.io Backup through New and InProgress to Completed on the real API server', async () => {
    const r = await run('Backup', 'velero', {});
    const seen = new Set<string>();
    await eventually('the Backup to complete', async () => {
      const [b] = await current(r);
      const phase = (b as { status?: { phase?: string } } | undefined)?.status?.phase ?? '';
      seen.add(phase);
      return phase === 'Completed';
    });
    expect(seen.has('Completed')).toBe(true);
    const [b] = await current(r);
    expect(b).toMatchObject({
      status: { phase: 'Completed', progress: { totalItems: 10, itemsBackedUp: 10 } },
    });
  });
});

describe('strict creation', () => {
  it('refuses a field the real schema does not know, so an accepted child means a valid one', async () => {
    const r = await run('Backup', 'velero', {});
    const child = r.children[0];
    if (!child) throw new Error('no child');
    const misspelt: ChildManifest = {
      ...child,
      metadata: { ...child.metadata, name: `${child.metadata.name.slice(0, 50)}-bad` },
      spec: { ...(child.spec as object), includeNamespaces: ['typo'] },
    };
    await expect(create(misspelt)).rejects.toThrow(/includeNamespaces/);
  });
});

describe('velero children on the real CRDs', () => {
  it('Backup (with quiesce hooks and every parameter) ⇒ VeleroBackupInProgress, then VeleroBackupCompleted', async () => {
    const r = await run(
      'Backup',
      'velero',
      {
        storageLocation: 'default',
        ttl: '24h',
        quiesce: 'exec',
        snapshotVolumes: false,
        defaultVolumesToFsBackup: true,
        includeClusterResources: false,
      },
      { instanceAnnotations: { 'ops.vworkspace.io/quiesce': 'exec' } },
    );
    expect(r.children[0]?.metadata.namespace).toBe(veleroNs);
    const done = await until(r, 'VeleroBackupCompleted');
    expect(done).toMatchObject({ phase: 'Succeeded', outputs: { backupName: r.children[0]?.metadata.name } });
  });

  it('Backup the simulator makes PartiallyFailed ⇒ VeleroBackupPartiallyFailed with the counts', async () => {
    const r = await run('Backup', 'velero', {}, { outcome: 'PartiallyFailed' });
    const o = await until(r, 'VeleroBackupPartiallyFailed');
    expect(o.message).toContain('2 error(s) and 1 warning(s)');
  });

  it('Backup failing validation ⇒ VeleroBackupFailed, not retryable', async () => {
    const r = await run('Backup', 'velero', {}, { outcome: 'FailedValidation' });
    expect((await until(r, 'VeleroBackupFailed')).retryable).toBe(false);
  });

  it('Restore ⇒ VeleroRestoreCompleted', async () => {
    const r = await run(
      'Restore',
      'velero',
      { backupName: 'some-backup', existingResourcePolicy: 'update' },
      { env: { veleroBackup: aVeleroBackup('some-backup', ns) } },
    );
    expect(await until(r, 'VeleroRestoreCompleted')).toMatchObject({
      outputs: { backupName: 'some-backup' },
    });
  });

  it('cancel of a running Backup waits: Velero refuses a DeleteBackupRequest while InProgress', async () => {
    const r = await run('Backup', 'velero', {}, { outcome: HOLD });
    await eventually('the Backup to be InProgress', async () => {
      const [b] = await current(r);
      return (b as { status?: { phase?: string } }).status?.phase === 'InProgress';
    });
    const [b] = await current(r);
    expect(adapterFor('velero').cancel([b!])).toEqual([
      { kind: 'wait', message: expect.stringContaining('Velero cannot stop a Backup in flight') },
    ]);
    // What a request filed now would get (test/e2e/engines/velero.ts shows the same of Velero itself).
    const name = b!.metadata!.name!;
    const action = {
      kind: 'create',
      object: {
        apiVersion: 'velero.io/v1',
        kind: 'DeleteBackupRequest',
        metadata: { name: `${name}-probe`, namespace: b!.metadata!.namespace! },
        spec: { backupName: name },
      },
    } as const;
    await perform(action);
    const dbr = await eventually('the request to be processed', async () => {
      const o = await client.request<{ status?: { phase?: string; errors?: string[] } }>({
        method: 'GET',
        path: pathOf(action.object, action.object.metadata.name),
      });
      return o.status?.phase === 'Processed' ? o : undefined;
    });
    expect(dbr.status?.errors).toEqual(['backup deletion failed: backup is still in progress']);
    expect((await current(r)).length).toBe(1);
  });

  it('cancel of a finished Backup files a DeleteBackupRequest that removes it', async () => {
    const r = await run('Backup', 'velero', {});
    await until(r, 'VeleroBackupCompleted');
    for (const a of adapterFor('velero').cancel(await current(r))) await perform(a);
    await eventually(
      'the Backup to be deleted',
      async () =>
        await current(r)
          .then(() => false)
          .catch(() => true),
    );
  });
});

describe('workflow children on the real CRD', () => {
  const params = {
    workflowTemplateRef: { name: 'db-maintenance' },
    arguments: { table: 'users' },
    serviceAccountName: 'runner',
  };
  const template = builtinWith('Runbook', 'workflow', { allowedServiceAccounts: ['runner'] });

  it('Workflow ⇒ WorkflowRunning, then WorkflowSucceeded', async () => {
    const r = await run('Runbook', 'workflow', params, { template });
    await until(r, 'WorkflowSucceeded');
  });

  it('a failing Workflow ⇒ WorkflowNodeFailed naming the node', async () => {
    const r = await run('Runbook', 'workflow', params, { outcome: 'Failed', template });
    expect((await until(r, 'WorkflowNodeFailed')).message).toContain('node main failed');
  });

  it("cancel stops it through spec.shutdown (the template's default: Stop)", async () => {
    const r = await run('Runbook', 'workflow', params, { outcome: HOLD, template });
    await until(r, 'WorkflowRunning');
    for (const a of adapterFor('workflow').cancel(await current(r))) await perform(a);
    expect((await until(r, 'WorkflowNodeFailed')).message).toContain("Stopped with strategy 'Stop'");
  });
});

describe('volsync children on the real CRDs', () => {
  const env = { pvcs: ['nextcloud-data', 'nextcloud-db'] };
  // One restic repository per claim: VolSync's mover tells a shared repository's snapshots apart only by time.
  const repository = { 'nextcloud-data': 'restic-data', 'nextcloud-db': 'restic-db' };

  it('ReplicationSource per PVC ⇒ VolSyncSyncCompleted once every lastManualSync matches', async () => {
    const r = await run(
      'Backup',
      'volsync',
      {
        repository,
        copyMethod: 'Snapshot',
        volumeSnapshotClassName: 'csi',
        retain: { daily: 7, weekly: 4 },
      },
      { env },
    );
    expect(r.children).toHaveLength(2);
    const o = await until(r, 'VolSyncSyncCompleted');
    expect(o.outputs?.replicationSources?.split(',')).toHaveLength(2);
  });

  it('ReplicationDestination per PVC ⇒ VolSyncSyncCompleted', async () => {
    const r = await run(
      'Restore',
      'volsync',
      { repository, restoreAsOf: '2026-01-01T00:00:00Z', previous: 1 },
      { env },
    );
    await until(r, 'VolSyncSyncCompleted');
  });

  it('a failed mover ⇒ VolSyncSyncFailed', async () => {
    const r = await run('Backup', 'volsync', { repository }, { env, outcome: 'Failed' });
    expect((await until(r, 'VolSyncSyncFailed')).message).toContain('simulated mover failure');
  });
});

describe('snapshot children on the real CRD', () => {
  it('VolumeSnapshot per PVC ⇒ VolumeSnapshotReadyToUse with the names as outputs', async () => {
    const r = await run(
      'Backup',
      'snapshot',
      { volumeSnapshotClassName: 'csi-hostpath' },
      { env: { pvcs: ['data', 'db'] } },
    );
    const o = await until(r, 'VolumeSnapshotReadyToUse');
    expect(o.outputs?.['snapshot.db']).toBe(r.children[1]?.metadata.name);
    // Released: the merge patch removed the owner reference on the real CRD; the labels stay.
    for (const s of await current(r)) {
      expect(s.metadata?.ownerReferences).toBeUndefined();
      expect(s.metadata?.labels).toMatchObject({ 'ops.vworkspace.io/instance': 'nextcloud' });
    }
  });

  it('a snapshot error ⇒ VolumeSnapshotFailed', async () => {
    const r = await run('Backup', 'snapshot', {}, { env: { pvcs: ['data'] }, outcome: 'Failed' });
    await until(r, 'VolumeSnapshotFailed');
  });
});

describe('Job children are valid batch/v1 Jobs', () => {
  it('job (RunCommand), helm (Upgrade) and helmHookJob (Migration) Jobs are accepted as materialized', async () => {
    const job = await run('RunCommand', 'job', { command: ['sh', '-c', 'echo hi'] });
    const helm = await run(
      'Upgrade',
      'helm',
      { version: '6.7.0' },
      {
        env: {
          helmImage: 'docker.io/alpine/helm:3.19.0',
          helmRelease: { revision: 3, status: 'deployed', lastDeployed: 3 },
        },
      },
    );
    const hookJob = (name: string) => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name, annotations: { 'helm.sh/hook': 'pre-upgrade' } },
      spec: {
        template: {
          spec: { containers: [{ name: 'migrate', image: 'busybox:1.37.0', command: ['true'] }] },
        },
      },
    });
    const hook = await run(
      'Migration',
      'helmHookJob',
      {},
      { env: { releaseHooks: { revision: 1, hooks: [aReleaseHook(hookJob('migrate'))] } } },
    );
    // A sequence: the later hook Job is accepted suspended, as materialized.
    const sequence = await run(
      'Migration',
      'helmHookJob',
      {},
      {
        env: {
          releaseHooks: {
            revision: 1,
            hooks: [aReleaseHook(hookJob('prepare'), { weight: -1 }), aReleaseHook(hookJob('migrate'))],
          },
        },
      },
    );
    const steps = (await current(sequence)) as (KubernetesObject & { spec?: { suspend?: boolean } })[];
    expect(steps.map((j) => j.spec?.suspend ?? false)).toEqual([false, true]);
    // The Upgrade's rollback Job is accepted suspended beside the runner, with its grace period.
    const [runner, rollback] = (await current(helm)) as (KubernetesObject & {
      spec?: { suspend?: boolean; template: { spec: { terminationGracePeriodSeconds?: number } } };
    })[];
    expect([runner?.spec?.suspend ?? false, rollback?.spec?.suspend]).toEqual([false, true]);
    expect(runner?.spec?.template.spec.terminationGracePeriodSeconds).toBe(660);
    for (const r of [job, helm, hook]) {
      const [created] = await current(r);
      expect(created).toMatchObject({ kind: 'Job', spec: { backoffLimit: 0 } });
      expect(created?.metadata?.ownerReferences?.[0]).toMatchObject({
        kind: 'Operation',
        uid: r.input.op.metadata.uid,
      });
      // No Job controller here: the adapter reads a fresh Job as running.
      expect(adapterFor(r.engine).observe([created as KubernetesObject], r.input).phase).toBe('Running');
    }
  });
});
