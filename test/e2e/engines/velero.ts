// Velero for real (docs/engines.md "velero"): the server, its node-agent and the AWS plugin built here
// from pinned modules, backing up to MinIO over S3 and restoring volumes with File System Backup
// (kopia) from PVCs of the local-path provisioner. The Operation controller runs in this process with
// the built-in templates and the real velero adapter. Every claim is checked by its effect: the files
// in the bucket, the objects and the volume's bytes back after they were deleted, the backup and its
// files gone after a cancel, and after a CronOperation's retention let the Backup go.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { FakeClock, isNotFound } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureStorage } from '../../../hack/lib/engines/storage.ts';
import { ensureVelero, type Velero } from '../../../hack/lib/engines/velero.ts';
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
import { startSchedulers } from '../../integration/schedule/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART, tinyInstance } from '../../support/helm.ts';
import { runWithVolume } from './pods.ts';

const RELEASE = 'shop';
const PVC = `${RELEASE}-data`;
const CONFIGMAP = `${RELEASE}-config`;
const WRITER = `${RELEASE}-writer`;
/** Prints what the journey compares: the message, the data's checksum, whether the quiesce hook ran. */
const READ =
  'echo "message $(cat /data/message)"; echo "blob $(sha256sum /data/blob | cut -d" " -f1)"; [ -s /data/quiesced ] && echo quiesced || echo not-quiesced';

interface Velero1Backup {
  metadata?: { name?: string; uid?: string };
  status?: { phase?: string; errors?: number; warnings?: number };
}

export function veleroJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('Velero backs up and restores for real', () => {
    let node: RealNode;
    let velero: Velero;
    let api: Api;
    let controller: RunningController;
    let ns: string;
    let before: string;
    let backupName = '';
    const message = `hello from ${randomBytes(4).toString('hex')}`;
    /** How the release is installed: the chart's PVC and writer, the run's message; waits for it. */
    const installed = () => [
      '--wait',
      '--timeout',
      '3m',
      '--set',
      'persistence=true',
      '--set',
      'writer.enabled=true',
      '--set-string',
      `message=${message}`,
    ];

    beforeAll(async () => {
      node = theNode();
      const t0 = Date.now();
      await ensureStorage(node);
      velero = await ensureVelero(node);
      say(`velero: storage, object store and Velero ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      api = new Api(node.kc);
      controller = startController(node.kc, adapterFor, { veleroNamespace: velero.namespace });
      ns = await createNamespace(node.kc, 'velero');
      await helm(node.kubeconfigPath, ['install', RELEASE, TINY_CHART, '-n', ns, ...installed()]);
      const instance = tinyInstance(RELEASE, ns, {
        backup: 'velero',
        runcommand: 'job',
        restore: 'velero',
        quiesce: 'exec',
      });
      // spec.release.namespace left out (the instance's own by default): a clone restores the instance's
      // spec as it is, and one naming the source namespace would be ReleaseNamespaceForbidden there.
      delete (instance.spec as { release: { namespace?: string } }).release.namespace;
      await api.client.request({ method: 'POST', path: api.instancePath(ns), body: instance });
      await api.setReady(ns, RELEASE, true);
      before = await runWithVolume(node, ns, PVC, READ);
      say(`velero: release ${ns}/${RELEASE} installed; its volume holds ${before.replace(/\n/g, ' | ')}`);
    }, 600_000);

    afterAll(async () => {
      await controller?.stop();
    });

    const finished = (name: string, timeoutMs = 240_000) => api.finished(ns, name, timeoutMs);
    const veleroPath = (plural: string, name = '') =>
      `/apis/velero.io/v1/namespaces/${velero.namespace}/${plural}${name ? `/${name}` : ''}`;
    const getBackup = (name: string) =>
      api.client.request<Velero1Backup>({ method: 'GET', path: veleroPath('backups', name) });
    const backupOp = (name: string) =>
      api.createOperation(ns, name, {
        type: 'Backup',
        engine: 'velero',
        targetRef: { name: RELEASE },
        parameters: { defaultVolumesToFsBackup: true, quiesce: 'exec' },
      });
    const status = (op: Operation) => JSON.stringify(op.status?.conditions);

    it('Backup: VeleroBackupCompleted, and the backup and its kopia repository are files in the bucket', async () => {
      await backupOp('backup-1');
      const op = await finished('backup-1');
      expect(op.status?.phase, status(op)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VeleroBackupCompleted' });
      backupName = String(op.status?.outputs?.backupName ?? '');
      expect(backupName).not.toBe('');
      say(`velero: ${cond(op, 'Succeeded')?.message}`);

      const keys = await velero.store.list(velero.bucket, `backups/${backupName}/`);
      say(
        `velero: bucket ${velero.bucket} holds ${keys.length} files for ${backupName}: ${keys.map((k) => k.split('/').pop()).join(', ')}`,
      );
      for (const f of [
        `${backupName}.tar.gz`,
        'velero-backup.json',
        `${backupName}-podvolumebackups.json.gz`,
      ])
        expect(keys).toContain(`backups/${backupName}/${f}`);
      // The volume's bytes went to a kopia repository for the namespace, in the same bucket.
      const repo = await velero.store.list(velero.bucket, `kopia/${ns}/`);
      expect(repo).toContain(`kopia/${ns}/kopia.repository`);
      expect(repo.filter((k) => /^kopia\/[^/]+\/p[0-9a-f]/.test(k)).length, repo.join('\n')).toBeGreaterThan(
        0,
      );

      // Velero backed the volume up with the node-agent, after the quiesce hook ran in the pod.
      const pvbs = await api.client.request<{
        items: { status?: { phase?: string; progress?: { totalBytes?: number } } }[];
      }>({
        method: 'GET',
        path: veleroPath('podvolumebackups'),
        query: { labelSelector: `velero.io/backup-name=${backupName}` },
      });
      expect(pvbs.items.map((p) => p.status?.phase)).toEqual(['Completed']);
      expect(pvbs.items[0]?.status?.progress?.totalBytes ?? 0).toBeGreaterThanOrEqual(1024 * 1024);
      // The node-agent sees the kubelet's pod directory as a slave of the host's shared mount (the
      // kubelet makes its root directory rshared), so volumes mounted after it started reach it.
      const [agent] = node.podProcesses((argv) => argv.includes('node-agent') && argv.includes('server'));
      const hostPods = readFileSync(`/proc/${agent}/mountinfo`, 'utf8')
        .split('\n')
        .find((l) => l.split(' ')[4] === '/host_pods');
      expect(hostPods, `mountinfo of node-agent pid ${agent}`).toMatch(/ master:\d+ /);
    });

    it('delete the app, Restore without backupName: the latest backup comes back, ConfigMap and volume bytes alike', async () => {
      expect(backupName).not.toBe('');
      const base = `/api/v1/namespaces/${ns}`;
      await api.client.request({
        method: 'DELETE',
        path: `/apis/apps/v1/namespaces/${ns}/deployments/${WRITER}`,
        body: { propagationPolicy: 'Foreground' },
      });
      await deleteIfExists(api.client, `${base}/configmaps/${CONFIGMAP}`);
      await deleteIfExists(api.client, `${base}/persistentvolumeclaims/${PVC}`);
      await eventually(
        'the app objects gone',
        async () => {
          const gone = async (path: string) =>
            api.client.request({ method: 'GET', path }).then(
              () => false,
              () => true,
            );
          const pods = await api.client.request<{ items: unknown[] }>({
            method: 'GET',
            path: `${base}/pods`,
            query: { labelSelector: `app.kubernetes.io/instance=${RELEASE}` },
          });
          return (
            pods.items.length === 0 &&
            (await gone(`${base}/persistentvolumeclaims/${PVC}`)) &&
            (await gone(`${base}/configmaps/${CONFIGMAP}`)) &&
            (await gone(`/apis/apps/v1/namespaces/${ns}/deployments/${WRITER}`))
          );
        },
        120_000,
        500,
      );

      await api.createOperation(ns, 'restore-1', {
        type: 'Restore',
        engine: 'velero',
        targetRef: { name: RELEASE },
      });
      const op = await finished('restore-1');
      expect(op.status?.phase, status(op)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VeleroRestoreCompleted' });
      // Without backupName, the template took the latest Succeeded velero Backup of the instance.
      expect(op.status?.outputs?.backupName).toBe(backupName);
      say(`velero: ${cond(op, 'Succeeded')?.message}`);

      const cm = await api.client.request<{ data?: Record<string, string> }>({
        method: 'GET',
        path: `${base}/configmaps/${CONFIGMAP}`,
      });
      expect(cm.data).toEqual({ message });
      // The restored pod waited in Velero's restore-wait init container until the node-agent had put the
      // volume's files back; the same bytes are there, and the marker the quiesce hook wrote before the backup.
      const pods = await api.client.request<{ items: { spec?: { initContainers?: { name: string }[] } }[] }>({
        method: 'GET',
        path: `${base}/pods`,
        query: { labelSelector: `app.kubernetes.io/instance=${RELEASE}` },
      });
      expect(pods.items.flatMap((p) => (p.spec?.initContainers ?? []).map((c) => c.name))).toContain(
        'restore-wait',
      );
      const after = await runWithVolume(node, ns, PVC, READ);
      expect(after).toBe(before.replace('not-quiesced', 'quiesced'));
      expect(after).toContain(`message ${message}`);
    });

    it('cancel of a running Backup: Velero cannot stop it; it is deleted with its files once it finished', async () => {
      // The chart's quiesce hook holds the backup InProgress while /data/hold exists.
      await runWithVolume(node, ns, PVC, 'touch /data/hold');
      await backupOp('backup-cancel');
      const childName = await eventually(
        'the Velero Backup InProgress',
        async () => {
          const op = await api.getOperation(ns, 'backup-cancel');
          const name = op.status?.childRef?.name;
          return name && (await getBackup(name)).status?.phase === 'InProgress' ? name : undefined;
        },
        120_000,
        500,
      );
      await api.patchOperation(ns, 'backup-cancel', { spec: { cancel: true } });
      const waiting = await eventually(
        'the Operation saying why it waits',
        async () => {
          const op = await api.getOperation(ns, 'backup-cancel');
          const c = cond(op, 'Running');
          return c?.message?.includes('cannot stop a Backup in flight') ? op : undefined;
        },
        60_000,
        250,
      );
      expect(waiting.status?.phase).toBe('Running');
      say(`velero: cancelling: ${cond(waiting, 'Running')?.message}`);
      // What Velero answers a DeleteBackupRequest for a Backup in flight (why the adapter waits).
      const probe = `${childName}-probe`;
      await api.client.request({
        method: 'POST',
        path: veleroPath('deletebackuprequests'),
        body: {
          apiVersion: 'velero.io/v1',
          kind: 'DeleteBackupRequest',
          metadata: { name: probe },
          spec: { backupName: childName },
        },
      });
      const refused = await eventually(
        'Velero to answer the probe DeleteBackupRequest',
        async () => {
          const dbr = await api.client.request<{ status?: { phase?: string; errors?: string[] } }>({
            method: 'GET',
            path: veleroPath('deletebackuprequests', probe),
          });
          return dbr.status?.phase === 'Processed' ? dbr.status : undefined;
        },
        60_000,
        250,
      );
      expect(refused.errors).toEqual(['backup deletion failed: backup is still in progress']);
      expect((await getBackup(childName)).status?.phase).toBe('InProgress');

      await runWithVolume(node, ns, PVC, 'rm /data/hold');
      const op = await finished('backup-cancel');
      expect(op.status?.phase, status(op)).toBe('Cancelled');
      expect(cond(op, 'Succeeded')?.message).toBe(
        `spec.cancel: Backup ${velero.namespace}/${childName} deleted`,
      );
      say(`velero: ${cond(op, 'Succeeded')?.message}`);
      await eventually(
        `Backup ${childName} deleted`,
        () =>
          getBackup(childName).then(
            () => false,
            (err: unknown) => {
              if (isNotFound(err)) return true;
              throw err;
            },
          ),
        60_000,
        500,
      );
      expect(await velero.store.list(velero.bucket, `backups/${childName}/`)).toEqual([]);
      await deleteIfExists(api.client, veleroPath('deletebackuprequests', probe));
      // The first backup is untouched.
      expect((await getBackup(backupName)).status?.phase).toBe('Completed');
      expect(await velero.store.list(velero.bucket, `backups/${backupName}/`)).toContain(
        `backups/${backupName}/velero-backup.json`,
      );
    });

    /** Runs the instance controller for `fn`, which reads Ready from the (restored) release record. */
    const withInstanceController = async <T>(fn: () => Promise<T>): Promise<T> => {
      const instances = startInstanceController(node.kc);
      try {
        return await fn();
      } finally {
        await instances.stop();
      }
    };
    const readyReason = async (namespace: string) => {
      const i = await api.client.request<{
        status?: { conditions?: { type: string; status: string; reason: string }[] };
      }>({ method: 'GET', path: api.instancePath(namespace, RELEASE) });
      const r = i.status?.conditions?.find((c) => c.type === 'Ready');
      return r?.status === 'True' ? r.reason : undefined;
    };
    it("clone: another namespace gets the release's objects, the instance and the volume, not Helm's record; helm takes the clone over", async () => {
      expect(backupName).not.toBe('');
      const to = await createNamespace(node.kc, 'velero-clone');
      // As the admission webhook stamps it on an Operation it admitted (no webhook runs in this process):
      // the operator runs a clone only for one the webhook judged (it checks the verb clone at the source).
      await api.createOperation(
        to,
        'clone',
        { type: 'Restore', engine: 'velero', targetRef: { name: RELEASE }, source: { namespace: ns } },
        { 'ops.vworkspace.io/created-by': 'alice' },
      );
      const op = await api.finished(to, 'clone', 240_000);
      expect(op.status?.phase, status(op)).toBe('Succeeded');
      const restore = await api.client.request<{ spec: Record<string, unknown> }>({
        method: 'GET',
        path: veleroPath('restores', String(op.status?.outputs?.restoreName)),
      });
      expect(restore.spec).toMatchObject({ includedNamespaces: [ns], namespaceMapping: { [ns]: to } });
      // The objects and the bytes are there...
      const cm = await api.client.request<{ data?: Record<string, string> }>({
        method: 'GET',
        path: `/api/v1/namespaces/${to}/configmaps/${CONFIGMAP}`,
      });
      expect(cm.data).toEqual({ message });
      expect(await runWithVolume(node, to, PVC, READ)).toBe(before.replace('not-quiesced', 'quiesced'));
      // ...but not Helm's record, which names the source namespace (an upgrade of it would render there):
      // the instance says so until helm takes the clone over.
      await expect(helm(node.kubeconfigPath, ['status', RELEASE, '-n', to])).rejects.toThrow(/not found/);
      await withInstanceController(async () => {
        let seen: unknown;
        const missing = await eventually(
          'the clone reports ReleaseNotFound',
          async () => {
            const i = await api.client.request<
              KubernetesObject & { status?: { conditions?: { type: string; reason: string }[] } }
            >({ method: 'GET', path: api.instancePath(to, RELEASE) });
            seen = { metadata: { ...i.metadata, managedFields: undefined }, status: i.status };
            return i.status?.conditions?.find((c) => c.type === 'Ready' && c.reason === 'ReleaseNotFound');
          },
          60_000,
          500,
        ).catch((err: Error) => {
          throw new Error(`${err.message}: ${JSON.stringify(seen)}`);
        });
        expect(missing).toBeDefined();
        await helm(node.kubeconfigPath, [
          'upgrade',
          '--install',
          RELEASE,
          TINY_CHART,
          '-n',
          to,
          '--take-ownership',
          ...installed(),
        ]);
        expect(await eventually('the clone Ready', () => readyReason(to), 60_000, 500)).toBe(
          'ReleaseDeployed',
        );
      });
      const st = JSON.parse(
        (await helm(node.kubeconfigPath, ['status', RELEASE, '-n', to, '-o', 'json'])).stdout,
      );
      expect(st).toMatchObject({ namespace: to, info: { status: 'deployed' } });
      expect(await runWithVolume(node, to, PVC, READ)).toBe(before.replace('not-quiesced', 'quiesced'));
    });

    it("retention: a CronOperation's keepLast files a DeleteBackupRequest, and Velero removes the older Backup's files from the bucket", async () => {
      expect(backupName).not.toBe('');
      const gone = (name: string) =>
        getBackup(name).then(
          () => false,
          (err: unknown) => {
            if (isNotFound(err)) return true;
            throw err;
          },
        );
      // backup-1 as if the schedule had made it (its engine labels it so), and a newer, small one of the
      // same instance made by the schedule too: the configmaps only, so it takes seconds.
      const labels = {
        'ops.vworkspace.io/cron-operation': 'nightly',
        'ops.vworkspace.io/operation-namespace': ns,
      };
      await api.client.request({
        method: 'PATCH',
        path: veleroPath('backups', backupName),
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels } },
      });
      const newer = `retention-${randomBytes(3).toString('hex')}`;
      await api.client.request({
        method: 'POST',
        path: veleroPath('backups'),
        body: {
          apiVersion: 'velero.io/v1',
          kind: 'Backup',
          metadata: { name: newer, labels: { ...labels, 'ops.vworkspace.io/instance': RELEASE } },
          spec: { includedNamespaces: [ns], includedResources: ['configmaps'], snapshotVolumes: false },
        },
      });
      await eventually(
        `Backup ${newer} Completed`,
        async () => (await getBackup(newer)).status?.phase === 'Completed',
        120_000,
        500,
      );
      await api.client.request({
        method: 'POST',
        path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${ns}/cronoperations`,
        body: {
          apiVersion: 'ops.vworkspace.io/v1alpha1',
          kind: 'CronOperation',
          metadata: { name: 'nightly' },
          spec: {
            schedule: '0 3 1 1 *',
            retention: { keepLast: 1 },
            operationTemplate: { spec: { type: 'Backup', engine: 'velero', targetRef: { name: RELEASE } } },
          },
        },
      });
      const schedulers = startSchedulers(node.kc, new FakeClock(Date.now()), {
        veleroNamespace: velero.namespace,
      });
      try {
        await eventually(`Backup ${backupName} deleted by Velero`, () => gone(backupName), 120_000, 500);
      } finally {
        await schedulers.stop();
      }
      expect(await velero.store.list(velero.bucket, `backups/${backupName}/`)).toEqual([]);
      expect((await getBackup(newer)).status?.phase).toBe('Completed');
      expect(await velero.store.list(velero.bucket, `backups/${newer}/`)).toContain(
        `backups/${newer}/velero-backup.json`,
      );
      say(
        `velero: retention keepLast 1 kept ${newer}; Velero deleted ${backupName} and its files (DeleteBackupRequest ${backupName}-retention)`,
      );
    });
  });
}
