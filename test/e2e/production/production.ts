// Production shape (issue 22, docs/production.md): a real PostgreSQL through a real disaster, on the
// real node (real-node.test.ts runs it last), with every Operation reconciled by the operator pod that
// OLM installed from the catalog image, on the RBAC OLM granted it and the profiles bound as
// docs/security/rbac.md says. Nothing in this process reconciles: it acts as the platform team (installs, namespace RBAC) and as the application's owner
// (helm install, Operations), and checks each step by what the database answers.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresImage } from '../../../hack/images/apps/postgres.ts';
import { pushBuilt } from '../../../hack/images/build.ts';
import { Database, type DbState, pvcOf, showState } from '../../../hack/lib/apps/postgres.ts';
import { STORAGE_CLASS as CSI_STORAGE_CLASS } from '../../../hack/lib/engines/csi.ts';
import { POSTGRES_VERSIONS, RUNNER_SERVICE_ACCOUNT } from '../../../hack/lib/engines/helm.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { eventually } from '../../support/eventually.ts';
import { keepInTestResults } from '../../support/kept.ts';
import { runWithVolume } from '../engines/pods.ts';
import { refusal } from '../support/app.ts';
import {
  ANALYZE_TEMPLATE,
  cleanupRestored,
  prepareDayTwo,
  RESTIC_SECRET,
  runOperation,
  scaleDatabase,
  serveSnapshot,
} from './day-two.ts';
import {
  allowProbeImage,
  allowResticProbeImage,
  allowSnapshotProbeImage,
  copyRowsProbe,
  damageBackupArchive,
  databasePassword,
  instanceWithDrill,
  noCopyLeft,
  noScratchLeft,
  probeSecretFor,
  resticRowsProbe,
  rowsProbe,
} from './drill.ts';
import { Journey } from './journey.ts';
import { installPlatform, type Platform, prepareNamespace } from './platform.ts';
import { auditCheck, installSafeUpgradeTemplate, SAFE_UPGRADE_TEMPLATE } from './safe-upgrade.ts';

const RELEASE = 'db';
const NAMESPACE = 'shop';
const CLONE = 'shop-copy';

/** The production journey on the node `theNode()` returns once the shared beforeAll has started it. */
export function productionJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('production shape: PostgreSQL through a real disaster, every Operation by the OLM-installed operator', () => {
    let node: RealNode | undefined;
    let platform: Platform | undefined;
    let workdir = '';
    let failed = false;
    let j: Journey;
    let db: Database;
    let before: DbState;

    beforeAll(async () => {
      workdir = await mkdtemp(join(tmpdir(), 'vws-e2e-production-'));
      node = theNode();
      platform = await installPlatform(node, workdir, say);
      j = new Journey(node, platform, say);
      const image = postgresImage(node.registryPrefix);
      pushBuilt(image, workdir);
      say(`PostgreSQL image ${image.ref}`);
      j.postgresImage = image.ref;
    }, 1_800_000);

    afterAll(async () => {
      await platform?.stop();
      if (!workdir) return;
      if (failed) say(`work directory kept: ${await keepInTestResults(workdir)}`);
      else await rm(workdir, { recursive: true, force: true });
    });

    const step = (name: string, fn: () => Promise<void>, timeoutMs = 600_000) =>
      it(
        name,
        async () => {
          if (failed) throw new Error('not run: an earlier step of this journey failed');
          try {
            await fn();
          } catch (err) {
            failed = true;
            const report = await j?.report().catch((e: Error) => `(no report: ${e.message})`);
            if (err instanceof Error) {
              err.message = `${err.message}\n${report}`;
              throw err;
            }
            throw new Error(`${String(err)}\n${report}`);
          }
        },
        timeoutMs,
      );

    step(
      `a: PostgreSQL from Debian's packages, installed by helm (chart ${POSTGRES_VERSIONS.a.version}), loaded by pgbench`,
      async () => {
        await prepareNamespace(j.node, NAMESPACE);
        await j.installRelease(NAMESPACE, RELEASE, CSI_STORAGE_CLASS);
        db = j.database(NAMESPACE, RELEASE);
        await db.ready();
        const version = await db.psql('SELECT version()');
        say(`a: ${version}`);
        expect(version).toMatch(/^PostgreSQL 15\.\d+ \(Debian 15\.\d+-\d/);
        const out = await db.load(1, 200);
        say(
          `a: pgbench: ${out
            .split('\n')
            .filter((l) => /tps|transactions actually processed|done in/.test(l))
            .join(' | ')}`,
        );
        before = await db.state();
        say(`a: ${showState(before)}`);
        expect(before).toMatchObject({
          accounts: 100_000,
          branches: 1,
          tellers: 10,
          history: 400,
          schema: 1,
        });
        const status = await j.helmStatus(NAMESPACE, RELEASE);
        say(`a: helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        expect(status).toMatchObject({
          revision: 1,
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.a.version}`,
        });
        await j.createInstance(NAMESPACE, RELEASE);
        await j.instanceReady(NAMESPACE, RELEASE, 1);
      },
    );

    step(
      `f: Upgrade to ${POSTGRES_VERSIONS.b.version}: helm runs the chart's migration hook on the real release; schema 2, the same rows`,
      async () => {
        const op = await runOperation(j, NAMESPACE, 'upgrade-to-b', {
          type: 'Upgrade',
          engine: 'helm',
          targetRef: { name: RELEASE },
          parameters: { version: POSTGRES_VERSIONS.b.version },
        });
        await j.expectSucceeded(op, 'HelmUpgradeSucceeded');
        const status = await j.helmStatus(NAMESPACE, RELEASE);
        say(`f: helm status: ${JSON.stringify(status)}`);
        expect(status).toEqual({
          revision: 2,
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.b.version}`,
        });
        const now = await db.state();
        say(`f: ${showState(now)}`);
        expect(now).toEqual({ ...before, schema: 2 });
        expect(
          await db.psql(
            "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'accounts_audit'",
          ),
        ).toBe('id,aid,delta,at,reason');
        before = now;
        await j.instanceReady(NAMESPACE, RELEASE, 2);
      },
    );

    step(
      `f: a failing Upgrade (${POSTGRES_VERSIONS.refused.version}: its hook refuses) is rolled back: Failed, the previous chart deployed, the same rows`,
      async () => {
        const op = await runOperation(j, NAMESPACE, 'upgrade-refused', {
          type: 'Upgrade',
          engine: 'helm',
          targetRef: { name: RELEASE },
          parameters: { version: POSTGRES_VERSIONS.refused.version },
        });
        await j.expectReconciledByThePod(op, 'Failed', 'HelmUpgradeFailed');
        const message = op.status?.conditions?.find((c) => c.type === 'Succeeded')?.message ?? '';
        expect(message).toContain('rolled back');
        const status = await j.helmStatus(NAMESPACE, RELEASE);
        say(`f: helm status after the failed upgrade: ${JSON.stringify(status)}`);
        expect(status).toMatchObject({
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.b.version}`,
        });
        expect(await db.state()).toEqual(before);
      },
    );

    step(
      `f: a cancelled Upgrade (${POSTGRES_VERSIONS.slow.version}: cancelled while its hook runs) is rolled back: Cancelled, the previous chart deployed, never pending`,
      async () => {
        await j.api.createOperation(NAMESPACE, 'upgrade-cancelled', {
          type: 'Upgrade',
          engine: 'helm',
          targetRef: { name: RELEASE },
          parameters: { version: POSTGRES_VERSIONS.slow.version, timeout: '3m' },
        });
        await j.hookRunning(NAMESPACE, RELEASE);
        say(
          `f: the ${POSTGRES_VERSIONS.slow.version} hook runs (helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}); cancelling`,
        );
        await j.api.patchOperation(NAMESPACE, 'upgrade-cancelled', { spec: { cancel: true } });
        const op = await j.api.finished(NAMESPACE, 'upgrade-cancelled', 600_000);
        const c = op.status?.conditions?.find((x) => x.type === 'Succeeded');
        say(`f: ${op.status?.phase} ${c?.reason}: ${c?.message}`);
        await j.expectReconciledByThePod(op, 'Cancelled', 'Cancelled');
        expect(c?.message).toMatch(/deployed \(revision \d+/);
        const status = await j.helmStatus(NAMESPACE, RELEASE);
        say(`f: helm status after the cancelled upgrade: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        expect(status).toMatchObject({
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.b.version}`,
        });
        // helm's pre-upgrade hook Job of the cancelled revision would migrate the database when it wakes:
        // the operator stopped it before it ended the Operation, and says so (ADR 0038).
        expect(c?.message).toMatch(/the operator stopped the chart's hook Job \S+/);
        const leftover = await j.runningHooks(NAMESPACE, RELEASE);
        say(`f: hook Jobs still running after the cancel: ${leftover.join(', ') || 'none'}`);
        expect(leftover).toEqual([]);
        expect(await db.state()).toEqual(before);
      },
    );

    step(
      'RunCommand (runCommand.job): a Job of the allowlisted busybox reaches the database through its Service',
      async () => {
        const op = await runOperation(j, NAMESPACE, 'reach-db', {
          type: 'RunCommand',
          engine: 'job',
          targetRef: { name: RELEASE },
          parameters: {
            image: 'docker.io/library/busybox:1.37.0',
            command: [
              'sh',
              '-c',
              // busybox nc has no -z: connect, send nothing (stdin is empty), exit 0 once the server closes.
              `nc -w 5 ${RELEASE}-postgres 5432 </dev/null && echo "${RELEASE}-postgres:5432 accepts connections"`,
            ],
          },
        });
        await j.expectSucceeded(op, 'JobSucceeded');
        expect(op.status?.conditions?.find((c) => c.type === 'Succeeded')?.message).toContain(
          '5432 accepts connections',
        );
      },
    );

    step('Runbook (runbook.workflow): an Argo Workflow runs VACUUM ANALYZE in the database', async () => {
      await prepareDayTwo(j, NAMESPACE, RELEASE);
      // pgbench -i analyzed the tables once; the Workflow's VACUUM ANALYZE is the next one.
      const analyzed = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'pgbench_accounts'";
      const count = Number(await db.psql(analyzed));
      const op = await runOperation(j, NAMESPACE, 'analyze', {
        type: 'Runbook',
        engine: 'workflow',
        targetRef: { name: RELEASE },
        parameters: {
          workflowTemplateRef: { name: ANALYZE_TEMPLATE },
          serviceAccountName: RUNNER_SERVICE_ACCOUNT,
        },
      });
      await j.expectSucceeded(op, 'WorkflowSucceeded');
      const after = Number(await db.psql(analyzed));
      say(`runbook: pg_stat_user_tables.analyze_count of pgbench_accounts ${count} → ${after}`);
      expect(after).toBe(count + 1);
    });

    step(
      "Migration (migration.helmHookJob): the release's own pre-upgrade hook runs again: nothing left to migrate",
      async () => {
        const op = await runOperation(j, NAMESPACE, 'migrate', {
          type: 'Migration',
          engine: 'helmHookJob',
          targetRef: { name: RELEASE },
        });
        await j.expectSucceeded(op, 'HelmHookJobSucceeded');
        expect(op.status?.conditions?.find((c) => c.type === 'Succeeded')?.message).toContain('schema 2');
        expect(await db.state()).toEqual(before);
      },
    );

    step(
      'VolSync (backup.volsync, restore.volsync): a restic backup, a row added, the database stopped and its data directory lost, restored: the rows of the backup',
      async () => {
        const backup = await runOperation(j, NAMESPACE, 'restic-backup', {
          type: 'Backup',
          engine: 'volsync',
          targetRef: { name: RELEASE },
          // Snapshot: the mover copies a CSI snapshot of the volume, not the files a running server writes.
          parameters: { repository: RESTIC_SECRET, copyMethod: 'Snapshot' },
        });
        await j.expectSucceeded(backup, 'VolSyncSyncCompleted');
        await db.psql(
          "INSERT INTO accounts_audit (aid, delta, reason) VALUES (1, 5, 'after the restic backup')",
        );
        expect(await db.psql('SELECT count(*) FROM accounts_audit')).toBe('1');
        await scaleDatabase(j, NAMESPACE, RELEASE, 0);
        // The disk is lost: the data directory is gone from the volume.
        await runWithVolume(j.node, NAMESPACE, pvcOf(RELEASE), 'rm -rf /data/pgdata && ls -A /data');
        const restore = await runOperation(j, NAMESPACE, 'restic-restore', {
          type: 'Restore',
          engine: 'volsync',
          targetRef: { name: RELEASE },
          parameters: { repository: RESTIC_SECRET },
          policy: { requireReady: false },
        });
        await j.expectSucceeded(restore, 'VolSyncSyncCompleted');
        await scaleDatabase(j, NAMESPACE, RELEASE, 1);
        await db.ready();
        expect(await db.psql('SELECT count(*) FROM accounts_audit')).toBe('0');
        const now = await db.state();
        say(`volsync: restored: ${showState(now)}`);
        expect(now).toEqual(before);
      },
    );

    step(
      'VolSync drill (verify.volsync): the restic backup restored into a copy beside the database, PostgreSQL started on the copy: the rows and checksum of the backup; the copy is gone',
      async () => {
        await allowResticProbeImage(j, j.postgresImage);
        const started = Date.now();
        await eventually('the restic drill to be admitted (the catalog entry loaded)', () =>
          j.api
            .createOperation(NAMESPACE, 'restic-drill', {
              type: 'Verify',
              engine: 'volsync',
              targetRef: { name: RELEASE },
              parameters: {
                repository: RESTIC_SECRET,
                image: j.postgresImage,
                command: resticRowsProbe(pvcOf(RELEASE)),
              },
            })
            .then(() => true),
        );
        const drill = await j.api.finished(NAMESPACE, 'restic-drill', 600_000);
        const outputs = (drill.status?.outputs ?? {}) as Record<string, string>;
        const c = drill.status?.conditions?.find((x) => x.type === 'Succeeded');
        say(
          `volsync drill: ${drill.status?.phase} ${c?.reason}: ${c?.message} (step ${Math.round((Date.now() - started) / 1000)}s)`,
        );
        await j.expectSucceeded(drill, 'VerifyPassed');
        expect(outputs.verifiedBackup).toBe('restic-backup');
        expect(outputs.probeOutput).toBe(`${before.accounts} ${before.accountsMd5}`);
        expect(Number(outputs.rtoSeconds)).toBeGreaterThan(0);
        const instance = await instanceWithDrill(j, NAMESPACE, RELEASE, 'restic-drill');
        expect(instance.lastVerifiedBackup).toMatchObject({
          backup: 'restic-backup',
          operation: 'restic-drill',
        });
        await noCopyLeft(j, NAMESPACE, 'restic-drill');
      },
    );

    step(
      'a: a CronOperation takes a velero backup; its quiesce hook runs CHECKPOINT in the database first',
      async () => {
        const checkpoints = await db.checkpointsRequested();
        const op = await j.cronRun(NAMESPACE, 'velero-nightly', {
          type: 'Backup',
          engine: 'velero',
          targetRef: { name: RELEASE },
          parameters: { quiesce: 'exec', defaultVolumesToFsBackup: true },
        });
        j.expectSucceeded(op, 'VeleroBackupCompleted');
        const backup = String(op.status?.outputs?.backupName ?? '');
        await j.expectVeleroBackupOfTheVolume(backup, NAMESPACE);
        const after = await db.checkpointsRequested();
        say(`a: pg_stat_bgwriter.checkpoints_req ${checkpoints} → ${after} (the quiesce hook's CHECKPOINT)`);
        expect(after).toBeGreaterThan(checkpoints);
        j.veleroBackup = backup;
      },
    );

    step(
      '4: a CronOperation with successfulHistoryLimit 1 takes 4 snapshot backups: its history keeps 1 Operation, all 4 VolumeSnapshots remain and each restores its own rows',
      async () => {
        const snapshots: string[] = [];
        for (let k = 1; k <= 4; k++) {
          // Each backup holds one more audit row than the one before: k rows in backup k.
          await db.psql(
            `INSERT INTO accounts_audit (aid, delta, reason) VALUES (${k}, ${k}, 'before snapshot backup ${k}')`,
          );
          const op = await j.cronRun(
            NAMESPACE,
            'snapshots',
            { type: 'Backup', engine: 'snapshot', targetRef: { name: RELEASE } },
            { successfulHistoryLimit: 1 },
          );
          await j.expectSucceeded(op, 'VolumeSnapshotReadyToUse');
          const mine = (await j.volumeSnapshots(NAMESPACE)).filter((s) => s.operation === op.metadata?.name);
          expect(mine.map((s) => s.pvc)).toEqual([pvcOf(RELEASE)]);
          snapshots.push(mine[0]?.name ?? '');
        }
        const left = await j.cronOperations(NAMESPACE, 'snapshots');
        const all = await j.volumeSnapshots(NAMESPACE);
        say(
          `4: Operations of the CronOperation left: ${left.map((o) => o.metadata?.name).join(', ')}; VolumeSnapshots: ${all.map((s) => `${s.name} (readyToUse ${s.readyToUse}, owners ${s.owners})`).join(', ')}`,
        );
        expect(left).toHaveLength(1);
        for (const name of snapshots)
          expect(all.find((s) => s.name === name)).toMatchObject({ readyToUse: true, owners: 0 });
        const restored = await Promise.all(
          snapshots.map((s) => serveSnapshot(j, NAMESPACE, s, CSI_STORAGE_CLASS)),
        );
        try {
          const rows = await Promise.all(
            restored.map(async (pod) => {
              const copy = new Database(j.node.kc, j.node.client, NAMESPACE, RELEASE, pod);
              await copy.ready();
              return Number(await copy.psql('SELECT count(*) FROM accounts_audit'));
            }),
          );
          say(`4: audit rows in the servers restored from the 4 snapshots: ${rows.join(', ')}`);
          expect(rows).toEqual([1, 2, 3, 4]);
        } finally {
          for (const pod of restored) await cleanupRestored(j, NAMESPACE, pod);
        }
        await db.psql('DELETE FROM accounts_audit');
        expect(await db.state()).toEqual(before);
      },
    );

    step(
      'w: snapshot drill (snapshot-verify): the newest snapshot backup restored into new claims beside the instance, PostgreSQL started on the copy: the rows and checksum of the backup; a probe that fails fails the drill; the source snapshots unchanged, no copy left',
      async () => {
        const snapshotVersions = async () =>
          Object.fromEntries(
            (
              await j.node.client.request<{
                items: { metadata: { name: string; resourceVersion?: string } }[];
              }>({
                method: 'GET',
                path: `/apis/snapshot.storage.k8s.io/v1/namespaces/${NAMESPACE}/volumesnapshots`,
              })
            ).items.map((v) => [v.metadata.name, v.metadata.resourceVersion]),
          );
        // The claims not being deleted: the drill deletes its copies when it ends; the volume goes once the
        // probe's pod no longer holds it (pvc-protection), which is Kubernetes' part, not the drill's.
        const claims = async () =>
          (
            await j.node.client.request<{
              items: { metadata: { name: string; deletionTimestamp?: string } }[];
            }>({
              method: 'GET',
              path: `/api/v1/namespaces/${NAMESPACE}/persistentvolumeclaims`,
            })
          ).items
            .filter((c) => !c.metadata.deletionTimestamp)
            .map((c) => c.metadata.name)
            .sort();
        const snapshotsBefore = await snapshotVersions();
        const claimsBefore = await claims();
        await allowSnapshotProbeImage(j, j.postgresImage);
        const data = `$VWS_RESTORED_DIR/${pvcOf(RELEASE)}/pgdata`;
        const drill = (name: string, command: string[]) =>
          eventually(`Verify ${name} to be admitted (the catalog entry loaded)`, () =>
            j.api
              .createOperation(NAMESPACE, name, {
                type: 'Verify',
                engine: 'snapshot',
                targetRef: { name: RELEASE },
                parameters: { image: j.postgresImage, command },
              })
              .then(() => true),
          ).then(() => j.api.finished(NAMESPACE, name, 600_000));
        const passed = await drill('snapdrill', copyRowsProbe('$VWS_RESTORED_DIR', pvcOf(RELEASE)));
        const outputs = (passed.status?.outputs ?? {}) as Record<string, string>;
        say(
          `w: ${passed.status?.phase} ${passed.status?.conditions?.find((c) => c.type === 'Succeeded')?.message}; probe: ${outputs.probeOutput}; copies: ${outputs.restoredClaims}`,
        );
        await j.expectReconciledByThePod(passed, 'Succeeded', 'VerifyPassed');
        expect(outputs.probeOutput).toBe(`${before.accounts} ${before.accountsMd5}`);
        expect(Number(outputs.rtoSeconds)).toBeGreaterThan(0);
        const instance = await instanceWithDrill(j, NAMESPACE, RELEASE, 'snapdrill');
        expect(instance.lastVerifiedBackup).toMatchObject({ operation: 'snapdrill' });

        const failed = await drill('snapdrill-failing', ['sh', '-c', `test -s ${data}/no-such-file`]);
        const c = failed.status?.conditions?.find((x) => x.type === 'Succeeded');
        say(`w: ${failed.status?.phase} ${c?.reason}: ${c?.message}`);
        await j.expectReconciledByThePod(failed, 'Failed', 'VerifyProbeFailed');
        // Data is sacred: the drill only read the snapshots; its copies are gone.
        let left: string[] = [];
        await eventually("the drills' copies deleted", async () => {
          left = await claims();
          return JSON.stringify(left) === JSON.stringify(claimsBefore);
        }).catch(() => undefined);
        say(`w: claims after the drills: ${left.join(', ')} (before: ${claimsBefore.join(', ')})`);
        expect(left).toEqual(claimsBefore);
        expect(await snapshotVersions()).toEqual(snapshotsBefore);
      },
    );

    step(
      'e: snapshot Restore: the volume replaced by the newest snapshot backup; the database starts on it with its rows',
      async () => {
        // The instance advertises restore: velero and snapshot: snapshot; the snapshot Restore template takes
        // either `restore: snapshot` or `snapshot: snapshot`, so nothing is switched for this step.
        await db.psql(
          "INSERT INTO accounts_audit (aid, delta, reason) VALUES (99, 99, 'after the last snapshot')",
        );
        const op = await runOperation(j, NAMESPACE, 'snapshot-restore', {
          type: 'Restore',
          engine: 'snapshot',
          targetRef: { name: RELEASE },
        });
        await j.expectSucceeded(op, 'VolumeSnapshotRestored');
        await db.ready();
        // The newest snapshot backup held 4 audit rows (the retention step); the row added after it is gone.
        expect(await db.psql('SELECT count(*), coalesce(max(aid), 0) FROM accounts_audit')).toBe('4|4');
        await db.psql('DELETE FROM accounts_audit');
        const now = await db.state();
        say(`e: restored from the snapshot: ${showState(now)}`);
        expect(now).toEqual(before);
      },
    );

    step(
      'b: disaster: the whole namespace is deleted, the release record, the instance and its Operations with it',
      async () => {
        const gone = await j.deleteNamespace(NAMESPACE);
        say(`b: namespace ${NAMESPACE} deleted with ${gone}`);
        expect(await j.helmStatusText(NAMESPACE, RELEASE).catch((e: Error) => e.message)).toMatch(
          /release: not found/,
        );
      },
    );

    step(
      'c: the namespace recreated and the Restore asked for with spec.source: the same rows and checksums, helm knows the release, the instance is back and Ready, the next Upgrade succeeds',
      async () => {
        // The platform re-applies the namespace's RBAC (it is not the application's backup), then the owner asks.
        await prepareNamespace(j.node, NAMESPACE);
        const op = await runOperation(j, NAMESPACE, 'bring-back', {
          type: 'Restore',
          engine: 'velero',
          targetRef: { name: RELEASE },
          source: { namespace: NAMESPACE },
        });
        await j.expectSucceeded(op, 'VeleroRestoreCompleted');
        expect(op.status?.outputs?.backupName).toBe(j.veleroBackup);
        await db.ready();
        const now = await db.state();
        say(`c: restored: ${showState(now)}`);
        expect(now).toEqual(before);
        say(`c: helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        const status = await j.helmStatus(NAMESPACE, RELEASE);
        expect(status).toMatchObject({
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.b.version}`,
        });
        const ready = await j.instanceReady(NAMESPACE, RELEASE, status.revision);
        say(`c: ApplicationInstance ${NAMESPACE}/${RELEASE}: Ready ${ready.reason}`);
        const upgrade = await runOperation(j, NAMESPACE, 'upgrade-after-restore', {
          type: 'Upgrade',
          engine: 'helm',
          targetRef: { name: RELEASE },
          parameters: { version: POSTGRES_VERSIONS.c.version },
        });
        await j.expectSucceeded(upgrade, 'HelmUpgradeSucceeded');
        expect(await j.helmStatus(NAMESPACE, RELEASE)).toEqual({
          revision: status.revision + 1,
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.c.version}`,
        });
        const upgraded = await db.state();
        say(`c: after the upgrade: ${showState(upgraded)}`);
        expect(upgraded).toEqual({ ...before, schema: 3 });
      },
    );

    step(
      "d: a clone into another namespace for a user who may read the source's backups; one who may not is refused",
      async () => {
        await prepareNamespace(j.node, CLONE);
        for (const user of ['alice', 'bob']) await j.grantRestore(CLONE, RELEASE, user);
        await j.grantClone(NAMESPACE, RELEASE, 'alice');
        const clone = {
          type: 'Restore' as const,
          engine: 'velero' as const,
          targetRef: { name: RELEASE },
          source: { namespace: NAMESPACE },
        };
        const refused = await refusal(j.createOperationAs('bob', CLONE, 'clone-by-bob', clone));
        say(`d: bob (no clone on ${NAMESPACE}/${RELEASE}): ${refused}`);
        expect(refused).toMatch(/spec\.source\.namespace/);
        await j.createOperationAs('alice', CLONE, 'clone-by-alice', clone);
        const op = await j.api.finished(CLONE, 'clone-by-alice', 600_000);
        await j.expectSucceeded(op, 'VeleroRestoreCompleted');
        const copy = j.database(CLONE, RELEASE);
        await copy.ready();
        const cloned = await copy.state();
        say(`d: the clone in ${CLONE}: ${showState(cloned)}`);
        // The backup's rows (schema 2: the source has since been upgraded).
        expect(cloned).toEqual(before);
        // Helm's record stays behind (it names the source namespace: an upgrade of it would render there,
        // ADR 0035); the instance says so until `helm upgrade --install --take-ownership` adopts the copy.
        await expect(j.helmStatusText(CLONE, RELEASE)).rejects.toThrow(/not found/);
        const ready = await j.instanceReadyReason(CLONE, RELEASE, 'ReleaseNotFound');
        say(`d: the clone's instance: Ready=${ready.status}/${ready.reason}: ${ready.message}`);
      },
    );

    step(
      'v: restore drills: the velero backup restored into a scratch namespace passes a psql row count and checksum; with its files damaged in the bucket the drill fails with what Velero said; no scratch namespace is left',
      async () => {
        await allowProbeImage(j, j.postgresImage);
        // The password reaches the probe from a Secret (parameters.probeSecret), never through a spec.
        const probeSecret = await probeSecretFor(j, NAMESPACE, RELEASE);
        const probe = rowsProbe(RELEASE);
        const drill = (name: string) =>
          eventually(`Verify ${name} to be admitted (the catalog entry loaded)`, () =>
            j.api
              .createOperation(NAMESPACE, name, {
                type: 'Verify',
                engine: 'velero',
                targetRef: { name: RELEASE },
                parameters: {
                  backupName: j.veleroBackup,
                  image: j.postgresImage,
                  command: probe,
                  probeSecret,
                },
              })
              .then(() => true),
          ).then(() => j.api.finished(NAMESPACE, name, 600_000));
        const passed = await drill('drill');
        const outputs = (passed.status?.outputs ?? {}) as Record<string, string>;
        say(
          `v: ${passed.status?.phase} ${passed.status?.conditions?.find((c) => c.type === 'Succeeded')?.message}`,
        );
        await j.expectSucceeded(passed, 'VerifyPassed');
        const job = await j.node.client.request<{
          spec: { template: { spec: { containers: { envFrom?: unknown }[] } } };
        }>({ method: 'GET', path: `/apis/batch/v1/namespaces/${NAMESPACE}/jobs/${outputs.probeJobName}` });
        const envFrom = job.spec.template.spec.containers[0]?.envFrom;
        say(`v: probe Job ${outputs.probeJobName}: envFrom ${JSON.stringify(envFrom)}`);
        expect(envFrom).toEqual([{ secretRef: { name: probeSecret } }]);
        const password = await databasePassword(j, NAMESPACE, RELEASE);
        expect(JSON.stringify(passed)).not.toContain(password);
        expect(outputs.verifiedBackup).toBe(j.veleroBackup);
        expect(outputs.probeOutput).toBe(`${before.accounts} ${before.accountsMd5}`);
        expect(Number(outputs.rtoSeconds)).toBeGreaterThan(0);
        const instance = await instanceWithDrill(j, NAMESPACE, RELEASE, 'drill');
        say(`v: the instance: lastVerifiedBackup ${JSON.stringify(instance.lastVerifiedBackup)}`);
        expect(instance.lastVerifiedBackup).toMatchObject({ backup: j.veleroBackup, operation: 'drill' });

        const damaged = await damageBackupArchive(j, j.veleroBackup);
        say(`v: overwrote ${damaged} in the bucket with bytes that are no gzip`);
        const failed = await drill('drill-damaged');
        const c = failed.status?.conditions?.find((x) => x.type === 'Succeeded');
        say(`v: ${failed.status?.phase} ${c?.reason}: ${c?.message}`);
        await j.expectReconciledByThePod(failed, 'Failed', 'VerifyRestoreFailed');
        const after = await instanceWithDrill(j, NAMESPACE, RELEASE, 'drill-damaged');
        expect(after.lastDrill).toMatchObject({ result: 'Failed', reason: 'VerifyRestoreFailed' });
        expect(after.lastVerifiedBackup).toMatchObject({ operation: 'drill' });
        await noScratchLeft(j, NAMESPACE);
      },
    );

    step(
      `s: Safe Upgrades (safeUpgrade.helm): ${POSTGRES_VERSIONS.breaking.version}, whose migration renames a column the post-check reads, ends on the previous revision with the previous rows, restored from its pre-upgrade snapshot; ${POSTGRES_VERSIONS.good.version} keeps the new revision`,
      async () => {
        await installSafeUpgradeTemplate(
          j,
          auditCheck(RELEASE, await databasePassword(j, NAMESPACE, RELEASE)),
        );
        const columns = () =>
          db.psql(
            "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'accounts_audit'",
          );
        const audit = () =>
          db.psql("SELECT count(*) || ' audit rows, last: ' || coalesce(max(aid), 0) FROM accounts_audit");
        await db.psql(
          "INSERT INTO accounts_audit (aid, delta, reason) VALUES (7, 7, 'before the safe upgrade')",
        );
        const start = await db.state();
        const startAudit = await audit();
        const startColumns = await columns();
        const started = await j.helmStatus(NAMESPACE, RELEASE);
        say(`s: before: psql: accounts_audit (${startColumns}), ${startAudit}; ${showState(start)}`);
        say(`s: before: helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        const spec = (version: string) => ({
          type: 'Upgrade' as const,
          engine: 'helm' as const,
          template: SAFE_UPGRADE_TEMPLATE,
          targetRef: { name: RELEASE },
          parameters: { version },
        });
        await eventually(
          `Safe Upgrade to ${POSTGRES_VERSIONS.breaking.version} to be admitted (the catalog entry loaded)`,
          () =>
            j.api
              .createOperation(NAMESPACE, 'safe-breaking', spec(POSTGRES_VERSIONS.breaking.version))
              .then(() => true),
        );
        // While the operator rolls the release back, the database still runs the broken schema: show it.
        const rolling = await eventually(
          'the post-check to fail and the rollback to start',
          async () => {
            const o = await j.api.getOperation(NAMESPACE, 'safe-breaking');
            return o.status?.rollback || ['Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? '')
              ? o
              : undefined;
          },
          600_000,
          1_000,
        );
        say(`s: post-check failed: status.rollback ${JSON.stringify(rolling.status?.rollback)}`);
        say(
          `s: after the migration, before the restore: psql: accounts_audit (${await columns().catch((e: Error) => e.message)})`,
        );
        const op = await j.api.finished(NAMESPACE, 'safe-breaking', 600_000);
        const c = op.status?.conditions?.find((x) => x.type === 'Succeeded');
        say(`s: ${op.status?.phase} ${c?.reason}: ${c?.message}`);
        say(`s: status.rollback: ${JSON.stringify(op.status?.rollback)}`);
        await j.expectReconciledByThePod(op, 'Failed', 'PostCheckFailed');
        expect(c?.message).toContain('column "reason" does not exist');
        expect(op.status?.rollback).toMatchObject({
          why: 'PostCheckFailed',
          toRevision: started.revision,
          restore: 'Restored',
          state: 'Done',
        });
        const back = await j.helmStatus(NAMESPACE, RELEASE);
        say(`s: after: helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        expect(back).toMatchObject({ status: 'deployed', chart: started.chart });
        expect(back.revision).toBeGreaterThan(started.revision + 1);
        await db.ready();
        const restoredColumns = await columns();
        const restoredAudit = await audit();
        const restored = await db.state();
        say(`s: after: psql: accounts_audit (${restoredColumns}), ${restoredAudit}; ${showState(restored)}`);
        expect(restoredColumns).toBe(startColumns);
        expect(restoredAudit).toBe(startAudit);
        expect(restored).toEqual(start);

        const good = await runOperation(j, NAMESPACE, 'safe-good', spec(POSTGRES_VERSIONS.good.version));
        await j.expectSucceeded(good, 'HelmUpgradeSucceeded');
        expect(good.status?.rollback).toBeUndefined();
        const kept = await j.helmStatus(NAMESPACE, RELEASE);
        say(`s: the good one: helm status: ${await j.helmStatusText(NAMESPACE, RELEASE)}`);
        expect(kept).toEqual({
          revision: back.revision + 1,
          status: 'deployed',
          chart: `postgres-${POSTGRES_VERSIONS.good.version}`,
        });
        say(`s: the good one: psql: accounts_audit (${await columns()}), ${await audit()}`);
        expect(await db.state()).toEqual(start);
      },
      1_200_000,
    );
  });
}
