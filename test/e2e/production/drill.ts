// Restore drills on the real node (issue 23 item 1, ADR 0054): what the platform admin and the database's
// owner do for a Verify Operation — a catalog entry allowing the PostgreSQL client image as the probe's, a
// probe that counts and checksums the restored rows — and the damage done to a backup in the bucket.
import { resourcePath } from '@vworkspace/runtime';
import YAML from 'yaml';
import { ensureObjectStore } from '../../../hack/lib/engines/object-store.ts';
import { listKeys, s3 } from '../../../hack/lib/engines/s3.ts';
import { OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { apply } from '../../../hack/lib/real-node.ts';
import { LABEL_CATALOG, LABEL_OPERATION, LABEL_SCRATCH_FOR } from '../../../operator/src/api/annotations.ts';
import type {
  ApplicationInstance,
  ApplicationInstanceStatus,
} from '../../../operator/src/api/applicationinstance.ts';
import { APPLICATION_INSTANCE } from '../../../operator/src/api/constants.ts';
import { snapshotVerify } from '../../../operator/src/catalog/templates/snapshot-verify.ts';
import { veleroVerify } from '../../../operator/src/catalog/templates/velero-verify.ts';
import { volsyncVerify } from '../../../operator/src/catalog/templates/volsync-verify.ts';
import { eventually } from '../../support/eventually.ts';
import type { Journey } from './journey.ts';

/**
 * The platform admin's catalog entry: the built-in drill template, replaced (same name) with the PostgreSQL
 * image as the only probe image. Waits until the operator's webhook knows it (a Verify with that image is
 * no longer denied at spec.parameters.image).
 */
export async function allowProbeImage(j: Journey, image: string): Promise<void> {
  const schema = structuredClone(veleroVerify.inputSchema) as { properties: Record<string, unknown> };
  schema.properties.image = { type: 'string', enum: [image], default: image };
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'drills', namespace: OPERATORS_NAMESPACE, labels: { [LABEL_CATALOG]: 'true' } },
    data: { 'catalog.yaml': YAML.stringify({ templates: [{ ...veleroVerify, inputSchema: schema }] }) },
  });
}

/**
 * The probe: waits for the restored server in the scratch namespace, then prints the row count and the md5
 * of pgbench_accounts (the journey's `accountsMd5`). Without `password`, psql takes PGPASSWORD from the
 * environment: the drill's probeSecret (probeSecretFor), so the password is in no spec.
 */
export function rowsProbe(release: string, password?: string): string[] {
  const host = `${release}-postgres.$VWS_SCRATCH_NAMESPACE.svc`;
  return [
    'sh',
    '-c',
    [
      `for i in $(seq 100); do pg_isready -q -h ${host} && break; sleep 3; done`,
      `${password === undefined ? '' : `PGPASSWORD='${password}' `}psql -X -At -v ON_ERROR_STOP=1 -h ${host} -U postgres -c "SELECT count(*) || ' ' || md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts"`,
    ].join('; '),
  ];
}

/**
 * The owner's Secret for drills (ADR 0057): `<release>-probe` with PGPASSWORD, the release's superuser
 * password, which the probe gets as its environment (parameters.probeSecret). Returns its name.
 */
export async function probeSecretFor(j: Journey, namespace: string, release: string): Promise<string> {
  const name = `${release}-probe`;
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    stringData: { PGPASSWORD: await databasePassword(j, namespace, release) },
  });
  return name;
}

/** The release's superuser password, from the chart's Secret (the owner knows it). */
export async function databasePassword(j: Journey, namespace: string, release: string): Promise<string> {
  const s = await j.node.client.request<{ data?: Record<string, string> }>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/secrets/${release}-postgres`,
  });
  return Buffer.from(s.data?.password ?? '', 'base64').toString('utf8');
}

/**
 * Damages a velero backup in the bucket, as a failing object store or a bad copy would: overwrites the
 * backup's resource archive (`backups/<name>/<name>.tar.gz`, what every restore of it reads first) with
 * bytes that are no gzip. The kopia repository is left alone: its content may also sit in the node-agent's
 * cache, which would make damage there invisible to a restore. Returns the key damaged.
 */
export async function damageBackupArchive(j: Journey, backup: string): Promise<string> {
  const store = await ensureObjectStore(j.node);
  const bucket = j.platform.velero.bucket;
  const creds = { accessKey: store.accessKey, secretKey: store.secretKey, region: store.region };
  const key = `backups/${backup}/${backup}.tar.gz`;
  const keys = await listKeys(store.hostUrl, creds, bucket, `backups/${backup}/`);
  if (!keys.includes(key)) throw new Error(`no ${key} in bucket ${bucket}: ${keys.join(', ')}`);
  await s3(
    { method: 'PUT', endpoint: store.hostUrl, path: `/${bucket}/${key}`, body: 'damaged in the bucket\n' },
    creds,
  );
  return key;
}

/** Waits until no scratch namespace made for `namespace` is left (the namespace controller removed them). */
export async function noScratchLeft(j: Journey, namespace: string): Promise<void> {
  await eventually(
    `the scratch namespaces of ${namespace} to be gone`,
    async () => {
      const list = await j.node.client.request<{ items: unknown[] }>({
        method: 'GET',
        path: '/api/v1/namespaces',
        query: { labelSelector: `${LABEL_SCRATCH_FOR}=${namespace}` },
      });
      return list.items.length === 0;
    },
    300_000,
    2_000,
  );
}

/** Waits until the instance's status records drill `operation` as its last; returns its drill fields. */
export function instanceWithDrill(
  j: Journey,
  namespace: string,
  name: string,
  operation: string,
): Promise<Pick<ApplicationInstanceStatus, 'lastVerifiedBackup' | 'lastDrill'>> {
  return eventually(
    `ApplicationInstance ${namespace}/${name} to record drill ${operation}`,
    async () => {
      const i = await j.node.client.request<ApplicationInstance>({
        method: 'GET',
        path: resourcePath({ ...APPLICATION_INSTANCE, namespace }, name),
      });
      return i.status?.lastDrill?.operation === operation ? i.status : undefined;
    },
    120_000,
    1_000,
  );
}

/**
 * The platform admin's catalog entry for restic drills (ADR 0060): the built-in volsync-verify, replaced
 * (same name) with the PostgreSQL image as the only probe image. A ConfigMap of its own beside `drills`.
 */
export async function allowResticProbeImage(j: Journey, image: string): Promise<void> {
  await allowDrillProbeImage(j, volsyncVerify, 'restic-drills', image);
}

/** The same for snapshot drills (ADR 0059): snapshot-verify with the PostgreSQL image as its probe image. */
export async function allowSnapshotProbeImage(j: Journey, image: string): Promise<void> {
  await allowDrillProbeImage(j, snapshotVerify, 'snapshot-drills', image);
}

async function allowDrillProbeImage(
  j: Journey,
  template: typeof volsyncVerify | typeof snapshotVerify,
  configMap: string,
  image: string,
): Promise<void> {
  const schema = structuredClone(template.inputSchema) as { properties: Record<string, unknown> };
  schema.properties.image = { type: 'string', enum: [image], default: image };
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: configMap, namespace: OPERATORS_NAMESPACE, labels: { [LABEL_CATALOG]: 'true' } },
    data: { 'catalog.yaml': YAML.stringify({ templates: [{ ...template, inputSchema: schema }] }) },
  });
}

/**
 * The restic drill's probe: starts PostgreSQL on the restored copy of `claim` (its socket in /tmp, no
 * network), prints the row count and md5 of pgbench_accounts as rowsProbe does, and stops the server. The
 * copy's files are uid 65532's, mode 0700, as restic gave them back (privileged movers): the probe's uid.
 */
export function resticRowsProbe(claim: string): string[] {
  return copyRowsProbe('$VWS_RESTORED_DIR', claim);
}

/**
 * The same probe on a copy under `dir`: a snapshot drill's copies are at $VWS_RESTORED_DIR/<claim>, the
 * files uid 65532's as the database wrote them (the PostgreSQL image's user, the probe's uid).
 */
export function copyRowsProbe(dir: string, claim: string): string[] {
  const data = `${dir}/${claim}/pgdata`;
  // One command a line: the server goes to the background (`&`), which a `;` may not follow.
  return [
    'sh',
    '-c',
    [
      `chmod 0700 ${data}`,
      `postgres -D ${data} -c listen_addresses= -c unix_socket_directories=/tmp -c jit=off >/tmp/postgres.log 2>&1 &`,
      'for i in $(seq 100); do pg_isready -q -h /tmp && break; sleep 2; done',
      `out=$(psql -X -At -v ON_ERROR_STOP=1 -h /tmp -U postgres -c "SELECT count(*) || ' ' || md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts" 2>&1)`,
      'rc=$?',
      `pg_ctl -D ${data} stop -m fast >/dev/null 2>&1`,
      '[ $rc -eq 0 ] || tail -5 /tmp/postgres.log',
      'echo "$out"',
      'exit $rc',
    ].join('\n'),
  ];
}

/** Waits until the restic drill `operation` left no restored claim (gone, or its deletion begun). */
export async function noCopyLeft(j: Journey, namespace: string, operation: string): Promise<void> {
  await eventually(
    `the restored claims of ${operation} to be gone`,
    async () => {
      const list = await j.node.client.request<{ items: { metadata?: { deletionTimestamp?: string } }[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/persistentvolumeclaims`,
        query: { labelSelector: `${LABEL_OPERATION}=${operation}` },
      });
      return list.items.every((c) => c.metadata?.deletionTimestamp);
    },
    120_000,
    2_000,
  );
}
