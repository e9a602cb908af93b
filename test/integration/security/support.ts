// Shared steps of the security tests: what the operator made of an Operation (its settled state and the
// children it created, read as the admin: the tenant's own view does not matter for the verdict), and the
// bait a hostile tenant reaches for.
import type { KubernetesObject } from '@kubernetes/client-node';
import { KubeApiError, type RestClient } from '@vworkspace/runtime';
import YAML from 'yaml';
import { ANNOTATION_ADMISSION } from '../../../operator/src/api/annotations.ts';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { jobRunCommand, RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { childName, NAME_LIMITS } from '../../../operator/src/engines/names.ts';
import { TINY_APP_REF } from '../../support/helm.ts';
import type { World } from './harness.ts';

export interface Outcome {
  op: Operation;
  accepted?: { status: string; reason: string; message: string };
  succeeded?: { status: string; reason: string; message: string };
}

/** Waits until the Operation left Pending/Blocked (it runs, or it ended) and returns its conditions. */
export async function settled(w: World, namespace: string, name: string): Promise<Outcome> {
  const op = await w.waitFor(`Operation ${namespace}/${name} to run or end`, async () => {
    const o = await w.getOperation(namespace, name);
    return ['Running', 'Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? '') ? o : undefined;
  });
  const cond = (type: string) => op.status?.conditions?.find((c) => c.type === type);
  const accepted = cond('Accepted');
  const succeeded = cond('Succeeded');
  return { op, ...(accepted ? { accepted } : {}), ...(succeeded ? { succeeded } : {}) };
}

/** Objects of `path` (a collection) labelled as children of the Operation `name`. */
export async function childrenOf(w: World, path: string, name: string): Promise<KubernetesObject[]> {
  const list = await w.waitFor(`the list of ${path}`, async () => {
    try {
      return await w.admin.request<{ items?: KubernetesObject[] }>({
        method: 'GET',
        path,
        query: { labelSelector: `ops.vworkspace.io/operation=${name}` },
      });
    } catch (err) {
      // The API server's watch cache for the kind is (re)initializing: it answers 429, try again.
      if (err instanceof KubeApiError && err.code === 429) return undefined;
      throw err;
    }
  });
  return list.items ?? [];
}

/** A RunCommand Operation spec (a Job running `true`) on `shop`, with `extra` fields. */
export const runCommandSpec = (extra: Record<string, unknown> = {}) => ({
  type: 'RunCommand',
  engine: 'job',
  targetRef: { name: 'shop' },
  parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
  ...extra,
});

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

/** `user` may `verb` applicationinstances in `namespace`, through a Role and RoleBinding `<user>-<verb>` (revokeVerb). */
export async function grantVerb(w: World, namespace: string, user: string, verb: string): Promise<void> {
  const name = `${user}-${verb}`;
  const rules = [{ apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: [verb] }];
  const base = `${RBAC}/namespaces/${namespace}`;
  const rbac = { apiVersion: 'rbac.authorization.k8s.io/v1' };
  await w.admin.request({
    method: 'POST',
    path: `${base}/roles`,
    body: { ...rbac, kind: 'Role', metadata: { name }, rules },
  });
  await w.admin.request({
    method: 'POST',
    path: `${base}/rolebindings`,
    body: {
      ...rbac,
      kind: 'RoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
}

/** Removes grantVerb's binding and waits until the API server's own authorizer says no. */
export async function revokeVerb(w: World, namespace: string, user: string, verb: string): Promise<void> {
  await w.admin.request({
    method: 'DELETE',
    path: `${RBAC}/namespaces/${namespace}/rolebindings/${user}-${verb}`,
  });
  await w.waitFor(`${user} to lose ${verb}`, async () => {
    const review = await w.admin.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user,
          resourceAttributes: {
            namespace,
            group: 'apps.vworkspace.io',
            resource: 'applicationinstances',
            verb,
          },
        },
      },
    });
    return review.status?.allowed !== true;
  });
}

/** Jobs of the namespace, by collection path. */
export const jobsIn = (namespace: string) => `/apis/batch/v1/namespaces/${namespace}/jobs`;

/**
 * The container arguments of each Job Operation `name` made, in list order: for a helm Upgrade the runner
 * (`upgrade …`) and its rollback Job (`rollback …`).
 */
export async function jobArgs(w: World, namespace: string, name: string): Promise<string[][]> {
  const jobs = (await childrenOf(w, jobsIn(namespace), name)) as (KubernetesObject & {
    spec: { template: { spec: { containers: { args?: string[] }[] } } };
  })[];
  return jobs.map((j) => j.spec.template.spec.containers[0]?.args ?? []);
}

/**
 * Operation `name` (a RunCommand Job that waits for approval), Failed with a reason a re-run retries: a Job
 * under the first attempt's child name that the Operation did not create (ChildConflict). `create` creates
 * it, `approve` gives the approval it waits for.
 */
export async function failedByChildConflict(
  w: World,
  ns: string,
  name: string,
  create: () => Promise<unknown>,
  approve: () => Promise<unknown>,
): Promise<void> {
  await create();
  const op = await w.waitFor(`${name} to wait for approval`, async () => {
    const o = await w.getOperation(ns, name);
    return o.status?.conditions?.some((c) => c.reason === 'AwaitingApproval') ? o : undefined;
  });
  await w.admin.request({
    method: 'POST',
    path: jobsIn(ns),
    body: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: childName(op, 1, NAME_LIMITS.job) },
      spec: {
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'x', image: RUNCOMMAND_IMAGES[0], command: ['true'] }],
          },
        },
      },
    },
  });
  await approve();
  const failed = await settled(w, ns, name);
  if (failed.succeeded?.reason !== 'ChildConflict')
    throw new Error(`${name} ended ${JSON.stringify(failed.succeeded)}, not ChildConflict`);
}

/** A ServiceAccount of `namespace` bound to cluster-admin there: what a tenant must never run as through the operator. */
export async function adminServiceAccount(w: World, namespace: string, name: string): Promise<void> {
  await w.admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
  });
  await w.grantClusterRole(`system:serviceaccount:${namespace}:${name}`, namespace, 'cluster-admin');
}

/** A catalog with `guarded-runcommand`: RunCommand that requires approval by someone other than the requester. */
export const GUARDED_TEMPLATE = 'guarded-runcommand';
export const guardedCatalog = YAML.stringify({
  templates: [
    {
      ...jobRunCommand,
      name: GUARDED_TEMPLATE,
      defaults: { requireReady: false, requiresApproval: true },
      separationOfDuties: true,
    },
  ],
});
/** An Operation spec of the guarded template on `shop`. */
export const guardedSpec = {
  type: 'RunCommand',
  engine: 'job',
  template: GUARDED_TEMPLATE,
  targetRef: { name: 'shop' },
  parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
};

/**
 * Creates namespace `name`, which the webhooks do not select (it lacks the world's label) and the operator
 * watches, with ApplicationInstance shop (runcommand: job) and the runCommand.job profile granted there.
 */
export async function unselectedNamespace(w: World, name: string): Promise<string> {
  await w.admin.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
  });
  await w.instance(name, 'shop', { runcommand: 'job' });
  await w.grantProfile('runCommand.job', name);
  return name;
}

/**
 * Runs `fn` while the webhooks do not select `namespace` (its world label removed), then selects it again:
 * what a cluster holds from before the webhooks were registered, or from a namespace they do not select.
 * The API server picks webhooks by its namespace cache, which sees the label change a moment later, and
 * matches the mutating and the validating webhooks one after the other: a write in that moment can be
 * signed by the one and never judged by the other. So `fn` starts only once a dry-run Operation comes back
 * unsigned (that cache is one, and moves only forward), and returns only once one is judged again, so the
 * next test's writes are.
 */
export async function unselected(w: World, namespace: string, fn: () => Promise<unknown>): Promise<void> {
  const label = (value: string | null) =>
    w.admin.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${namespace}`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { [WORLD_LABEL]: value } } },
    });
  /** Whether the webhooks judge `namespace` now: they signed a dry run, or refused it. */
  const judged = async (): Promise<boolean> => {
    try {
      const dry = await w.admin.request<Operation>({
        method: 'POST',
        path: `/apis/ops.vworkspace.io/v1alpha1/namespaces/${namespace}/operations`,
        query: { dryRun: 'All' },
        body: {
          apiVersion: 'ops.vworkspace.io/v1alpha1',
          kind: 'Operation',
          metadata: { generateName: 'probe-' },
          spec: runCommandSpec(),
        },
      });
      return dry.metadata?.annotations?.[ANNOTATION_ADMISSION] !== undefined;
    } catch (err) {
      if (err instanceof KubeApiError && /admission webhook/.test(err.message)) return true;
      throw err;
    }
  };
  await label(null);
  try {
    await w.waitFor(`the webhooks to stop judging ${namespace}`, async () => !(await judged()));
    await fn();
  } finally {
    await label(w.id);
    await w.waitFor(`the webhooks to judge ${namespace} again`, judged);
  }
}

const APPS = '/apis/apps.vworkspace.io/v1alpha1';
const WORLD_LABEL = 'vws-security-world';

/**
 * POSTs an ApplicationInstance of the tiny chart as `client` (a tenant, by impersonation): `release` is its
 * spec.release, `chart` replaces fields of spec.appRef.chart, `annotations` its metadata's.
 */
export function createInstance(
  client: RestClient,
  namespace: string,
  name: string,
  release: Record<string, string>,
  opts: { chart?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<unknown> {
  return client.request({
    method: 'POST',
    path: `${APPS}/namespaces/${namespace}/applicationinstances`,
    body: {
      apiVersion: 'apps.vworkspace.io/v1alpha1',
      kind: 'ApplicationInstance',
      metadata: { name, ...(opts.annotations ? { annotations: opts.annotations } : {}) },
      spec: { appRef: { ...TINY_APP_REF, chart: { ...TINY_APP_REF.chart, ...opts.chart } }, release },
    },
  });
}

/** An ApplicationInstance as the admin reads it. */
export function getInstance(w: World, namespace: string, name: string): Promise<ApplicationInstance> {
  return w.admin.request<ApplicationInstance>({
    method: 'GET',
    path: `${APPS}/namespaces/${namespace}/applicationinstances/${name}`,
  });
}

/** Waits until the instance's Ready condition has `reason`, and returns the instance. */
export function instanceWithReady(
  w: World,
  namespace: string,
  name: string,
  reason: string,
  timeoutMs?: number,
): Promise<ApplicationInstance> {
  return w.waitFor(
    `ApplicationInstance ${namespace}/${name} to be Ready=…/${reason}`,
    async () => {
      const i = await getInstance(w, namespace, name);
      return i.status?.conditions?.find((c) => c.type === 'Ready')?.reason === reason ? i : undefined;
    },
    timeoutMs,
  );
}

/**
 * Plays Velero: the velero.io child of Operation `name` (in `collection`, a path) completes — velero.io
 * kinds have no status subresource — and the Operation succeeds. Returns the child.
 */
export async function completeVeleroChild(
  w: World,
  collection: string,
  namespace: string,
  name: string,
): Promise<KubernetesObject> {
  await settled(w, namespace, name);
  const [child] = await childrenOf(w, collection, name);
  await w.admin.request({
    method: 'PATCH',
    path: `${collection}/${child!.metadata!.name}`,
    contentType: 'application/merge-patch+json',
    body: { status: { phase: 'Completed', completionTimestamp: new Date().toISOString() } },
  });
  await w.waitFor(`Operation ${name} to succeed`, async () => {
    const o = await w.getOperation(namespace, name);
    return o.status?.phase === 'Succeeded';
  });
  return child!;
}
