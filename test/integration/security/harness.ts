// The world of the security suite: the operator as a separate process on a ServiceAccount token bound to
// EXACTLY the permissions of the bundle's CSV (clusterPermissions and permissions, read from the generated
// CSV), with the CSV's webhookdefinitions registered by URL over TLS, and tenants played by impersonation.
// Each hole of the threat model is tried through this world, as a hostile tenant would try it on a
// cluster where OLM installed the operator.
//
// The API server is shared by every integration file, so the world's webhooks only apply to the world's
// own namespaces (a namespaceSelector on a label only they carry: the one liberty taken with the CSV),
// and stop() removes the configurations before the operator goes, so later files never meet a webhook
// whose server is gone.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { isNotFound, KubeApiError, PATCH_TYPES, type RestClient } from '@vworkspace/runtime';
import { inject } from 'vitest';
import YAML from 'yaml';
import { makeServingCert } from '../../../hack/lib/certs.ts';
import { kubeconfigYaml, ROOT } from '../../../hack/lib/controlplane.ts';
import { csvWebhookDefinitions, webhookConfigurations } from '../../../hack/lib/webhooks.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import {
  profileClusterRoleName,
  profileNamespaces,
  rbacProfile,
} from '../../../operator/src/rbac/profiles.ts';
import { impersonating, testClient } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_APP_REF, TINY_CHART } from '../../support/helm.ts';
import { OperatorProcess, tail } from '../../support/operator-process.ts';
import { RecordingProxy } from './recording-proxy.ts';

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface Denial {
  message: string;
  code: number;
  reason?: string;
  causes: { field: string; message: string }[];
}

export interface World {
  id: string;
  admin: RestClient;
  adminKc: KubeConfig;
  kubeconfigPath: string;
  operatorNamespace: string;
  operatorServiceAccount: string;
  veleroNamespace: string;
  /** Two tenant namespaces ("team a", "team b"); the webhooks apply to both. */
  namespaces: [string, string];
  operator: OperatorProcess;
  /** The operator's own kubeconfig (its ServiceAccount token), e.g. to check what the CSV's RBAC allows. */
  operatorKubeconfigPath: string;
  /** With WorldOptions.recordOperatorTraffic: what the operator asked the API server and received. */
  traffic?: RecordingProxy;
  as(user: string, groups?: string[]): RestClient;
  grant(user: string, namespace: string, rules: Rule[]): Promise<void>;
  grantClusterRole(user: string, namespace: string, clusterRole: string): Promise<void>;
  grantProfile(profileId: string, namespace: string): Promise<void>;
  installRelease(namespace: string, release: string, set?: string[]): Promise<void>;
  instance(
    namespace: string,
    name: string,
    capabilities: Record<string, string>,
    release?: { name: string; namespace?: string },
  ): Promise<void>;
  operation(
    client: RestClient,
    namespace: string,
    name: string,
    spec: Record<string, unknown>,
    annotations?: Record<string, string>,
  ): Promise<unknown>;
  getOperation(namespace: string, name: string): Promise<Operation>;
  waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs?: number): Promise<T>;
  denial(p: Promise<unknown>): Promise<Denial>;
  stop(): Promise<void>;
}

export interface WorldOptions {
  /** catalog.yaml text, put in a ConfigMap labelled ops.vworkspace.io/catalog=true in the operator namespace. */
  catalog?: string;
  /** Further operator settings (environment). */
  env?: Record<string, string>;
  /** Route the operator's API traffic through a RecordingProxy (World.traffic). */
  recordOperatorTraffic?: boolean;
}

const CSV_PATH = join(ROOT, 'bundle/manifests/vworkspace-operator.clusterserviceversion.yaml');
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const OPS = '/apis/ops.vworkspace.io/v1alpha1';
const APPS = '/apis/apps.vworkspace.io/v1alpha1';
export const RUNNER_SERVICE_ACCOUNT = 'vworkspace-runner';

interface CsvPermission {
  serviceAccountName: string;
  rules: Rule[];
}

interface CsvInstall {
  permissions?: CsvPermission[];
  clusterPermissions?: CsvPermission[];
  deployments?: { spec: { template: { spec: { serviceAccountName: string } } } }[];
}

/** The CSV's install strategy as generated (what OLM turns into Roles, ClusterRoles and the Deployment). */
export function csvInstall(): CsvInstall {
  const csv = YAML.parse(readFileSync(CSV_PATH, 'utf8')) as { spec: { install: { spec: CsvInstall } } };
  return csv.spec.install.spec;
}

async function applyObject(client: RestClient, path: string, body: Record<string, unknown>): Promise<void> {
  await client.request({
    method: 'PATCH',
    path,
    query: { fieldManager: 'security-world', force: true },
    contentType: PATCH_TYPES.apply,
    body,
  });
}

async function deleteIgnoringMissing(client: RestClient, path: string): Promise<void> {
  try {
    await client.request({ method: 'DELETE', path });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** The API server's Status of a refused request; fails when the request was admitted. */
export async function denial(p: Promise<unknown>): Promise<Denial> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof KubeApiError)) throw err;
    const body = (typeof err.body === 'object' && err.body !== null ? err.body : {}) as {
      message?: string;
      code?: number;
      reason?: string;
      details?: { causes?: { field?: string; message?: string }[] };
    };
    return {
      message: body.message ?? err.message,
      code: body.code ?? err.code,
      ...(body.reason ? { reason: body.reason } : {}),
      causes: (body.details?.causes ?? []).map((c) => ({ field: c.field ?? '', message: c.message ?? '' })),
    };
  }
  throw new Error('expected the request to be refused, it was admitted');
}

export async function startWorld(opts: WorldOptions = {}): Promise<World> {
  const id = randomBytes(3).toString('hex');
  const kubeconfigPath = inject('kubeconfig');
  const adminKc = new KubeConfig();
  adminKc.loadFromFile(kubeconfigPath);
  // The test's admin: unthrottled (qps 0); the operator under test is its own process with its own settings.
  const admin = testClient(adminKc);
  const worldLabel = 'vws-security-world';
  const operatorNamespace = `sec-${id}-operator`;
  const veleroNamespace = `sec-${id}-velero`;
  const namespaces: [string, string] = [`sec-${id}-team-a`, `sec-${id}-team-b`];
  const install = csvInstall();
  const operatorServiceAccount = install.deployments?.[0]?.spec.template.spec.serviceAccountName ?? '';
  if (!operatorServiceAccount) throw new Error(`${CSV_PATH} names no deployment ServiceAccount`);
  const clusterScoped: string[] = [];
  const webhookConfigPaths: string[] = [];
  let operator: OperatorProcess | undefined;
  let operatorKubeconfigPath = '';
  let traffic: RecordingProxy | undefined;
  // The operator's kubeconfig (a token), certificates and logs: removed once the operator is gone.
  let dir: string | undefined;

  const stop = async () => {
    // Webhooks first: a configuration whose server is gone would refuse every later request it matches.
    for (const p of webhookConfigPaths) await deleteIgnoringMissing(admin, p);
    await operator?.stop();
    await traffic?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    for (const ns of [operatorNamespace, veleroNamespace, ...namespaces]) {
      await deleteIgnoringMissing(admin, `/api/v1/namespaces/${ns}`);
    }
    for (const p of clusterScoped) await deleteIgnoringMissing(admin, p);
  };

  try {
    for (const ns of [operatorNamespace, veleroNamespace, ...namespaces]) {
      await admin.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { [worldLabel]: id } } },
      });
    }
    for (const ns of namespaces) {
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/serviceaccounts`,
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: RUNNER_SERVICE_ACCOUNT } },
      });
    }

    // The operator's identity: what OLM creates from the CSV, rule for rule.
    await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${operatorNamespace}/serviceaccounts`,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: operatorServiceAccount } },
    });
    const subject = [{ kind: 'ServiceAccount', name: operatorServiceAccount, namespace: operatorNamespace }];
    for (const [i, p] of (install.clusterPermissions ?? []).entries()) {
      const name = `sec-${id}-operator-${i}`;
      clusterScoped.push(`${RBAC}/clusterroles/${name}`, `${RBAC}/clusterrolebindings/${name}`);
      await applyObject(admin, `${RBAC}/clusterroles/${name}`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name },
        rules: p.rules,
      });
      await applyObject(admin, `${RBAC}/clusterrolebindings/${name}`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: subject,
      });
    }
    // permissions: the world is an AllNamespaces install, for which OLM lifts the CSV's permissions to a
    // ClusterRole and ClusterRoleBinding and adds namespaces get/list/watch (olm operatorgroup.go,
    // ensureSingletonRBAC); a namespace-scoped install would get them as Roles (docs/security/rbac.md).
    for (const [i, p] of (install.permissions ?? []).entries()) {
      const name = `sec-${id}-operator-ns-${i}`;
      clusterScoped.push(`${RBAC}/clusterroles/${name}`, `${RBAC}/clusterrolebindings/${name}`);
      await applyObject(admin, `${RBAC}/clusterroles/${name}`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name },
        rules: [...p.rules, { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
      });
      await applyObject(admin, `${RBAC}/clusterrolebindings/${name}`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: subject,
      });
    }
    // The profile ClusterRoles the bundle ships (cluster-scoped and identical for every world).
    for (const f of readdirSync(join(ROOT, 'bundle/manifests')).filter((n) =>
      n.startsWith('vworkspace-profile-'),
    )) {
      const role = YAML.parse(readFileSync(join(ROOT, 'bundle/manifests', f), 'utf8')) as {
        metadata: { name: string };
      } & Record<string, unknown>;
      await applyObject(admin, `${RBAC}/clusterroles/${role.metadata.name}`, role);
    }

    if (opts.catalog !== undefined) {
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${operatorNamespace}/configmaps`,
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'security-catalog', labels: { 'ops.vworkspace.io/catalog': 'true' } },
          data: { 'catalog.yaml': opts.catalog },
        },
      });
    }

    dir = mkdtempSync(join(tmpdir(), `vws-security-${id}-`));
    const token = await admin.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${operatorNamespace}/serviceaccounts/${operatorServiceAccount}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 7200 },
      },
    });
    const cluster = adminKc.getCurrentCluster();
    if (!cluster?.caFile) throw new Error(`${kubeconfigPath} has no certificate-authority file`);
    operatorKubeconfigPath = join(dir, 'operator.kubeconfig');
    if (opts.recordOperatorTraffic)
      traffic = await RecordingProxy.start(cluster.server, cluster.caFile, join(dir, 'proxy-certs'));
    writeFileSync(
      operatorKubeconfigPath,
      kubeconfigYaml(
        traffic?.url ?? cluster.server,
        traffic?.caFile ?? cluster.caFile,
        token.status.token,
        operatorServiceAccount,
      ),
      { mode: 0o600 },
    );

    const certDir = join(dir, 'certs');
    const cert = makeServingCert(certDir);
    operator = await OperatorProcess.start(
      {
        kubeconfigPath: operatorKubeconfigPath,
        namespace: operatorNamespace,
        logDir: dir,
        env: {
          VELERO_NAMESPACE: veleroNamespace,
          WEBHOOK_CERT_DIR: certDir,
          WEBHOOK_HOST: '127.0.0.1',
          // The process binds port 0 and logs the port it got (no free-port race with the rest).
          WEBHOOK_PORT: '0',
          ...opts.env,
        },
      },
      `operator-${id}`,
    );
    await operator.waitReady(60_000);
    const webhookPort = operator.webhookPort;
    if (!webhookPort) throw new Error('the operator is ready but never logged "admission webhook serving"');
    for (const config of webhookConfigurations(
      csvWebhookDefinitions(CSV_PATH),
      `https://127.0.0.1:${webhookPort}`,
      cert.caPem,
      `vworkspace-security-${id}`,
    )) {
      for (const hook of config.webhooks) hook.namespaceSelector = { matchLabels: { [worldLabel]: id } };
      const plural =
        config.kind === 'MutatingWebhookConfiguration'
          ? 'mutatingwebhookconfigurations'
          : 'validatingwebhookconfigurations';
      const base = `/apis/admissionregistration.k8s.io/v1/${plural}`;
      await admin.request({ method: 'POST', path: base, body: config });
      webhookConfigPaths.push(`${base}/${config.metadata.name}`);
    }
  } catch (err) {
    const log = operator ? `\noperator log:\n${tail(operator.logPath, 40)}` : '';
    await stop().catch(() => undefined);
    throw err instanceof Error ? new Error(`${err.message}${log}`) : err;
  }
  const running = operator;

  const world: World = {
    id,
    admin,
    adminKc,
    kubeconfigPath,
    operatorNamespace,
    operatorServiceAccount,
    veleroNamespace,
    namespaces,
    operator: running,
    operatorKubeconfigPath,
    ...(traffic ? { traffic } : {}),
    as: (user, groups) => impersonating(adminKc, user, groups),
    async grant(user, namespace, rules) {
      const name = `grant-${user.replace(/[^a-z0-9-]/g, '-')}-${randomBytes(3).toString('hex')}`;
      const base = `${RBAC}/namespaces/${namespace}`;
      await admin.request({
        method: 'POST',
        path: `${base}/roles`,
        body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name }, rules },
      });
      await admin.request({
        method: 'POST',
        path: `${base}/rolebindings`,
        body: {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
    },
    async grantClusterRole(user, namespace, clusterRole) {
      const name = `grant-${user.replace(/[^a-z0-9-]/g, '-')}-${randomBytes(3).toString('hex')}`;
      await admin.request({
        method: 'POST',
        path: `${RBAC}/namespaces/${namespace}/rolebindings`,
        body: {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
    },
    async grantProfile(profileId, namespace) {
      const profile = rbacProfile(profileId);
      if (!profile) throw new Error(`unknown RBAC profile ${profileId}`);
      const role = profileClusterRoleName(profileId);
      for (const ns of profileNamespaces(profile, { target: namespace, velero: veleroNamespace })) {
        await applyObject(admin, `${RBAC}/namespaces/${ns}/rolebindings/${role}-${namespace}`, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: `${role}-${namespace}`, namespace: ns },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'ServiceAccount', name: operatorServiceAccount, namespace: operatorNamespace }],
        });
      }
    },
    async installRelease(namespace, release, set = []) {
      await helm(kubeconfigPath, [
        'install',
        release,
        TINY_CHART,
        '-n',
        namespace,
        ...set.flatMap((s) => ['--set', s]),
      ]);
    },
    async instance(namespace, name, capabilities, release) {
      await admin.request({
        method: 'POST',
        path: `${APPS}/namespaces/${namespace}/applicationinstances`,
        body: {
          apiVersion: 'apps.vworkspace.io/v1alpha1',
          kind: 'ApplicationInstance',
          metadata: {
            name,
            annotations: Object.fromEntries(
              Object.entries(capabilities).map(([verb, engine]) => [`ops.vworkspace.io/${verb}`, engine]),
            ),
          },
          spec: {
            appRef: TINY_APP_REF,
            release: {
              name: release?.name ?? name,
              ...(release?.namespace ? { namespace: release.namespace } : {}),
            },
          },
        },
      });
    },
    operation(client, namespace, name, spec, annotations) {
      return client.request({
        method: 'POST',
        path: `${OPS}/namespaces/${namespace}/operations`,
        body: {
          apiVersion: 'ops.vworkspace.io/v1alpha1',
          kind: 'Operation',
          metadata: { name, ...(annotations ? { annotations } : {}) },
          spec,
        },
      });
    },
    getOperation(namespace, name) {
      return admin.request<Operation>({
        method: 'GET',
        path: `${OPS}/namespaces/${namespace}/operations/${name}`,
      });
    },
    waitFor: (what, fn, timeoutMs = 60_000) => eventually(what, fn, timeoutMs),
    denial,
    stop,
  };
  return world;
}
