// What the production journey does as the application's owner and platform team, and how it looks at the
// result: helm from this process (as a person installs a chart), Operations and CronOperations through
// the API server (admitted by the operator pod's webhooks, reconciled by the operator pod), and reads of
// the objects the engines made.
import { randomBytes } from 'node:crypto';
import { isNotFound, PATCH_TYPES, resourcePath } from '@vworkspace/runtime';
import { Database } from '../../../hack/lib/apps/postgres.ts';
import { POSTGRES_VERSIONS } from '../../../hack/lib/engines/helm.ts';
import { OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { apply, type RealNode } from '../../../hack/lib/real-node.ts';
import { DEPLOYMENT_NAME } from '../../../hack/packaging/csv.ts';
import { LABEL_CRON_OPERATION, LABEL_OPERATION } from '../../../operator/src/api/annotations.ts';
import { APPLICATION_INSTANCE, CRON_OPERATION } from '../../../operator/src/api/constants.ts';
import type { Operation, OperationSpec } from '../../../operator/src/api/operation.ts';
import { Api, cond } from '../../integration/operation/support.ts';
import { impersonating } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';
import { helm } from '../../support/helm.ts';
import type { Platform } from './platform.ts';

/** The capabilities the platform team gives the PostgreSQL instance (Push mode: annotations it sets). */
export const POSTGRES_CAPABILITIES: Record<string, string> = {
  backup: 'velero',
  restore: 'velero',
  quiesce: 'exec',
  snapshot: 'snapshot',
  replicate: 'volsync',
  upgrade: 'helm',
  migration: 'helmHookJob',
  runcommand: 'job',
  runbook: 'workflow',
};

export interface HelmStatus {
  revision: number;
  status: string;
  chart: string;
}

export interface SnapshotInfo {
  name: string;
  /** The Operation that took it (label ops.vworkspace.io/operation). */
  operation: string;
  pvc: string;
  readyToUse: boolean;
  owners: number;
}

interface VolumeSnapshot {
  metadata: { name: string; ownerReferences?: unknown[]; labels?: Record<string, string> };
  spec: { source?: { persistentVolumeClaimName?: string } };
  status?: { readyToUse?: boolean };
}

export class Journey {
  readonly node: RealNode;
  readonly platform: Platform;
  readonly say: (m: string) => void;
  readonly api: Api;
  postgresImage = '';
  veleroBackup = '';

  constructor(node: RealNode, platform: Platform, say: (m: string) => void) {
    this.node = node;
    this.platform = platform;
    this.say = say;
    this.api = new Api(node.kc);
  }

  database(namespace: string, release: string): Database {
    return new Database(this.node.kc, this.node.client, namespace, release);
  }

  /** `helm install` from the chart repository, as the application's owner runs it. */
  async installRelease(namespace: string, release: string, storageClass: string): Promise<void> {
    await helm(this.node.kubeconfigPath, [
      'install',
      release,
      'postgres',
      '--repo',
      this.platform.helm.repoUrl,
      '--version',
      POSTGRES_VERSIONS.a.version,
      '-n',
      namespace,
      '--set',
      `image=${this.postgresImage}`,
      '--set',
      `storage.storageClassName=${storageClass}`,
      '--wait',
      '--timeout',
      '5m',
    ]);
  }

  /** What helm knows of the release (`helm get metadata`: the release record's revision, status, chart). */
  async helmStatus(namespace: string, release: string): Promise<HelmStatus> {
    const { stdout } = await helm(this.node.kubeconfigPath, [
      'get',
      'metadata',
      release,
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    const m = JSON.parse(stdout) as { revision: number; status: string; chart: string; version: string };
    return { revision: m.revision, status: m.status, chart: `${m.chart}-${m.version}` };
  }

  /** `helm status`'s own summary lines (STATUS, REVISION), as a person reads them. */
  async helmStatusText(namespace: string, release: string): Promise<string> {
    const { stdout } = await helm(this.node.kubeconfigPath, ['status', release, '-n', namespace]);
    return stdout
      .split('\n')
      .filter((l) => /^(NAME|NAMESPACE|STATUS|REVISION):/.test(l))
      .join(', ');
  }

  /** The ApplicationInstance as the platform team describes the release (Push mode). */
  async createInstance(namespace: string, release: string): Promise<void> {
    await this.node.client.request({
      method: 'POST',
      path: resourcePath({ ...APPLICATION_INSTANCE, namespace }),
      body: {
        apiVersion: APPLICATION_INSTANCE.apiVersion,
        kind: APPLICATION_INSTANCE.kind,
        metadata: {
          name: release,
          annotations: Object.fromEntries(
            Object.entries(POSTGRES_CAPABILITIES).map(([verb, engine]) => [
              `ops.vworkspace.io/${verb}`,
              engine,
            ]),
          ),
        },
        spec: {
          appRef: {
            catalogId: 'postgres',
            chart: {
              sourceType: 'helm',
              url: this.platform.helm.repoUrl,
              name: 'postgres',
              version: POSTGRES_VERSIONS.a.version,
            },
          },
          release: { name: release },
        },
      },
    });
  }

  /** The namespace admin lets `user` ask for Restores of `instance` here (Operations, verb restore). */
  async grantRestore(namespace: string, instance: string, user: string): Promise<void> {
    await this.grant(namespace, `restore-${user}`, user, [
      {
        apiGroups: ['ops.vworkspace.io'],
        resources: ['operations'],
        verbs: ['create', 'get', 'list', 'watch'],
      },
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        resourceNames: [instance],
        verbs: ['restore'],
      },
    ]);
  }

  /** The source namespace's admin lets `user` read `instance`'s backups into another namespace (verb clone). */
  async grantClone(namespace: string, instance: string, user: string): Promise<void> {
    await this.grant(namespace, `clone-${user}`, user, [
      {
        apiGroups: ['apps.vworkspace.io'],
        resources: ['applicationinstances'],
        resourceNames: [instance],
        verbs: ['clone'],
      },
    ]);
  }

  private async grant(
    namespace: string,
    name: string,
    user: string,
    rules: Record<string, unknown>[],
  ): Promise<void> {
    await apply(this.node.client, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules,
    });
    await apply(this.node.client, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
  }

  /** Creates an Operation as `user` (impersonation: the API server and the webhook see that user). */
  async createOperationAs(
    user: string,
    namespace: string,
    name: string,
    spec: Partial<OperationSpec>,
  ): Promise<void> {
    await impersonating(this.node.kc, user).request({
      method: 'POST',
      path: this.api.opPath(namespace),
      body: { apiVersion: 'ops.vworkspace.io/v1alpha1', kind: 'Operation', metadata: { name }, spec },
    });
  }

  /** The chart's migration hook Jobs that still have a Running pod. */
  async runningHooks(namespace: string, release: string): Promise<string[]> {
    const pods = await this.node.client.request<{
      items: { metadata: { labels?: Record<string, string> }; status?: { phase?: string } }[];
    }>({
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}/pods`,
      query: {
        labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=migrations`,
      },
    });
    return [
      ...new Set(
        pods.items
          .filter((p) => p.status?.phase === 'Running')
          .map((p) => p.metadata.labels?.['job-name'] ?? ''),
      ),
    ].filter(Boolean);
  }

  /** Waits until the chart's migration hook Job has a Running pod (an upgrade in its pre-upgrade hook). */
  hookRunning(namespace: string, release: string): Promise<boolean> {
    return eventually(
      `the migration hook of ${namespace}/${release} running`,
      async () =>
        (
          await this.node.client.request<{ items: { status?: { phase?: string } }[] }>({
            method: 'GET',
            path: `/api/v1/namespaces/${namespace}/pods`,
            query: {
              labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=migrations`,
            },
          })
        ).items.some((p) => p.status?.phase === 'Running'),
      300_000,
      500,
    );
  }

  /** The instance's Ready condition and release revision, as the operator pod wrote them. */
  private async readiness(namespace: string, release: string) {
    const i = await this.node.client.request<{
      status?: {
        conditions?: { type: string; status: string; reason: string; message: string }[];
        release?: { revision?: number };
      };
    }>({ method: 'GET', path: resourcePath({ ...APPLICATION_INSTANCE, namespace }, release) });
    return {
      ready: i.status?.conditions?.find((c) => c.type === 'Ready'),
      revision: i.status?.release?.revision,
    };
  }

  /** Waits until the instance is Ready on release revision `revision`; returns its Ready condition. */
  instanceReady(namespace: string, release: string, revision: number) {
    return eventually(
      `ApplicationInstance ${namespace}/${release} Ready on revision ${revision}`,
      async () => {
        const r = await this.readiness(namespace, release);
        return r.ready?.status === 'True' && r.revision === revision ? r.ready : undefined;
      },
      120_000,
      500,
    );
  }

  /** Waits until the instance's Ready condition has `reason`; returns the condition. */
  instanceReadyReason(namespace: string, release: string, reason: string) {
    return eventually(
      `ApplicationInstance ${namespace}/${release} Ready with reason ${reason}`,
      async () => {
        const { ready } = await this.readiness(namespace, release);
        return ready?.reason === reason ? ready : undefined;
      },
      120_000,
      500,
    );
  }

  /**
   * Runs a CronOperation once now (annotation ops.vworkspace.io/run-now), creating it first when it does
   * not exist (a nightly schedule: only the run-now request runs here), and waits for the Operation that
   * run created to finish. `extra` goes into the CronOperation's spec (e.g. successfulHistoryLimit).
   */
  async cronRun(
    namespace: string,
    name: string,
    spec: Partial<OperationSpec>,
    extra: Record<string, unknown> = {},
    timeoutMs = 300_000,
  ): Promise<Operation> {
    const path = resourcePath({ ...CRON_OPERATION, namespace }, name);
    const exists = await this.node.client.request({ method: 'GET', path }).then(
      () => true,
      (e: unknown) => {
        if (isNotFound(e)) return false;
        throw e;
      },
    );
    if (!exists)
      await this.node.client.request({
        method: 'POST',
        path: resourcePath({ ...CRON_OPERATION, namespace }),
        body: {
          apiVersion: CRON_OPERATION.apiVersion,
          kind: CRON_OPERATION.kind,
          metadata: { name },
          spec: { schedule: '0 3 * * *', operationTemplate: { spec }, ...extra },
        },
      });
    const seen = new Set((await this.cronOperations(namespace, name)).map((o) => o.metadata?.name));
    const request = `run-${randomBytes(3).toString('hex')}`;
    await this.node.client.request({
      method: 'PATCH',
      path,
      contentType: PATCH_TYPES.merge,
      body: { metadata: { annotations: { 'ops.vworkspace.io/run-now': request } } },
    });
    const created = await eventually(
      `the Operation of ${namespace}/${name}'s run-now ${request}`,
      async () => (await this.cronOperations(namespace, name)).find((o) => !seen.has(o.metadata?.name)),
      120_000,
      500,
    );
    const op = await this.api.finished(namespace, created.metadata?.name ?? '', timeoutMs);
    this.say(
      `  ${namespace}/${op.metadata?.name} (CronOperation ${name}, run-now): ${op.status?.phase} ${cond(op, 'Succeeded')?.reason}: ${cond(op, 'Succeeded')?.message}`,
    );
    return op;
  }

  async cronOperations(namespace: string, cron: string): Promise<Operation[]> {
    return (
      await this.node.client.request<{ items: Operation[] }>({
        method: 'GET',
        path: this.api.opPath(namespace),
        query: { labelSelector: `${LABEL_CRON_OPERATION}=${cron}` },
      })
    ).items;
  }

  /**
   * The Operation ended as `reason` says, and it was the operator pod that carried it: its log names
   * the Operation (nothing in this process reconciles).
   */
  async expectReconciledByThePod(op: Operation, phase: string, reason: string): Promise<void> {
    const c = cond(op, 'Succeeded');
    if (op.status?.phase !== phase || c?.reason !== reason)
      throw new Error(
        `Operation ${op.metadata?.namespace}/${op.metadata?.name}: ${op.status?.phase} ${c?.reason}, expected ${phase} ${reason}: ${JSON.stringify(op.status?.conditions)}`,
      );
    const logs = await this.operatorLogs();
    if (!logs.includes(op.metadata?.name ?? '\u0000'))
      throw new Error(`the operator pods' logs never name ${op.metadata?.name}`);
  }

  expectSucceeded(op: Operation, reason: string): Promise<void> {
    return this.expectReconciledByThePod(op, 'Succeeded', reason);
  }

  /** The velero Backup Completed, with the database volume copied by the node-agent (kopia). */
  async expectVeleroBackupOfTheVolume(backup: string, namespace: string): Promise<void> {
    const ns = this.platform.velero.namespace;
    const b = await this.node.client.request<{ status?: { phase?: string; errors?: number } }>({
      method: 'GET',
      path: `/apis/velero.io/v1/namespaces/${ns}/backups/${backup}`,
    });
    const pvbs = await this.node.client.request<{
      items: { spec?: { pod?: { namespace?: string }; volume?: string }; status?: { phase?: string } }[];
    }>({
      method: 'GET',
      path: `/apis/velero.io/v1/namespaces/${ns}/podvolumebackups`,
      query: { labelSelector: `velero.io/backup-name=${backup}` },
    });
    this.say(
      `  velero Backup ${backup}: ${b.status?.phase}; PodVolumeBackups: ${pvbs.items.map((p) => `${p.spec?.pod?.namespace}/${p.spec?.volume} ${p.status?.phase}`).join(', ')}`,
    );
    if (b.status?.phase !== 'Completed') throw new Error(`velero Backup ${backup} is ${b.status?.phase}`);
    if (
      !pvbs.items.some(
        (p) =>
          p.spec?.pod?.namespace === namespace && p.spec.volume === 'data' && p.status?.phase === 'Completed',
      )
    )
      throw new Error(
        `velero Backup ${backup} has no Completed PodVolumeBackup of volume data in ${namespace}`,
      );
  }

  async volumeSnapshots(namespace: string): Promise<SnapshotInfo[]> {
    return (
      await this.node.client.request<{ items: VolumeSnapshot[] }>({
        method: 'GET',
        path: `/apis/snapshot.storage.k8s.io/v1/namespaces/${namespace}/volumesnapshots`,
      })
    ).items.map((s) => ({
      name: s.metadata.name,
      operation: s.metadata.labels?.[LABEL_OPERATION] ?? '',
      pvc: s.spec.source?.persistentVolumeClaimName ?? '',
      readyToUse: s.status?.readyToUse === true,
      owners: s.metadata.ownerReferences?.length ?? 0,
    }));
  }

  /** Deletes the namespace and waits until it is gone; returns what it held that matters here. */
  async deleteNamespace(namespace: string): Promise<string> {
    const count = async (path: string, labelSelector?: string) =>
      (
        await this.node.client.request<{ items: unknown[] }>({
          method: 'GET',
          path,
          ...(labelSelector ? { query: { labelSelector } } : {}),
        })
      ).items.length;
    const held = [
      `${await count(`/api/v1/namespaces/${namespace}/secrets`, 'owner=helm')} Helm release records`,
      `${await count(resourcePath({ ...APPLICATION_INSTANCE, namespace }))} ApplicationInstance`,
      `${await count(this.api.opPath(namespace))} Operations`,
      `${await count(`/api/v1/namespaces/${namespace}/persistentvolumeclaims`)} PVC`,
      `${await count(`/api/v1/namespaces/${namespace}/pods`)} pods`,
    ].join(', ');
    await this.node.client.request({ method: 'DELETE', path: `/api/v1/namespaces/${namespace}` });
    await eventually(
      `namespace ${namespace} gone`,
      () =>
        this.node.client.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}` }).then(
          () => false,
          (e: unknown) => isNotFound(e),
        ),
      300_000,
      1000,
    );
    return held;
  }

  /** The operator pods' logs (the containers' current logs, through the kubelet). */
  async operatorLogs(): Promise<string> {
    const out: string[] = [];
    for (const pod of this.platform.operatorPods)
      out.push(
        String(
          await this.node.client
            .request<unknown>({
              method: 'GET',
              path: `/api/v1/namespaces/${OPERATORS_NAMESPACE}/pods/${pod}/log`,
            })
            .catch((e: Error) => `(no log of ${pod}: ${e.message})`),
        ),
      );
    return out.join('\n');
  }

  /** For a failing step: the operator's last log lines and the node's components. */
  async report(): Promise<string> {
    const ops = (await this.operatorLogs().catch(() => '')).split('\n').slice(-40).join('\n');
    return `--- ${DEPLOYMENT_NAME} pods (last lines) ---\n${ops}\n${this.platform.olm.logs(20)}`;
  }
}
