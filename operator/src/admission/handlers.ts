// The thin I/O layer of the admission webhook: for each request, look up exactly the facts the pure
// decision asks for (the target ApplicationInstance, from the operator's cache or else read with its
// identity; the requester's SubjectAccessReviews, an allowing one kept a few seconds; the templates from
// the catalog store), then decide. A failed
// lookup is passed on as such and the decision denies with "retry": with failurePolicy Fail nothing
// is ever admitted on a guess. Every lookup is a read, so the webhooks are sideEffects: None and
// `--dry-run=server` gets the same answer.
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound, type KubeClient, resourcePath } from '@vworkspace/runtime';
import { APPLICATION_INSTANCE, OPERATION, OPS_GROUP, VERSION_V1ALPHA1 } from '../api/constants.ts';
import type { Operation } from '../api/operation.ts';
import type { Template } from '../catalog/index.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import { isDryRun } from '../operation/history.ts';
import type { AccessCache } from './access-cache.ts';
import {
  type AccessResult,
  accessKey,
  type Facts,
  isRecord,
  type Lookup,
  type Needs,
  type SourceOperation,
  type TargetInstance,
} from './decision.ts';
import { decideInstance } from './instance.ts';
import {
  decideOperation,
  mutateOperation,
  type OperationRead,
  operationNeeds,
  readOperation,
} from './operation.ts';
import { type AdmissionRequest, type AdmissionResponse, allow } from './review.ts';
import { reviewAccess } from './sar.ts';
import { schedulerClaim, schedulerPlural, trustScheduled } from './scheduled.ts';
import { decideScheduler, schedulerNeeds } from './schedules.ts';
import { outsideScope, watches } from './scope.ts';
import type { AdmissionHandler } from './server.ts';
import { mutateScheduler } from './stamps.ts';

/** Webhook paths, as the bundle's webhookdefinitions and the test configurations name them. */
export const WEBHOOK_PATHS = {
  mutateOperation: '/mutate-operation',
  mutateSchedule: '/mutate-schedule',
  validateOperation: '/validate-operation',
  validateCronOperation: '/validate-cronoperation',
  validateWatchOperation: '/validate-watchoperation',
  validateApplicationInstance: '/validate-applicationinstance',
} as const;

export interface TemplateSource {
  lookupTemplates(): Lookup<readonly Template[]>;
}

export interface AdmissionDeps {
  /** The operator's own client: reads targets and posts SubjectAccessReviews. */
  client: KubeClient;
  templates: TemplateSource;
  /** WATCH_NAMESPACE: creates elsewhere are refused (scope.ts); empty or unset: every namespace. */
  watchNamespaces?: readonly string[];
  /** The operator's own user name (operatorIdentity); undefined: unknown, nothing is trusted as its. */
  self?: () => Promise<string | undefined>;
  /**
   * The operator's ApplicationInstance cache (its shared informer): a target found there is not read
   * again from the API server; one not found there (created a moment ago) is.
   */
  instances?: {
    get(name: string, namespace?: string): KubernetesObject | undefined;
    /** The cached instances of a namespace: whether another one names a release already (instance.ts). */
    list?(namespace?: string): KubernetesObject[];
  };
  /** SubjectAccessReviews that allowed, kept for a few seconds (access-cache.ts); unset: none kept. */
  accessCache?: AccessCache;
  /** Signs the admission record of Operations (stamps.ts); unset: no record is written or checked. */
  signingKeys?: SigningKeySource;
  /** VELERO_NAMESPACE: where a velero CronOperation's spec.retention deletes (retention.ts). */
  veleroNamespace?: string;
}

/**
 * The operator's user name as the API server sees it (SelfSubjectReview, allowed to every authenticated
 * user), asked once and kept; a failed review is asked again on the next call.
 */
export function operatorIdentity(client: KubeClient): () => Promise<string | undefined> {
  let known: string | undefined;
  return async () => {
    if (known) return known;
    try {
      const review = await client.request<{ status?: { userInfo?: { username?: string } } }>({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        timeoutMs: 5_000,
      });
      known = review.status?.userInfo?.username || undefined;
    } catch {
      // Unknown for now: Operations it creates are judged as anyone's (refused), and it asks again.
    }
    return known;
  };
}

function stringMap(v: unknown): Record<string, string> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

/** GET one object with the operator's identity: `undefined` value when it does not exist. */
async function readOptional<T>(
  client: KubeClient,
  path: string,
  view: (obj: unknown) => T,
): Promise<Lookup<T | undefined>> {
  try {
    const obj = await client.request<unknown>({ method: 'GET', path, timeoutMs: 5_000 });
    return { ok: true, value: view(obj) };
  } catch (err) {
    if (isNotFound(err)) return { ok: true, value: undefined };
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

/** What the checks read of an ApplicationInstance. */
function targetView(name: string, obj: unknown): TargetInstance {
  const meta = isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : {};
  const labels = stringMap(meta.labels);
  const annotations = stringMap(meta.annotations);
  const spec = isRecord(obj) ? obj.spec : undefined;
  return {
    name,
    ...(labels ? { labels } : {}),
    ...(annotations ? { annotations } : {}),
    ...(spec !== undefined ? { spec } : {}),
  };
}

/**
 * The target from the operator's cache when it holds it, else from the API server. `fresh`: always from
 * the API server, for an Operation the operator creates for a scheduler, whose target and substituted
 * values must be judged on the instance as it is now, never older than what the controller saw.
 */
async function readTarget(
  deps: AdmissionDeps,
  namespace: string,
  name: string,
  fresh: boolean,
): Promise<Lookup<TargetInstance | undefined>> {
  const cached = fresh ? undefined : deps.instances?.get(name, namespace);
  if (cached) return { ok: true, value: targetView(name, cached) };
  return readOptional<TargetInstance>(
    deps.client,
    resourcePath({ ...APPLICATION_INSTANCE, namespace }, name),
    (obj) => targetView(name, obj),
  );
}

/** An Operation parametersFrom names (only what the checks read). */
function readSource(client: KubeClient, namespace: string, name: string) {
  return readOptional<SourceOperation>(client, resourcePath({ ...OPERATION, namespace }, name), (obj) => {
    const op = obj as Operation;
    const template = op.spec?.template ?? op.status?.template;
    return {
      name,
      type: String(op.spec?.type ?? ''),
      engine: String(op.spec?.engine ?? ''),
      ...(template !== undefined ? { template } : {}),
      ...(op.status?.phase !== undefined ? { phase: op.status.phase } : {}),
      ...(op.status?.outputs ? { outputs: op.status.outputs } : {}),
      dryRun: isDryRun(op),
    };
  });
}

/** Looks up what `needs` names, concurrently. */
export async function gatherFacts(deps: AdmissionDeps, req: AdmissionRequest, needs: Needs): Promise<Facts> {
  const namespace = req.namespace ?? '';
  const names = needs.operations ?? [];
  const claim = needs.scheduledBy;
  const [target, sources, owner, ...access] = await Promise.all([
    needs.target !== undefined
      ? readTarget(deps, namespace, needs.target, claim !== undefined)
      : Promise.resolve(undefined),
    Promise.all(names.map((n) => readSource(deps.client, namespace, n))),
    claim ? readScheduler(deps.client, namespace, claim) : Promise.resolve(undefined),
    ...needs.access.map((c) => reviewAccess(deps.client, req.userInfo ?? {}, namespace, c, deps.accessCache)),
  ]);
  const byKey: Record<string, Lookup<AccessResult>> = {};
  needs.access.forEach((c, i) => {
    byKey[accessKey(c)] = access[i]!;
  });
  return {
    ...(deps.signingKeys ? { signingKeys: deps.signingKeys } : {}),
    ...(deps.veleroNamespace ? { veleroNamespace: deps.veleroNamespace } : {}),
    templates: deps.templates.lookupTemplates(),
    ...(target !== undefined ? { target } : {}),
    access: byKey,
    ...(names.length > 0 ? { sources: Object.fromEntries(names.map((n, i) => [n, sources[i]!])) } : {}),
    ...(claim && owner ? { scheduledBy: { claim, owner } } : {}),
  };
}

/** The CronOperation/WatchOperation an Operation names as its controller, read now. */
async function readScheduler(
  client: KubeClient,
  namespace: string,
  claim: NonNullable<Needs['scheduledBy']>,
): Promise<Lookup<unknown>> {
  try {
    const path = resourcePath(
      { group: OPS_GROUP, version: VERSION_V1ALPHA1, plural: schedulerPlural(claim.kind), namespace },
      claim.name,
    );
    return { ok: true, value: await client.request<unknown>({ method: 'GET', path, timeoutMs: 5_000 }) };
  } catch (err) {
    if (isNotFound(err)) return { ok: true, value: undefined };
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

const templatesOf = (deps: AdmissionDeps) => ({
  templates: deps.templates.lookupTemplates(),
  ...(deps.veleroNamespace ? { veleroNamespace: deps.veleroNamespace } : {}),
});

/** operationNeeds, with the operator's own creates for a CronOperation/WatchOperation (scheduled.ts). */
async function operationNeedsOf(
  deps: AdmissionDeps,
  req: AdmissionRequest,
  templates: ReturnType<typeof templatesOf>,
  read: OperationRead | undefined,
): Promise<Needs> {
  const needs = operationNeeds(req, templates, read);
  const self = req.operation === 'CREATE' && schedulerClaim(req.object) ? await deps.self?.() : undefined;
  return trustScheduled(needs, req, self);
}

/**
 * The validating webhook of Operations: a CREATE's spec is read (and its template resolved) once, for
 * what to look up and for the decision.
 */
async function validateOperation(deps: AdmissionDeps, req: AdmissionRequest): Promise<AdmissionResponse> {
  const templates = templatesOf(deps);
  const read = req.operation === 'CREATE' ? readOperation(req, templates) : undefined;
  const needs = await operationNeedsOf(deps, req, templates, read);
  return decideOperation(req, await gatherFacts(deps, req, needs), read);
}

export function createAdmissionHandlers(deps: AdmissionDeps): Record<string, AdmissionHandler> {
  const watched = deps.watchNamespaces ?? [];
  return {
    [WEBHOOK_PATHS.mutateOperation]: (req) =>
      watches(watched, req.namespace) ? mutateOperation(req, deps.signingKeys) : allow(req.uid),
    [WEBHOOK_PATHS.mutateSchedule]: (req) =>
      watches(watched, req.namespace) ? mutateScheduler(req) : allow(req.uid),
    [WEBHOOK_PATHS.validateOperation]: async (req): Promise<AdmissionResponse> =>
      outsideScope(req, watched) ?? (await validateOperation(deps, req)),
    [WEBHOOK_PATHS.validateCronOperation]: async (req) =>
      outsideScope(req, watched) ??
      decideScheduler(
        'CronOperation',
        req,
        await gatherFacts(deps, req, schedulerNeeds('CronOperation', req, templatesOf(deps))),
      ),
    [WEBHOOK_PATHS.validateWatchOperation]: async (req) =>
      outsideScope(req, watched) ??
      decideScheduler(
        'WatchOperation',
        req,
        await gatherFacts(deps, req, schedulerNeeds('WatchOperation', req, templatesOf(deps))),
      ),
    [WEBHOOK_PATHS.validateApplicationInstance]: (req) =>
      decideInstance(req, req.namespace ? (deps.instances?.list?.(req.namespace) ?? []) : []),
  };
}
