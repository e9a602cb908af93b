// Velero for real (docs/engines.md "velero"): the server, its node-agent and the AWS plugin built here
// from pinned modules, backing up to MinIO over S3 and restoring volumes with File System Backup
// (kopia) from PVCs of the local-path provisioner. The Operation controller runs in this process with
// the built-in templates and the real velero adapter. Every claim is checked by its effect: the files
// in the bucket, the objects and the volume's bytes back after they were deleted, the backup and its
// files gone after a cancel.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureStorage } from '../../../hack/lib/engines/storage.ts';
import { ensureVelero, type Velero } from '../../../hack/lib/engines/velero.ts';
import { deleteIfExists, type RealNode } from '../../../hack/lib/real-node.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { isNotFound } from '../../../operator/src/runtime/index.ts';
import { Api, cond, type RunningController, startController } from '../../integration/operation/support.ts';
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

    beforeAll(async () => {
      node = theNode();
      const t0 = Date.now();
      await ensureStorage(node);
      velero = await ensureVelero(node);
      say(`velero: storage, object store and Velero ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      api = new Api(node.kc);
      controller = startController(node.kc, adapterFor, { veleroNamespace: velero.namespace });
      ns = await createNamespace(node.kc, 'velero');
      await helm(node.kubeconfigPath, [
        'install',
        RELEASE,
        TINY_CHART,
        '-n',
        ns,
        '--wait',
        '--timeout',
        '3m',
        '--set',
        'persistence=true',
        '--set',
        'writer.enabled=true',
        '--set-string',
        `message=${message}`,
      ]);
      const instance = tinyInstance(RELEASE, ns, {
        backup: 'velero',
        runcommand: 'job',
        restore: 'velero',
        quiesce: 'exec',
      });
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
  });
}
