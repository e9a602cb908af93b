// The OLM objects the journeys read and write (Subscription, InstallPlan, ClusterServiceVersion), as
// much of their shape as the tests use, and a report of their state for failure output.

import { isNotFound, type KubeClient } from '@vworkspace/runtime';
import { OPERATORS_NAMESPACE, OPERATORS_V1ALPHA1 } from '../../../hack/lib/olm.ts';

export interface OlmCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { kind: string; name: string }[];
  creationTimestamp?: string;
}

export interface Subscription {
  metadata: Meta;
  spec: {
    name: string;
    channel?: string;
    source: string;
    sourceNamespace: string;
    installPlanApproval?: 'Automatic' | 'Manual';
    startingCSV?: string;
  };
  status?: {
    state?: string;
    currentCSV?: string;
    installedCSV?: string;
    installPlanRef?: { name: string; namespace: string };
    conditions?: OlmCondition[];
  };
}

export interface InstallPlan {
  metadata: Meta;
  spec: { approval: string; approved: boolean; clusterServiceVersionNames: string[] };
  status?: {
    phase?: string;
    message?: string;
    conditions?: OlmCondition[];
    bundleLookups?: unknown[];
    plan?: { resolving: string; status: string; resource: { kind: string; name: string } }[];
  };
}

export interface Csv {
  metadata: Meta;
  spec: {
    version: string;
    replaces?: string;
    customresourcedefinitions?: { owned?: { name: string; version: string; kind: string }[] };
  };
  status?: { phase?: string; reason?: string; message?: string; conditions?: OlmCondition[] };
}

const base = (ns: string) => `/apis/operators.coreos.com/v1alpha1/namespaces/${ns}`;
export const subscriptionsPath = (ns = OPERATORS_NAMESPACE, name?: string) =>
  `${base(ns)}/subscriptions${name ? `/${name}` : ''}`;
export const installPlansPath = (ns = OPERATORS_NAMESPACE, name?: string) =>
  `${base(ns)}/installplans${name ? `/${name}` : ''}`;
export const csvsPath = (ns = OPERATORS_NAMESPACE, name?: string) =>
  `${base(ns)}/clusterserviceversions${name ? `/${name}` : ''}`;

export async function list<T>(client: KubeClient, path: string): Promise<T[]> {
  return (await client.request<{ items: T[] }>({ method: 'GET', path })).items;
}

/** The object, or undefined when it does not exist. */
export async function getOrUndefined<T>(client: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await client.request<T>({ method: 'GET', path });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** A Subscription in `ns` (default `operators`) to `pkg` from the CatalogSource `source` (in OLM's namespace). */
export async function subscribe(
  client: KubeClient,
  name: string,
  spec: Subscription['spec'],
  ns = OPERATORS_NAMESPACE,
): Promise<void> {
  await client.request({
    method: 'POST',
    path: subscriptionsPath(ns),
    body: {
      apiVersion: OPERATORS_V1ALPHA1,
      kind: 'Subscription',
      metadata: { name, namespace: ns },
      spec,
    },
  });
}

/** CSVs OLM installed in `ns` (not the copies it puts in every namespace for AllNamespaces). */
export async function installedCsvs(client: KubeClient, ns = OPERATORS_NAMESPACE): Promise<Csv[]> {
  return (await list<Csv>(client, csvsPath(ns))).filter(
    (c) => c.metadata.labels?.['olm.copiedFrom'] === undefined,
  );
}

const conds = (cs: OlmCondition[] | undefined) =>
  (cs ?? [])
    .map((c) => `      ${c.type}=${c.status} ${c.reason ?? ''} ${c.message ?? ''}`.trimEnd())
    .join('\n');

/** Subscriptions, InstallPlans and CSVs of `ns` with their conditions, for a failure report. */
export async function olmReport(client: KubeClient, ns = OPERATORS_NAMESPACE): Promise<string> {
  const out: string[] = [];
  const section = async <T>(title: string, path: string, line: (o: T) => string) => {
    try {
      const items = await list<T>(client, path);
      out.push(`${title} (${items.length}):`, ...items.map(line));
    } catch (err) {
      out.push(`${title}: ${String(err)}`);
    }
  };
  await section<Subscription>(
    `Subscriptions in ${ns}`,
    subscriptionsPath(ns),
    (s) =>
      `  ${s.metadata.name}: package ${s.spec.name} channel ${s.spec.channel ?? '(default)'} state ${s.status?.state} current ${s.status?.currentCSV} installed ${s.status?.installedCSV} plan ${s.status?.installPlanRef?.name}\n${conds(s.status?.conditions)}`,
  );
  await section<InstallPlan>(
    `InstallPlans in ${ns}`,
    installPlansPath(ns),
    (p) =>
      `  ${p.metadata.name}: phase ${p.status?.phase} approval ${p.spec.approval} approved ${p.spec.approved} csvs ${p.spec.clusterServiceVersionNames.join(',')} ${p.status?.message ?? ''}\n${conds(p.status?.conditions)}`,
  );
  await section<Csv>(`ClusterServiceVersions in ${ns} (copies left out)`, csvsPath(ns), (c) =>
    c.metadata.labels?.['olm.copiedFrom']
      ? ''
      : `  ${c.metadata.name}: phase ${c.status?.phase} ${c.status?.reason ?? ''} ${c.status?.message ?? ''}\n${conds(c.status?.conditions?.slice(-4))}`,
  );
  return out.filter((l) => l !== '').join('\n');
}
