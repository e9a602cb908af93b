// Installing our package through OLM, as a user does (docs/install.md): a Subscription to the e2e
// CatalogSource in the `operators` namespace (global OperatorGroup: AllNamespaces), or in a namespace
// with its own OperatorGroup (OwnNamespace: ownNamespaceGroup), then OLM's InstallPlan and CSV. Waits
// say what they wait for and fail fast when OLM reports a failure.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../../hack/lib/controlplane.ts';
import { OLM_NAMESPACE, OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { csvName, PACKAGE_NAME } from '../../../hack/packaging/csv.ts';
import { eventually } from '../../support/eventually.ts';
import {
  type Csv,
  csvsPath,
  getOrUndefined,
  type InstallPlan,
  installPlansPath,
  type Subscription,
  subscribe,
  subscriptionsPath,
} from './olm-api.ts';
import { CATALOG_SOURCE, type World } from './world.ts';

/** What these helpers use of a journey's world (the kwok World, or a real node's). */
export type OlmUser = Pick<World, 'client' | 'say'>;

export const SUBSCRIPTION = PACKAGE_NAME;
/** The version this checkout builds (package.json): the head of the catalog's channels. */
export const CURRENT_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
export { csvName, OPERATORS_NAMESPACE, PACKAGE_NAME };

/** Like eventually(), but a value for which `fatal` returns a message ends the wait with that error. */
async function until<T>(
  what: string,
  get: () => Promise<T | undefined>,
  done: (v: T) => boolean,
  fatal: (v: T) => string | undefined,
  timeoutMs: number,
): Promise<T> {
  let failure: string | undefined;
  const v = await eventually(
    what,
    async () => {
      const got = await get();
      if (got === undefined) return undefined;
      failure = fatal(got);
      return failure || done(got) ? got : undefined;
    },
    timeoutMs,
    500,
  );
  if (failure) throw new Error(`${what}: ${failure}`);
  return v;
}

export interface InstallOptions {
  channel?: string;
  approval?: 'Automatic' | 'Manual';
  /** Where the Subscription, and so the operator, goes (default `operators`). */
  namespace?: string;
}

/** An OperatorGroup in `ns` targeting only `ns`: OLM's OwnNamespace install mode. */
export async function ownNamespaceGroup(world: OlmUser, ns: string): Promise<void> {
  await world.client.request({
    method: 'POST',
    path: `/apis/operators.coreos.com/v1/namespaces/${ns}/operatorgroups`,
    body: {
      apiVersion: 'operators.coreos.com/v1',
      kind: 'OperatorGroup',
      metadata: { name: ns, namespace: ns },
      spec: { targetNamespaces: [ns] },
    },
  });
  world.say(`OperatorGroup ${ns}/${ns}: targetNamespaces [${ns}] (OwnNamespace)`);
}

export async function subscribeOperator(world: OlmUser, opts: InstallOptions = {}): Promise<void> {
  const ns = opts.namespace ?? OPERATORS_NAMESPACE;
  await subscribe(
    world.client,
    SUBSCRIPTION,
    {
      name: PACKAGE_NAME,
      ...(opts.channel ? { channel: opts.channel } : {}),
      source: CATALOG_SOURCE,
      sourceNamespace: OLM_NAMESPACE,
      installPlanApproval: opts.approval ?? 'Automatic',
    },
    ns,
  );
  world.say(
    `Subscription ${ns}/${SUBSCRIPTION}: package ${PACKAGE_NAME}, channel ${opts.channel ?? '(the default)'}, source ${CATALOG_SOURCE}, approval ${opts.approval ?? 'Automatic'}`,
  );
}

export function getSubscription(
  world: OlmUser,
  name = SUBSCRIPTION,
  ns = OPERATORS_NAMESPACE,
): Promise<Subscription> {
  return world.client.request<Subscription>({ method: 'GET', path: subscriptionsPath(ns, name) });
}

/** The InstallPlan the Subscription points at once it names `csv`, after it completed. */
export async function waitInstallPlanFor(
  world: OlmUser,
  csv: string,
  timeoutMs = 300_000,
  ns = OPERATORS_NAMESPACE,
): Promise<InstallPlan> {
  const sub = await until(
    `Subscription ${SUBSCRIPTION} to reference an InstallPlan for ${csv}`,
    () => getSubscription(world, SUBSCRIPTION, ns),
    (s) => s.status?.currentCSV === csv && s.status.installPlanRef !== undefined,
    // Only an unsatisfiable resolution is final: OLM requeues ErrorPreventedResolution (a catalog pod being
    // replaced refuses connections for a moment) and the condition stays True until the next resolution.
    (s) =>
      s.status?.conditions?.find(
        (c) =>
          c.type === 'ResolutionFailed' && c.status === 'True' && c.reason === 'ConstraintsNotSatisfiable',
      )?.message,
    timeoutMs,
  );
  const name = sub.status?.installPlanRef?.name ?? '';
  world.say(`InstallPlan ${name} created for ${csv}`);
  const plan = await until(
    `InstallPlan ${name} to complete`,
    () => getOrUndefined<InstallPlan>(world.client, installPlansPath(ns, name)),
    (p) => p.status?.phase === 'Complete',
    (p) =>
      p.status?.phase === 'Failed' ? (p.status.message ?? JSON.stringify(p.status.conditions)) : undefined,
    timeoutMs,
  );
  world.say(
    `InstallPlan ${name}: ${plan.status?.phase}, approval ${plan.spec.approval}, ${plan.status?.plan?.length ?? 0} steps, CSVs ${plan.spec.clusterServiceVersionNames.join(', ')}`,
  );
  return plan;
}

/** How long a CSV must stay Failed before waitCsvSucceeded gives up on it (OLM can recover one). */
const CSV_FAILED_FINAL_MS = 60_000;

export async function waitCsvSucceeded(
  world: OlmUser,
  name: string,
  timeoutMs = 300_000,
  ns = OPERATORS_NAMESPACE,
): Promise<Csv> {
  // OLM re-evaluates a Failed CSV (olm/operator.go, case CSVPhaseFailed): an unhealthy install goes back to
  // Pending (NeedsReinstall), an OperatorGroup problem that was fixed to Pending too. So only a Failed phase
  // that lasts CSV_FAILED_FINAL_MS ends the wait early.
  let failedSince: number | undefined;
  const csv = await until(
    `CSV ${name} to reach Succeeded`,
    () => getOrUndefined<Csv>(world.client, csvsPath(ns, name)),
    (c) => c.status?.phase === 'Succeeded',
    (c) => {
      if (c.status?.phase !== 'Failed') {
        failedSince = undefined;
        return undefined;
      }
      failedSince ??= Date.now();
      const failedFor = Date.now() - failedSince;
      return failedFor >= Math.min(CSV_FAILED_FINAL_MS, timeoutMs / 2)
        ? `${c.status.reason}: ${c.status.message} (Failed for ${Math.round(failedFor / 1000)} s)`
        : undefined;
    },
    timeoutMs,
  );
  world.say(`CSV ${name}: ${csv.status?.phase} (${csv.status?.reason}: ${csv.status?.message})`);
  return csv;
}

/** The Subscription once OLM says it is at the newest version the catalog offers. */
export function waitSubscriptionAtLatest(world: OlmUser): Promise<Subscription> {
  return eventually(
    'Subscription AtLatestKnown',
    async () => {
      const s = await getSubscription(world);
      return s.status?.state === 'AtLatestKnown' ? s : undefined;
    },
    120_000,
    500,
  );
}

/** Subscribes and waits until `version` of our package is installed and Succeeded. */
export async function installOperator(
  world: OlmUser,
  version: string,
  opts: InstallOptions = {},
): Promise<{ plan: InstallPlan; csv: Csv }> {
  const ns = opts.namespace ?? OPERATORS_NAMESPACE;
  await subscribeOperator(world, opts);
  const plan = await waitInstallPlanFor(world, csvName(version), 300_000, ns);
  const csv = await waitCsvSucceeded(world, csvName(version), 300_000, ns);
  return { plan, csv };
}
