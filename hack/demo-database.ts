// The real node's story in `make demo` (hack/demo.ts): a PostgreSQL from Debian's packages (the production
// journey's image and chart, docs/production.md) gets rows from pgbench; a velero Backup Operation copies
// it (Velero, its node-agent and MinIO really run; the quiesce hook runs CHECKPOINT); the namespace is
// deleted; a Restore Operation brings the release back; the same rows are on screen again.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { isNotFound, type KubeClient } from '@vworkspace/runtime';
import { postgresImage } from './images/apps/postgres.ts';
import { pushBuilt } from './images/build.ts';
import { Database, showState } from './lib/apps/postgres.ts';
import { POSTGRES_CHART_DIR, RUNNER_SERVICE_ACCOUNT } from './lib/engines/helm.ts';
import { ensureStorage } from './lib/engines/storage.ts';
import { ensureVelero } from './lib/engines/velero.ts';
import { eventually } from './lib/eventually.ts';
import { helm } from './lib/helm.ts';
import type { RealNode } from './lib/real-node.ts';

const NS = 'shop';
const RELEASE = 'db';
const OPS = `/apis/ops.vworkspace.io/v1alpha1/namespaces/${NS}/operations`;

interface Op {
  status?: {
    phase?: string;
    conditions?: { type: string; reason: string; message: string }[];
    outputs?: Record<string, string>;
  };
}

export interface Story {
  node: RealNode;
  kc: KubeConfig;
  api: KubeClient;
  dir: string;
  say: (m: string) => void;
  /** Creates the ApplicationInstance once the release is there (the demo's own builder). */
  createInstance: (namespace: string, release: string, capabilities: Record<string, string>) => Promise<void>;
}

async function operation(s: Story, name: string, spec: Record<string, unknown>): Promise<Op> {
  await s.api.request({
    method: 'POST',
    path: OPS,
    body: { apiVersion: 'ops.vworkspace.io/v1alpha1', kind: 'Operation', metadata: { name }, spec },
  });
  let last = '';
  const op = await eventually(
    `Operation ${NS}/${name} to finish`,
    async () => {
      const o = await s.api.request<Op>({ method: 'GET', path: `${OPS}/${name}` });
      const reason = o.status?.conditions?.find((c) => c.type === 'Succeeded')?.reason ?? '';
      const line = `${o.status?.phase ?? 'Pending'}${reason ? ` (${reason})` : ''}`;
      if (line !== last) s.say(`  ${name}: ${line}`);
      last = line;
      return ['Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? '') ? o : undefined;
    },
    600_000,
    500,
  );
  const done = op.status?.conditions?.find((c) => c.type === 'Succeeded');
  s.say(`  ${name}: ${done?.reason}: ${done?.message}`);
  if (op.status?.phase !== 'Succeeded') throw new Error(`Operation ${name} did not succeed`);
  return op;
}

async function showRows(s: Story, db: Database): Promise<string> {
  const state = await db.state();
  const sample = await db.psql(
    'SELECT aid, bid, abalance FROM pgbench_accounts WHERE abalance <> 0 ORDER BY aid LIMIT 3',
  );
  s.say(`  ${showState(state)}`);
  for (const row of sample.split('\n')) s.say(`    pgbench_accounts: ${row.replaceAll('|', ' | ')}`);
  return JSON.stringify(state);
}

/** Runs the story; returns when the restored database answered with the rows it had before. */
export async function databaseStory(s: Story): Promise<void> {
  s.say(
    'installing the engines the story needs on the node: local-path storage, MinIO, Velero with its node-agent ...',
  );
  await ensureStorage(s.node);
  const velero = await ensureVelero(s.node);
  await mkdir(join(s.dir, 'images'), { recursive: true });
  const image = postgresImage(s.node.registryPrefix);
  pushBuilt(image, join(s.dir, 'images'));
  s.say(`PostgreSQL image from Debian's packages: ${image.ref}`);
  await s.api
    .request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts`,
      body: { metadata: { name: RUNNER_SERVICE_ACCOUNT } },
    })
    .catch(() => undefined);
  s.say(`helm install ${RELEASE} (test/fixtures/charts/postgres: a StatefulSet, its volume, a Secret) ...`);
  await helm(s.node.kubeconfigPath, [
    'install',
    RELEASE,
    POSTGRES_CHART_DIR,
    '-n',
    NS,
    '--set',
    `image=${image.ref}`,
    '--wait',
    '--timeout',
    '5m',
  ]);
  await s.createInstance(NS, RELEASE, { backup: 'velero', restore: 'velero', quiesce: 'exec' });
  const db = new Database(s.kc, s.api, NS, RELEASE);
  await db.ready();
  s.say(`pgbench -i -s 1, then 200 transactions on 2 clients, in the database's pod ...`);
  await db.load(1, 100);
  const before = await showRows(s, db);

  s.say('Backup Operation (engine velero; quiesce: CHECKPOINT; the volume by the node-agent with kopia) ...');
  const backup = await operation(s, 'nightly', {
    type: 'Backup',
    engine: 'velero',
    targetRef: { name: RELEASE },
    parameters: { quiesce: 'exec', defaultVolumesToFsBackup: true },
  });
  const keys = await velero.store.list(velero.bucket, `backups/${backup.status?.outputs?.backupName}/`);
  s.say(
    `  the object store holds ${keys.length} files of velero Backup ${backup.status?.outputs?.backupName}`,
  );

  s.say(
    `deleting namespace ${NS}: the database, its volume, the Helm release record, the instance, the Operations ...`,
  );
  await s.api.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}` });
  await eventually(
    `namespace ${NS} gone`,
    () =>
      s.api.request({ method: 'GET', path: `/api/v1/namespaces/${NS}` }).then(
        () => false,
        (e: unknown) => isNotFound(e),
      ),
    300_000,
    1000,
  );
  s.say(`  namespace ${NS} is gone`);
  await restoreAfterLoss(s, String(backup.status?.outputs?.backupName ?? ''));
  await db.ready();
  const { stdout } = await helm(s.node.kubeconfigPath, ['status', RELEASE, '-n', NS]);
  s.say(
    `  helm status: ${stdout
      .split('\n')
      .filter((l) => /^(STATUS|REVISION):/.test(l))
      .join(', ')}`,
  );
  s.say('the rows, read again from the restored database:');
  const after = await showRows(s, db);
  if (after !== before) throw new Error(`the restored database differs: before ${before}, after ${after}`);
  s.say('  the same rows and checksums as before the namespace was deleted');
}

/**
 * The namespace recreated and the Restore asked for the way docs/disaster-recovery.md tells a user: the
 * instance is gone, so `spec.source` names whose backups to read (the newest Completed one).
 */
async function restoreAfterLoss(s: Story, backupName: string): Promise<void> {
  await s.api.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: NS } } });
  s.say(
    `namespace ${NS} recreated; Restore Operation with spec.source.namespace ${NS} (the newest backup: ${backupName}) ...`,
  );
  const op = await operation(s, 'restore', {
    type: 'Restore',
    engine: 'velero',
    targetRef: { name: RELEASE },
    source: { namespace: NS },
  });
  if (op.status?.outputs?.backupName !== backupName)
    throw new Error(`the Restore took ${op.status?.outputs?.backupName}, not ${backupName}`);
}
