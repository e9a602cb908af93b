// The day-2 verbs of the production journey besides backup and restore, each carried by the OLM-installed
// operator pod on one of the RBAC profiles the built-in templates use (docs/production.md lists which
// step exercises which profile), each checked by its effect on the database.

import { PATCH_TYPES } from '@vworkspace/runtime';
import { workflowRunnerObjects } from '../../../hack/lib/engines/argo.ts';
import { RUNNER_SERVICE_ACCOUNT } from '../../../hack/lib/engines/helm.ts';
import { ensureObjectStore } from '../../../hack/lib/engines/object-store.ts';
import { apply, deleteIfExists } from '../../../hack/lib/real-node.ts';
import type { Operation, OperationSpec } from '../../../operator/src/api/operation.ts';
import { eventually } from '../../support/eventually.ts';
import type { Journey } from './journey.ts';

export const RESTIC_SECRET = 'postgres-restic';
export const ANALYZE_TEMPLATE = 'postgres-analyze';

/** Creates an Operation on `target` as the application's owner and waits for it to end. */
export async function runOperation(
  j: Journey,
  namespace: string,
  name: string,
  spec: Partial<OperationSpec> & Pick<OperationSpec, 'type' | 'engine'>,
  timeoutMs = 600_000,
): Promise<Operation> {
  await j.api.createOperation(namespace, name, spec);
  const op = await j.api.finished(namespace, name, timeoutMs);
  const c = op.status?.conditions?.find((x) => x.type === 'Succeeded');
  j.say(
    `  ${namespace}/${name} (${spec.type} via ${spec.engine}): ${op.status?.phase} ${c?.reason}: ${c?.message}`,
  );
  return op;
}

/**
 * A WorkflowTemplate the namespace admin ships: one step in the PostgreSQL image that runs
 * `VACUUM ANALYZE` through the Service with the release's password, as any client would.
 */
export function analyzeTemplate(namespace: string, release: string, image: string): Record<string, unknown> {
  const service = `${release}-postgres`;
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { name: ANALYZE_TEMPLATE, namespace },
    spec: {
      entrypoint: 'analyze',
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      templates: [
        {
          name: 'analyze',
          container: {
            image,
            command: [
              'sh',
              '-ec',
              'psql -X -At -v ON_ERROR_STOP=1 -c "VACUUM ANALYZE" -c "SELECT \'analyzed \' || count(*) FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL"',
            ],
            env: [
              { name: 'PGHOST', value: service },
              { name: 'PGUSER', value: 'postgres' },
              { name: 'PGDATABASE', value: 'postgres' },
              { name: 'PGPASSWORD', valueFrom: { secretKeyRef: { name: service, key: 'password' } } },
            ],
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        },
      ],
    },
  };
}

/**
 * What the namespace admin adds for Runbooks and restic backups: the executor's rights, the template, the
 * repository Secret, and VolSync's privileged movers (the database's files are its user's, mode 0700: an
 * unprivileged mover could neither read them nor give them back their owner).
 */
export async function prepareDayTwo(j: Journey, namespace: string, release: string): Promise<void> {
  await j.node.client.request({
    method: 'PATCH',
    path: `/api/v1/namespaces/${namespace}`,
    contentType: PATCH_TYPES.merge,
    body: { metadata: { annotations: { 'volsync.backube/privileged-movers': 'true' } } },
  });
  for (const o of [
    ...workflowRunnerObjects(namespace, RUNNER_SERVICE_ACCOUNT),
    analyzeTemplate(namespace, release, j.postgresImage),
  ])
    await apply(j.node.client, o);
  const store = await ensureObjectStore(j.node);
  await store.bucket('postgres-restic');
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: RESTIC_SECRET, namespace },
    stringData: {
      RESTIC_REPOSITORY: `s3:${store.serviceUrl}/postgres-restic/${namespace}/${release}`,
      RESTIC_PASSWORD: `restic-${namespace}-${release}-${Date.now()}`,
      AWS_ACCESS_KEY_ID: store.accessKey,
      AWS_SECRET_ACCESS_KEY: store.secretKey,
      AWS_DEFAULT_REGION: store.region,
    },
  });
}

/** Scales the release's StatefulSet (the admin stopping and starting the database around a volume restore). */
export async function scaleDatabase(
  j: Journey,
  namespace: string,
  release: string,
  replicas: number,
): Promise<void> {
  const path = `/apis/apps/v1/namespaces/${namespace}/statefulsets/${release}-postgres`;
  await j.node.client.request({
    method: 'PATCH',
    path: `${path}/scale`,
    contentType: PATCH_TYPES.merge,
    body: { spec: { replicas } },
  });
  await eventually(
    `StatefulSet ${namespace}/${release}-postgres at ${replicas} ready replicas`,
    async () => {
      const pods = await j.node.client.request<{ items: unknown[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/pods`,
        query: {
          labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=database`,
        },
      });
      const sts = await j.node.client.request<{ status?: { readyReplicas?: number } }>({
        method: 'GET',
        path,
      });
      return replicas === 0 ? pods.items.length === 0 : (sts.status?.readyReplicas ?? 0) === replicas;
    },
    300_000,
    1000,
  );
}

/**
 * A PostgreSQL server on a new claim restored from `snapshot` (a pod of its own, not the release's):
 * what "this backup restores" means for the database. Returns the pod's name; the caller deletes
 * `${name}` pod and claim with cleanupRestored().
 */
export async function serveSnapshot(
  j: Journey,
  namespace: string,
  snapshot: string,
  storageClass: string,
): Promise<string> {
  const name = `from-${snapshot}`.slice(0, 50).replace(/-+$/, '');
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: {
      storageClassName: storageClass,
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshot },
    },
  });
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/part-of': 'vws-e2e' } },
    spec: {
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 5,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
      containers: [
        {
          name: 'postgres',
          image: j.postgresImage,
          // The data directory is there (PG_VERSION): no initdb, so no password file is read.
          env: [
            { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
            { name: 'POSTGRES_PASSWORD_FILE', value: '/dev/null' },
          ],
          volumeMounts: [
            { name: 'data', mountPath: '/var/lib/postgresql/data' },
            { name: 'run', mountPath: '/var/run/postgresql' },
          ],
        },
      ],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: name } },
        { name: 'run', emptyDir: {} },
      ],
    },
  });
  return name;
}

export async function cleanupRestored(j: Journey, namespace: string, name: string): Promise<void> {
  for (const path of [
    `/api/v1/namespaces/${namespace}/pods/${name}`,
    `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}`,
  ])
    await deleteIfExists(j.node.client, path);
}
