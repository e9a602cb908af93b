// VolSync on the real node (docs/engines.md#volsync--backup-restore): VolSync's own controller and its
// restic mover (hack/lib/engines/volsync.ts), the S3 object store and the PVC provisioner the engine
// journeys share (hack/lib/engines/object-store.ts, storage.ts). The Operation controller runs in this
// process with the built-in VolSync Backup/Restore templates and the real volsync adapter; the instance
// controller beside it reads the release's Ready from the record the real helm CLI wrote.
//
// The journey: a release of the tiny chart with its PVC, a pod writes known content → Backup Operation →
// restic's repository files are in the bucket → the claim is deleted and the chart recreates it empty
// (a new volume under the same name: the adapter restores into the release's claim, copyMethod Direct)
// → Restore Operation → a pod reads the same checksum. Then a wrong restic password: the mover really
// fails with restic's error, VolSync retries (its Job has backoffLimit 8, so VolSyncSyncFailed would
// come only after ~16 min of Kubernetes' pod backoff), and cancel stops it.
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureObjectStore, type ObjectStore } from '../../../hack/lib/engines/object-store.ts';
import { ensureStorage } from '../../../hack/lib/engines/storage.ts';
import { ensureVolSync } from '../../../hack/lib/engines/volsync.ts';
import { deleteIfExists, type RealNode } from '../../../hack/lib/real-node.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import {
  Api,
  cond,
  type RunningController,
  startController,
  startInstanceController,
} from '../../integration/operation/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART, tinyInstance } from '../../support/helm.ts';
import { runWithVolume } from './pods.ts';

const RELEASE = 'app';
const PVC = `${RELEASE}-data`;
const REPO_SECRET = 'restic-repo';
const WRONG_SECRET = 'restic-wrong-password';
/** A second claim of the release, and its own restic repository (claims must not share one). */
const EXTRA_PVC = `${RELEASE}-extra`;
const EXTRA_SECRET = 'restic-repo-extra';
/** The content's fingerprint: every file's path and sha256, hashed (`lost+found` is the filesystem's). */
const CHECKSUM =
  "cd /data && find . -type f ! -path './lost+found/*' | sort | xargs sha256sum | sha256sum | cut -d' ' -f1";

interface Pvc extends KubernetesObject {
  spec: { volumeName?: string };
  status?: { phase?: string };
}
interface MoverStatus {
  result?: string;
  logs?: string;
}
interface Replication extends KubernetesObject {
  spec?: { restic?: { retain?: unknown } };
  status?: { lastManualSync?: string; latestMoverStatus?: MoverStatus };
}
interface Pod extends KubernetesObject {
  status?: { phase?: string };
}

export function volsyncJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('VolSync backs up and restores a PVC with its real controller and restic mover', () => {
    let node: RealNode;
    let api: Api;
    let store: ObjectStore;
    let operations: RunningController | undefined;
    let instances: { stop(): Promise<void> } | undefined;
    let ns: string;
    let bucket: string;
    let prefix: string;
    let written = '';
    const password = randomBytes(16).toString('hex');

    const get = <T>(path: string) => api.client.request<T>({ method: 'GET', path });
    const pvcPath = () => `/api/v1/namespaces/${ns}/persistentvolumeclaims/${PVC}`;
    const finished = (name: string, timeoutMs = 300_000) =>
      api.finished(ns, name, timeoutMs).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await state()}`);
      });
    const expectSucceeded = (op: Operation) => {
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VolSyncSyncCompleted' });
    };
    const replication = (plural: string, name: string) =>
      get<Replication>(`/apis/volsync.backube/v1alpha1/namespaces/${ns}/${plural}/${name}`);
    const podLog = async (name: string) =>
      String(
        await api.client.request<unknown>({
          method: 'GET',
          path: `/api/v1/namespaces/${ns}/pods/${name}/log`,
        }),
      );

    /** What VolSync has in the namespace (and its controller's last words), for a failure message. */
    const state = async (): Promise<string> => {
      const line = (o: KubernetesObject & { status?: { phase?: string } }) =>
        `  ${o.kind ?? ''} ${o.metadata?.name} uid=${o.metadata?.uid?.slice(0, 8)} created=${o.metadata?.creationTimestamp}${o.metadata?.deletionTimestamp ? ` deleting since ${o.metadata.deletionTimestamp} finalizers=${o.metadata.finalizers?.join(',')}` : ''}${o.status?.phase ? ` ${o.status.phase}` : ''}`;
      const out: string[] = [];
      for (const [kind, path] of [
        ['ReplicationSource', `/apis/volsync.backube/v1alpha1/namespaces/${ns}/replicationsources`],
        ['Job', `/apis/batch/v1/namespaces/${ns}/jobs`],
        ['PersistentVolumeClaim', `/api/v1/namespaces/${ns}/persistentvolumeclaims`],
        ['Pod', `/api/v1/namespaces/${ns}/pods`],
      ] as const)
        for (const o of (await get<{ items: KubernetesObject[] }>(path)).items)
          out.push(line({ ...o, kind }));
      const pods = await get<{ items: KubernetesObject[] }>(`/api/v1/namespaces/volsync-system/pods`);
      for (const p of pods.items)
        out.push(
          String(
            await api.client.request<unknown>({
              method: 'GET',
              path: `/api/v1/namespaces/volsync-system/pods/${p.metadata?.name}/log`,
              query: { tailLines: '40' },
            }),
          ),
        );
      return out.join('\n');
    };

    /** Runs `script` in a busybox pod with the release's claim at /data; its log, trimmed. */
    const onVolume = async (script: string) =>
      (await runWithVolume(node, ns, PVC, `set -e; ${script}`)).trim();

    beforeAll(async () => {
      node = theNode();
      api = new Api(node.kc);
      const [objectStore, storage] = await Promise.all([ensureObjectStore(node), ensureStorage(node)]);
      store = objectStore;
      await ensureVolSync(node, say);
      operations = startController(node.kc, adapterFor);
      instances = startInstanceController(node.kc);
      ns = await createNamespace(node.kc, 'volsync');
      bucket = 'volsync';
      await store.bucket(bucket);
      prefix = `${ns}/${PVC}`;
      say(
        `VolSync journey in ${ns}; PVCs of StorageClass ${storage.storageClassName}; repository s3 ${bucket}/${prefix}`,
      );
      await helm(node.kubeconfigPath, [
        'install',
        RELEASE,
        TINY_CHART,
        '-n',
        ns,
        '--set',
        'persistence=true',
      ]);
      await api.client.request({
        method: 'POST',
        path: api.instancePath(ns),
        body: tinyInstance(RELEASE, ns, { backup: 'volsync', restore: 'volsync' }),
      });
      const secret = (name: string, resticPassword: string) => ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name },
        stringData: {
          RESTIC_REPOSITORY: `s3:${store.serviceUrl}/${bucket}/${prefix}`,
          RESTIC_PASSWORD: resticPassword,
          AWS_ACCESS_KEY_ID: store.accessKey,
          AWS_SECRET_ACCESS_KEY: store.secretKey,
          AWS_DEFAULT_REGION: store.region,
        },
      });
      for (const s of [secret(REPO_SECRET, password), secret(WRONG_SECRET, `not-${password}`)])
        await api.client.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/secrets`, body: s });
    });

    afterAll(async () => {
      await operations?.stop();
      await instances?.stop();
    });

    it('a pod writes known content to the release’s PVC', async () => {
      written = await onVolume(
        `mkdir -p /data/docs && echo 'known content' > /data/docs/hello.txt && head -c 1048576 /dev/urandom > /data/blob.bin && ${CHECKSUM}`,
      );
      expect(written).toMatch(/^[0-9a-f]{64}$/);
      say(`written: checksum ${written.slice(0, 16)}…`);
    });

    it('Backup (engine volsync) ⇒ Succeeded/VolSyncSyncCompleted, restic’s repository is in the bucket', async () => {
      await api.createOperation(ns, 'backup', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        // Direct: no CSI snapshot class in this journey (the snapshot journey has one).
        parameters: { repository: REPO_SECRET, copyMethod: 'Direct' },
      });
      const op = await finished('backup');
      expectSucceeded(op);
      const source = String(op.status?.outputs?.replicationSources ?? '');
      const rs = await replication('replicationsources', source);
      expect(rs.status?.lastManualSync).toBe('backup-1');
      // What the mover really did, as VolSync recorded it from the mover's log.
      expect(rs.status?.latestMoverStatus?.result).toBe('Successful');
      expect(rs.status?.latestMoverStatus?.logs).toMatch(/snapshot [0-9a-f]+ saved/);
      const keys = await store.list(bucket, `${prefix}/`);
      const rel = keys.map((k) => k.slice(prefix.length + 1));
      expect(rel).toContain('config');
      for (const dir of ['keys/', 'snapshots/', 'index/', 'data/'])
        expect(
          rel.some((k) => k.startsWith(dir)),
          `${dir} in ${rel.join(', ')}`,
        ).toBe(true);
      say(`backup: ReplicationSource ${source}; ${keys.length} restic objects under ${bucket}/${prefix}/`);
    });

    it('the claim is lost and the chart recreates it: a new, empty volume under the same name', async () => {
      const old = await get<Pvc>(pvcPath());
      await deleteIfExists(api.client, pvcPath());
      await eventually(
        'the old claim gone',
        async () => {
          try {
            await get<Pvc>(pvcPath());
            return false;
          } catch (err) {
            return isNotFound(err);
          }
        },
        120_000,
        500,
      );
      // helm upgrade recreates objects of the release that are missing (revision 2, same values).
      await helm(node.kubeconfigPath, ['upgrade', RELEASE, TINY_CHART, '-n', ns, '--reuse-values']);
      const fresh = await get<Pvc>(pvcPath());
      expect(fresh.metadata?.uid).not.toBe(old.metadata?.uid);
      const listing = await onVolume("ls -A /data | grep -v '^lost+found$' | wc -l");
      expect(listing).toBe('0');
      const bound = await get<Pvc>(pvcPath());
      expect(bound.spec.volumeName).toBeTruthy();
      expect(bound.spec.volumeName).not.toBe(old.spec.volumeName);
      say(`claim ${PVC} recreated empty on volume ${bound.spec.volumeName} (was ${old.spec.volumeName})`);
    });

    it('Restore (engine volsync) ⇒ Succeeded/VolSyncSyncCompleted, a pod reads the same checksum', async () => {
      await api.createOperation(ns, 'restore', {
        type: 'Restore',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: REPO_SECRET },
      });
      const op = await finished('restore');
      expectSucceeded(op);
      const destination = String(op.status?.outputs?.replicationDestinations ?? '');
      const rd = await replication('replicationdestinations', destination);
      expect(rd.status?.lastManualSync).toBe('restore-1');
      expect(rd.status?.latestMoverStatus?.result).toBe('Successful');
      const read = await onVolume(CHECKSUM);
      expect(read).toBe(written);
      say(`restore: ReplicationDestination ${destination}; checksum ${read.slice(0, 16)}… equal`);
    });

    it('a second Backup keeps the first: both restic snapshots stay in the repository (no retain asked)', async () => {
      const snapshots = async () =>
        (await store.list(bucket, `${prefix}/snapshots/`)).map((k) => k.slice(`${prefix}/snapshots/`.length));
      const first = await snapshots();
      expect(first).toHaveLength(1);
      await api.createOperation(ns, 'backup-2', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: REPO_SECRET, copyMethod: 'Direct' },
      });
      const op = await finished('backup-2');
      expectSucceeded(op);
      const rs = await replication(
        'replicationsources',
        String(op.status?.outputs?.replicationSources ?? ''),
      );
      // Without it VolSync runs `restic forget --keep-last 1` after the backup: the first would be gone.
      expect(rs.spec?.restic?.retain).toEqual({ last: 'unlimited' });
      expect(rs.status?.latestMoverStatus?.logs).toMatch(/snapshot [0-9a-f]+ saved/);
      const both = await snapshots();
      say(`second backup: restic snapshots in the repository: ${both.join(', ')}`);
      expect(both).toHaveLength(2);
      expect(both).toEqual(expect.arrayContaining(first));
    });

    it('a wrong restic password: the mover fails with restic’s error while VolSync retries; cancel stops it', async () => {
      await api.createOperation(ns, 'wrong-password', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: WRONG_SECRET, copyMethod: 'Direct' },
      });
      const failedPod = await eventually(
        'a failed mover pod',
        async () => {
          const pods = await get<{ items: Pod[] }>(`/api/v1/namespaces/${ns}/pods`);
          return pods.items.find(
            (p) => p.metadata?.name?.startsWith('volsync-src-wrong-password') && p.status?.phase === 'Failed',
          );
        },
        180_000,
        500,
      );
      const lines = (await podLog(failedPod.metadata?.name ?? '')).trim().split('\n');
      say(`wrong password: mover pod ${failedPod.metadata?.name} failed; its log: ${lines.join(' | ')}`);
      expect(lines[lines.length - 1]).toBe('ERROR: failure connecting to repository, incorrect password');
      const running = await api.getOperation(ns, 'wrong-password');
      expect(running.status?.phase).toBe('Running');
      expect(cond(running, 'Running')?.reason).toBe('VolSyncSyncInProgress');
      const source = String(running.status?.outputs?.replicationSources ?? '');
      expect(source).toMatch(/^wrong-password-/);
      await api.patchOperation(ns, 'wrong-password', { spec: { cancel: true } });
      const op = await finished('wrong-password', 120_000);
      expect(op.status?.phase).toBe('Cancelled');
      say('wrong password: Operation Cancelled');
      await eventually(
        'the ReplicationSource, its mover Job and pods gone',
        async () => {
          const [sources, jobs, pods] = await Promise.all([
            get<{ items: KubernetesObject[] }>(
              `/apis/volsync.backube/v1alpha1/namespaces/${ns}/replicationsources`,
            ),
            get<{ items: KubernetesObject[] }>(`/apis/batch/v1/namespaces/${ns}/jobs`),
            get<{ items: KubernetesObject[] }>(`/api/v1/namespaces/${ns}/pods`),
          ]);
          return (
            !sources.items.some((s) => s.metadata?.name === source) &&
            ![...jobs.items, ...pods.items].some((j) => j.metadata?.name?.startsWith(`volsync-src-${source}`))
          );
        },
        120_000,
        500,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await state()}`);
      });
      say(`wrong password: mover said "${lines[lines.length - 1]}"; cancelled, ${source} and its Job gone`);
    });

    it('two claims: one shared repository is refused; a repository per claim restores each claim its own data', async () => {
      // A second claim of the release, with a restic repository of its own (another path in the bucket).
      await api.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
        body: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: EXTRA_PVC, labels: { 'app.kubernetes.io/instance': RELEASE } },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      });
      const repo = await get<KubernetesObject & { data: Record<string, string> }>(
        `/api/v1/namespaces/${ns}/secrets/${REPO_SECRET}`,
      );
      const url = Buffer.from(repo.data.RESTIC_REPOSITORY ?? '', 'base64').toString();
      await api.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/secrets`,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: EXTRA_SECRET },
          data: { ...repo.data, RESTIC_REPOSITORY: Buffer.from(`${url}-${EXTRA_PVC}`).toString('base64') },
        },
      });
      const write = (pvc: string, text: string) =>
        runWithVolume(node, ns, pvc, `set -e; echo '${text}' > /data/which.txt; cat /data/which.txt`);
      const read = async (pvc: string) =>
        (await runWithVolume(node, ns, pvc, 'set -e; cat /data/which.txt')).trim();
      await write(PVC, 'the data claim');
      await write(EXTRA_PVC, 'the extra claim');

      await api.createOperation(ns, 'shared', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: REPO_SECRET, copyMethod: 'Direct' },
      });
      const shared = await finished('shared', 120_000);
      expect(shared.status?.phase).toBe('Failed');
      expect(cond(shared, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters' });
      expect(cond(shared, 'Accepted')?.message).toContain(
        `the release has 2 claims (${PVC}, ${EXTRA_PVC}) and parameters.repository names one restic repository Secret (${REPO_SECRET}) for all`,
      );
      say(`two claims, one repository: ${cond(shared, 'Accepted')?.message}`);

      const perClaim = { [PVC]: REPO_SECRET, [EXTRA_PVC]: EXTRA_SECRET };
      await api.createOperation(ns, 'backup-claims', {
        type: 'Backup',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: perClaim, copyMethod: 'Direct' },
      });
      expectSucceeded(await finished('backup-claims'));
      await write(PVC, 'changed');
      await write(EXTRA_PVC, 'changed');
      await api.createOperation(ns, 'restore-claims', {
        type: 'Restore',
        engine: 'volsync',
        targetRef: { name: RELEASE },
        parameters: { repository: perClaim },
      });
      expectSucceeded(await finished('restore-claims'));
      const after = [await read(PVC), await read(EXTRA_PVC)];
      say(
        `two claims, a repository each: after the restore ${PVC} says "${after[0]}", ${EXTRA_PVC} "${after[1]}"`,
      );
      expect(after).toEqual(['the data claim', 'the extra claim']);
    });
  });
}
