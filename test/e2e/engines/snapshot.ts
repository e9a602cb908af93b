// CSI snapshots on a real node (docs/engines.md "snapshot — Backup"): the snapshot engine's Backup
// is carried out by upstream's snapshot-controller and csi-snapshotter, and the restore by upstream's
// csi-provisioner and the kubelet's CSI volume manager, all real, against our small hostpath driver
// (hack/csi-hostpath: the stand-in for a storage vendor's driver, since upstream's is not on the module
// proxy here). Every claim is checked by its effect: the bytes a pod wrote, the tar the driver cut on
// the host, the bytes a pod reads back from the restored volume. The Operation controller runs in this
// process with the built-in templates and the real adapters.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NONROOT } from '../../../hack/images/contents.ts';
import { type CsiInstall, installCsi, volumeSnapshotClass } from '../../../hack/lib/engines/csi.ts';
import { apply, type RealNode } from '../../../hack/lib/real-node.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { Api, cond, type RunningController, startController } from '../../integration/operation/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';

const SNAP_API = '/apis/snapshot.storage.k8s.io/v1';
const RELEASE = 'data';
const PVC = `${RELEASE}-data`; // the tiny chart's PVC
const NUMBERS = 20_000;

interface Pvc extends KubernetesObject {
  spec: { volumeName?: string; dataSource?: unknown };
  status?: { phase?: string };
}
interface Pv extends KubernetesObject {
  spec: { csi?: { driver: string; volumeHandle: string } };
}
interface VolumeSnapshot extends KubernetesObject {
  spec: { volumeSnapshotClassName?: string };
  status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string; error?: { message?: string } };
}
interface VolumeSnapshotContent extends KubernetesObject {
  spec: { driver: string; deletionPolicy: string; source: { volumeHandle?: string } };
  status?: { readyToUse?: boolean; snapshotHandle?: string };
}
interface Pod extends KubernetesObject {
  status?: { phase?: string };
}

/** A VolumeSnapshotClass naming a CSI driver nobody serves. */
const ABSENT_CLASS = 'vws-csi-absent-driver';
const ABSENT_DRIVER = 'absent.csi.vworkspace.io';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The CSI snapshot journey on the node `theNode()` returns once the shared beforeAll has started it. */
export function snapshotJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('CSI snapshots on a real node', () => {
    let node: RealNode;
    let csi: CsiInstall;
    let api: Api;
    let controller: RunningController;
    let ns: string;
    // What the first pod writes: a line unique to this run and a larger file in a subdirectory.
    const note = `written before the snapshot ${randomBytes(8).toString('hex')}`;
    const numbers = Array.from({ length: NUMBERS }, (_, i) => `${i + 1}\n`).join('');
    const expectedSums = `${sha256(`${note}\n`)}  note\n${sha256(numbers)}  sub/numbers`;
    // Owners and modes travel in the snapshot too (the pods run as nonroot, umask 022).
    const expectedStat = `note ${NONROOT} 644\nsub ${NONROOT} 755\nsub/numbers ${NONROOT} 644`;
    const inspect = 'cd /data && sha256sum note sub/numbers && stat -c "%n %u %a" note sub sub/numbers';
    let sourceHandle = '';
    let snapshotName = '';
    let snapshotHandle = '';

    const get = <T>(path: string) => api.client.request<T>({ method: 'GET', path });
    const pvc = (name: string) => get<Pvc>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`);
    const boundPv = async (claim: string) => {
      const c = await eventually(
        `PVC ${claim} Bound`,
        async () => ((await pvc(claim)).status?.phase === 'Bound' ? pvc(claim) : undefined),
        120_000,
        500,
      );
      return get<Pv>(`/api/v1/persistentvolumes/${c.spec.volumeName}`);
    };
    const finished = (name: string, timeoutMs = 180_000) => api.finished(ns, name, timeoutMs);
    const report = async (op?: Operation) => `${JSON.stringify(op?.status)}\n${await csi.logs()}`;

    /** Runs `script` in a busybox pod with `claim` at /data; returns its log once it Succeeded. */
    const runPod = async (name: string, claim: string, script: string): Promise<string> => {
      await api.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/pods`,
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: {
            restartPolicy: 'Never',
            securityContext: {
              runAsNonRoot: true,
              runAsUser: NONROOT,
              runAsGroup: NONROOT,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'sh',
                image: node.images.busybox,
                command: ['sh', '-c', script],
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                volumeMounts: [{ name: 'data', mountPath: '/data' }],
              },
            ],
            volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
          },
        },
      });
      const pod = await eventually(
        `pod ${name} finished`,
        async () => {
          const p = await get<Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);
          return ['Succeeded', 'Failed'].includes(p.status?.phase ?? '') ? p : undefined;
        },
        180_000,
        500,
      );
      const log = String(await get<unknown>(`/api/v1/namespaces/${ns}/pods/${name}/log`)).trim();
      expect(pod.status?.phase, log).toBe('Succeeded');
      return log;
    };

    /** Deletes a finished pod of the journey and waits until it is gone. */
    const removePod = async (name: string) => {
      const path = `/api/v1/namespaces/${ns}/pods/${name}`;
      await api.client.request({ method: 'DELETE', path });
      await eventually(
        `pod ${name} gone`,
        async () => !(await get<Pod>(path).catch(() => undefined)),
        60_000,
        250,
      );
    };

    beforeAll(async () => {
      node = theNode();
      csi = await installCsi(node, say);
      api = new Api(node.kc);
      controller = startController(node.kc, adapterFor);
      ns = await createNamespace(node.kc, 'snap');
      // The release's PVC (labelled app.kubernetes.io/instance, as the snapshot engine finds PVCs) on
      // the driver's StorageClass, installed by the real helm CLI.
      await helm(node.kubeconfigPath, [
        'install',
        RELEASE,
        TINY_CHART,
        '-n',
        ns,
        '--set',
        'persistence=true',
        '--set',
        `storageClassName=${csi.storageClass}`,
      ]);
      await api.createInstance(ns, RELEASE, { backup: 'snapshot' }, true);
      // The class the absent-driver case names, made long before it is used: the snapshot-controller reads
      // classes from its cache, and one created just before its VolumeSnapshot may not be there yet (the
      // snapshot then fails "not found", which is the other case's outcome, not this one's).
      await apply(node.client, volumeSnapshotClass(ABSENT_CLASS, ABSENT_DRIVER, 'Retain'));
    }, 600_000);

    afterAll(async () => {
      await controller?.stop();
    });

    it("csi-provisioner provisions the release's PVC through the driver; a pod writes known content to it", async () => {
      const pv = await boundPv(PVC);
      expect(pv.spec.csi?.driver).toBe(csi.driver);
      expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe(csi.driver);
      sourceHandle = pv.spec.csi?.volumeHandle ?? '';

      say('snapshot: a pod writes the known content');
      const log = await runPod(
        'writer',
        PVC,
        `cd /data && echo '${note}' > note && mkdir sub && seq 1 ${NUMBERS} > sub/numbers && ${inspect}`,
      );
      expect(log).toBe(`${expectedSums}\n${expectedStat}`);
      // The kubelet mounted the driver's directory into the pod: the bytes are on the host.
      expect(readFileSync(join(csi.dataDir, 'volumes', sourceHandle, 'note'), 'utf8')).toBe(`${note}\n`);
    });

    it('Backup on the snapshot engine: Succeeded, the VolumeSnapshot readyToUse, its content cut by csi-snapshotter', async () => {
      await api.createOperation(ns, 'backup', {
        type: 'Backup',
        engine: 'snapshot',
        targetRef: { name: RELEASE },
      });
      const op = await finished('backup');
      expect(op.status?.phase, await report(op)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VolumeSnapshotReadyToUse' });
      snapshotName = String(op.status?.outputs?.[`snapshot.${PVC}`] ?? '');
      expect(snapshotName).not.toBe('');
      expect(op.status?.outputs?.snapshotNames).toBe(snapshotName);

      const vs = await get<VolumeSnapshot>(`${SNAP_API}/namespaces/${ns}/volumesnapshots/${snapshotName}`);
      expect(vs.status?.readyToUse).toBe(true);
      // No class was named: the snapshot-controller chose the driver's default class.
      expect(vs.spec.volumeSnapshotClassName).toBe(csi.snapshotClass);
      const content = await get<VolumeSnapshotContent>(
        `${SNAP_API}/volumesnapshotcontents/${vs.status?.boundVolumeSnapshotContentName}`,
      );
      expect(content.spec).toMatchObject({ driver: csi.driver, source: { volumeHandle: sourceHandle } });
      expect(content.status?.readyToUse).toBe(true);
      snapshotHandle = content.status?.snapshotHandle ?? '';
      // csi-snapshotter called CreateSnapshot: the driver's tar of the volume is on the host, recorded
      // as a snapshot of the PVC's volume.
      expect(snapshotHandle).toMatch(/^snap-[0-9a-f]{20}$/);
      expect(statSync(join(csi.dataDir, 'snapshots', `${snapshotHandle}.tar`)).size).toBeGreaterThan(
        numbers.length,
      );
      const record = JSON.parse(
        readFileSync(join(csi.dataDir, 'snapshots', `${snapshotHandle}.json`), 'utf8'),
      );
      expect(record).toMatchObject({ id: snapshotHandle, sourceVolumeId: sourceHandle });
    });

    it('after the volume changed, a PVC restored from the VolumeSnapshot holds the content as it was', async () => {
      say('snapshot: the source volume changes after the snapshot');
      const changed = await runPod(
        'changer',
        PVC,
        'cd /data && echo changed > note && rm sub/numbers && sha256sum note',
      );
      expect(changed).toBe(`${sha256('changed\n')}  note`);

      await api.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
        body: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'restored' },
          spec: {
            storageClassName: csi.storageClass,
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Gi' } },
            dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshotName },
          },
        },
      });
      const pv = await boundPv('restored');
      const restoredHandle = pv.spec.csi?.volumeHandle ?? '';
      expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe(csi.driver);
      expect(restoredHandle).not.toBe(sourceHandle);
      // csi-provisioner asked for a volume from the snapshot (CreateVolume's content source).
      const record = JSON.parse(readFileSync(join(csi.dataDir, 'volumes', `${restoredHandle}.json`), 'utf8'));
      expect(record).toMatchObject({ id: restoredHandle, fromSnapshot: snapshotHandle });

      say('snapshot: a pod reads the restored volume');
      expect(await runPod('reader', 'restored', inspect)).toBe(`${expectedSums}\n${expectedStat}`);
    });

    it('deleting the restored PVC: csi-provisioner deletes its volume through the driver', async () => {
      const pv = await boundPv('restored');
      const dir = join(csi.dataDir, 'volumes', pv.spec.csi?.volumeHandle ?? '');
      expect(existsSync(dir)).toBe(true);
      await api.client.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/pods/reader` });
      await api.client.request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${ns}/persistentvolumeclaims/restored`,
      });
      await eventually(
        'the restored PV gone',
        async () => !(await get<Pv>(`/api/v1/persistentvolumes/${pv.metadata?.name}`).catch(() => undefined)),
        120_000,
        500,
      );
      expect(existsSync(dir)).toBe(false);
    });

    it("Restore Operation (engine snapshot): the release's claim is recreated from the newest snapshot Backup, its writer scaled down and back, the data as it was", async () => {
      // A workload of the release mounts the claim (the chart's writer Deployment), so the restore has to
      // stop it first; the instance advertises the snapshot restore.
      await helm(node.kubeconfigPath, [
        'upgrade',
        RELEASE,
        TINY_CHART,
        '-n',
        ns,
        '--reuse-values',
        '--set',
        'writer.enabled=true',
        '--set',
        `writer.image=${node.images.busybox}`,
        '--wait',
        '--timeout',
        '3m',
      ]);
      await api.annotateInstance(ns, RELEASE, { 'ops.vworkspace.io/restore': 'snapshot' });
      // Finished pods that name the claim keep Kubernetes from deleting it (the restore would say so).
      for (const done of ['writer', 'changer']) await removePod(done);
      const old = await pvc(PVC);
      say('snapshot: Restore Operation on the changed volume, its writer running');
      await api.createOperation(ns, 'restore', {
        type: 'Restore',
        engine: 'snapshot',
        targetRef: { name: RELEASE },
      });
      const op = await finished('restore', 240_000);
      expect(op.status?.phase, await report(op)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VolumeSnapshotRestored' });
      say(`snapshot: ${cond(op, 'Succeeded')?.message}`);
      // The newest complete snapshot Backup of the instance: the one the Backup Operation took.
      expect(op.status?.outputs?.[`snapshot.${PVC}`]).toBe(snapshotName);
      const now = await pvc(PVC);
      expect(now.metadata?.uid).not.toBe(old.metadata?.uid);
      expect(now.spec.dataSource).toEqual({
        apiGroup: 'snapshot.storage.k8s.io',
        kind: 'VolumeSnapshot',
        name: snapshotName,
      });
      expect(now.metadata?.ownerReferences).toBeUndefined();
      expect(now.metadata?.annotations?.['meta.helm.sh/release-name']).toBe(RELEASE);
      const writer = await get<
        KubernetesObject & { spec: { replicas: number }; status?: { readyReplicas?: number } }
      >(`/apis/apps/v1/namespaces/${ns}/deployments/${RELEASE}-writer`);
      expect([writer.spec.replicas, writer.status?.readyReplicas]).toEqual([1, 1]);
      // The driver made the new volume from the snapshot's tar; a pod reads what was there before the change.
      const pv = await boundPv(PVC);
      const record = JSON.parse(
        readFileSync(join(csi.dataDir, 'volumes', `${pv.spec.csi?.volumeHandle}.json`), 'utf8'),
      );
      expect(record).toMatchObject({ fromSnapshot: snapshotHandle });
      expect(await runPod('after-restore', PVC, inspect)).toBe(`${expectedSums}\n${expectedStat}`);
      await removePod('after-restore');
    });

    it("a VolumeSnapshotClass that does not exist: Failed/VolumeSnapshotFailed with the snapshot-controller's error", async () => {
      await api.createOperation(ns, 'no-class', {
        type: 'Backup',
        engine: 'snapshot',
        targetRef: { name: RELEASE },
        parameters: { volumeSnapshotClassName: 'no-such-class' },
      });
      const op = await finished('no-class');
      expect(op.status?.phase, await report(op)).toBe('Failed');
      const c = cond(op, 'Succeeded');
      expect(c).toMatchObject({ status: 'False', reason: 'VolumeSnapshotFailed' });
      // The message is the real controller's, passed through with what to check.
      expect(c?.message).toMatch(
        /^VolumeSnapshot \S+ failed: Failed to get snapshot class with error volumesnapshotclass\.snapshot\.storage\.k8s\.io "no-such-class" not found;/,
      );
      expect(c?.message).toContain('check the VolumeSnapshotClass and the CSI driver');
    });

    it('a VolumeSnapshotClass naming a driver nobody serves: the content waits for a sidecar that never comes; the deadline ends the Operation', async () => {
      await api.createOperation(ns, 'no-driver', {
        type: 'Backup',
        engine: 'snapshot',
        targetRef: { name: RELEASE },
        parameters: { volumeSnapshotClassName: ABSENT_CLASS },
        policy: { activeDeadlineSeconds: 20 },
      });
      // The real snapshot-controller makes the content for the absent driver; no csi-snapshotter serves
      // that driver, so nothing ever cuts it.
      const vs = await eventually(
        'the VolumeSnapshot',
        async () => {
          const op = await api.getOperation(ns, 'no-driver');
          const name = String(op.status?.outputs?.snapshotNames ?? '');
          return name
            ? get<VolumeSnapshot>(`${SNAP_API}/namespaces/${ns}/volumesnapshots/${name}`)
            : undefined;
        },
        60_000,
        500,
      );
      const content = await eventually(
        'its VolumeSnapshotContent',
        () =>
          get<VolumeSnapshotContent>(`${SNAP_API}/volumesnapshotcontents/snapcontent-${vs.metadata?.uid}`),
        60_000,
        500,
      );
      expect(content.spec).toMatchObject({ driver: ABSENT_DRIVER, deletionPolicy: 'Retain' });
      expect(content.status?.snapshotHandle).toBeUndefined();
      // Still within its 20 s unless the machine stalled: then it says what it waits for.
      const running = await api.getOperation(ns, 'no-driver');
      if (running.status?.phase === 'Running')
        expect(cond(running, 'Succeeded')?.message).toContain(
          `0/1 VolumeSnapshot(s) readyToUse; waiting for ${vs.metadata?.name}`,
        );

      const op = await finished('no-driver');
      expect(op.status?.phase, await report(op)).toBe('Failed');
      expect(cond(op, 'Succeeded')?.reason, await report(op)).toBe('DeadlineExceeded');
      // The deadline cancelled the child: the VolumeSnapshot is deleted (its finalizers released by the
      // snapshot-controller), and the content stays, as deletionPolicy Retain says.
      await eventually(
        'the VolumeSnapshot deleted',
        async () =>
          !(await get<VolumeSnapshot>(
            `${SNAP_API}/namespaces/${ns}/volumesnapshots/${vs.metadata?.name}`,
          ).catch(() => undefined)),
        60_000,
        500,
      );
      expect(
        (await get<VolumeSnapshotContent>(`${SNAP_API}/volumesnapshotcontents/${content.metadata?.name}`))
          .spec.driver,
      ).toBe(ABSENT_DRIVER);
    });
  });
}
