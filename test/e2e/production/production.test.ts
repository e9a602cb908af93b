// Production shape (issue 22, docs/production.md): a real PostgreSQL through a real disaster, on ONE real
// node, with every Operation reconciled by the operator pod that OLM installed from the catalog image, on
// the RBAC OLM granted it and the profiles bound as docs/security/rbac.md says. Nothing in this process
// reconciles: it acts as the platform team (installs, namespace RBAC) and as the application's owner
// (helm install, Operations), and checks each step by what the database answers.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresImage } from '../../../hack/images/apps/postgres.ts';
import { pushBuilt } from '../../../hack/images/build.ts';
import { type Database, type DbState, pvcOf, showState } from '../../../hack/lib/apps/postgres.ts';
import { STORAGE_CLASS as CSI_STORAGE_CLASS } from '../../../hack/lib/engines/csi.ts';
import { POSTGRES_VERSIONS } from '../../../hack/lib/engines/helm.ts';
import { type RealNode, startRealNode } from '../../../hack/lib/real-node.ts';
import { keepInTestResults } from '../../support/kept.ts';
import { Journey } from './journey.ts';
import { installPlatform, type Platform, prepareNamespace } from './platform.ts';

const RELEASE = 'db';
const NAMESPACE = 'shop';

describe('production shape: PostgreSQL through a real disaster, every Operation by the OLM-installed operator', () => {
  let node: RealNode | undefined;
  let platform: Platform | undefined;
  let workdir = '';
  let failed = false;
  const started = Date.now();
  const say = (m: string) =>
    process.stdout.write(`[production ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);
  let j: Journey;
  let db: Database;
  let before: DbState;

  beforeAll(async () => {
    workdir = await mkdtemp(join(tmpdir(), 'vws-e2e-production-'));
    node = await startRealNode({ log: say });
    platform = await installPlatform(node, workdir, say);
    j = new Journey(node, platform, say);
    const image = postgresImage(node.registryPrefix);
    pushBuilt(image, workdir);
    say(`PostgreSQL image ${image.ref}`);
    j.postgresImage = image.ref;
  }, 1_800_000);

  afterAll(async () => {
    await platform?.stop();
    await node?.stop();
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
          throw new Error(`${err instanceof Error ? err.message : String(err)}\n${await j?.report()}`);
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
      expect(before).toMatchObject({ accounts: 100_000, branches: 1, tellers: 10, history: 400, schema: 1 });
      const status = await j.helmStatus(NAMESPACE, RELEASE);
      say(`a: helm status: ${JSON.stringify(status)}`);
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
    'a: a CronOperation takes a snapshot backup: a readyToUse VolumeSnapshot of the database volume',
    async () => {
      const op = await j.cronRun(NAMESPACE, 'snapshot-hourly', {
        type: 'Backup',
        engine: 'snapshot',
        targetRef: { name: RELEASE },
      });
      j.expectSucceeded(op, 'VolumeSnapshotReadyToUse');
      const snaps = await j.volumeSnapshots(NAMESPACE);
      say(
        `a: VolumeSnapshots: ${snaps.map((s) => `${s.name} of ${s.pvc} readyToUse=${s.readyToUse}`).join(', ')}`,
      );
      expect(snaps.filter((s) => s.pvc === pvcOf(RELEASE) && s.readyToUse).length).toBeGreaterThan(0);
      // The same rows as before the backups.
      expect(await db.state()).toEqual(before);
    },
  );

  step(
    'b: disaster: the whole namespace is deleted, the release record, the instance and its Operations with it',
    async () => {
      const gone = await j.deleteNamespace(NAMESPACE);
      say(`b: namespace ${NAMESPACE} deleted with ${gone}`);
      expect(await j.helmStatus(NAMESPACE, RELEASE).catch((e: Error) => e.message)).toMatch(
        /release: not found/,
      );
    },
  );
});
