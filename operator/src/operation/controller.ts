// The Operation controller: the thin I/O shell around decide.ts.
//
// Per reconcile: read the Operation and its target from the caches; while it has not started, gather
// the precondition facts (access reviews, the other Operations, watched Secrets/ServiceAccounts); read
// the current attempt's children; decide; then perform the decision in a crash-safe order — create
// children (server-side apply, deterministic names: an existing child of that name is adopted, so a crash
// between "create" and "write status" never makes a second child), cancel children, write the status
// (only when it changed), record Events, delete the Operation when its TTL passed.
//
// Wake-ups are events, not polling:
//   target changes (Ready)          ApplicationInstance informer → Operations on that target
//   a conflicting Operation ends    Operation informer → the waiting queue of the same target
//   Secret / ServiceAccount appears NameWatcher (narrow watch per waited-for name) → the waiting Operations
//   a profile is granted            RoleBinding / ClusterRoleBinding informers → Operations RbacProfileMissing
//   the catalog changes             CatalogStore.onChange → Operations not started yet
//   a dependency / source succeeds  Operation informer → the target's queue and operationRef readers
//   an engine's CRDs get installed  discovery re-read every ENGINE_RECHECK_MS while EngineNotInstalled
//   the target is (un)paused        ApplicationInstance informer → its waiting and running Operations
//   window opens, deadline, TTL,    requeueAfter at the exact instant (clock)
//   retry backoff, grace period
//   approval, cancel, reconcile     the Operation's own update events
// API errors (5xx, conflicts, timeouts, failed reviews) are thrown: the queue retries with backoff and
// the Operation is never failed for them.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeConfigLike } from '@vworkspace/runtime';
import {
  Client,
  type Clock,
  Controller,
  type EventRecorder,
  Informer,
  InformerFactory,
  isAlreadyExists,
  isNotFound,
  KeyedMutex,
  type KubeClient,
  keyOf,
  type ListerWatcher,
  type Logger,
  type ObjectWriter,
  objectKey,
  PATCH_TYPES,
  type ReconcileContext,
  type ReconcileResult,
  type RestMapper,
  type RuntimeMetrics,
  realClock,
  resourcePath,
  scopedTo,
  statusCode,
} from '@vworkspace/runtime';
import { LABEL_HELM_INSTANCE, LABEL_INSTANCE, LABEL_OPERATION_NAMESPACE } from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { APPLICATION_INSTANCE, OPERATION } from '../api/constants.ts';
import type { Engine } from '../api/enums.ts';
import type { ChildRef, Operation, OperationStatus } from '../api/operation.ts';
import { isPaused } from '../api/paused.ts';
import { CONDITION_ACCEPTED, Reason } from '../api/reasons.ts';
import { schedulerOwner } from '../api/scheduler-owner.ts';
import type { Catalog } from '../catalog/catalog-schema.ts';
import { requiredObjects } from '../catalog/parameters.ts';
import type { Template } from '../catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { MIGRATION_CONFIGMAP_KEY, migrationConfigMapName } from '../engines/helm-hook-job.ts';
import type { CancelAction, ChildManifest, EngineAdapter, EngineEnvironment } from '../engines/types.ts';
import { workflowTemplateServiceAccounts } from '../engines/workflow.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import { verifyStamps } from '../identity/stamp.ts';
import {
  INSTANCES_BY_RELEASE,
  indexed,
  OPERATIONS_BY_PARAMETER_SOURCE,
  OPERATIONS_BY_TARGET,
} from '../indexes.ts';
import { releaseClaimant } from '../release/claim.ts';
import { releaseRef } from '../release/ref.ts';
import { AccessCache, type AccessReviewer, SelfAccessReviewer, SubjectAccessReviewer } from './access.ts';
import type { AdmissionFacts } from './admitted.ts';
import { childConflict, childConflictStatus } from './adoption.ts';
import { isRunning, waitingQueue } from './conflicts.ts';
import {
  ANNOTATION_RECONCILE_HANDLED,
  type Decision,
  decide,
  isTerminalPhase,
  mayMaterialize,
  needsPreconditions,
  refOf,
} from './decide.ts';
import { EngineDiscovery } from './engine-install.ts';
import { OperationMetrics } from './metrics.ts';
import { readPodOutcomes } from './pod-outcomes.ts';
import { type PreconditionFacts, resolveRequest } from './preconditions.ts';
import { readReleaseHooks } from './release-hooks.ts';
import { readHookJobs, readReleaseState } from './release-state.ts';
import { readRestoreFacts } from './restore-facts.ts';
import {
  asRestoreBackup,
  newestBackup,
  type RestoreBackup,
  recordedInstance,
  sourceNamespace,
} from './restore-source.ts';
import { ChildWatcher, type NamedKind, NameWatcher } from './watchers.ts';

export const OPERATION_CONTROLLER_NAME = 'operation';
export const DEFAULT_VELERO_NAMESPACE = 'velero';

/** Where templates and catalog applications come from (CatalogStore fits). */
export interface TemplateSource {
  templates(): readonly Template[];
  catalog?(): Catalog;
  onChange?(fn: () => void): () => void;
}

export interface OperationControllerDeps {
  kc: KubeConfigLike;
  client: KubeClient;
  writer: ObjectWriter;
  mapper: RestMapper;
  events: EventRecorder;
  logger: Logger;
  metrics: RuntimeMetrics;
  adapterFor: (engine: Engine) => EngineAdapter | undefined;
  templates?: TemplateSource;
  clock?: Clock;
  /** Concurrent reconciles (controller-runtime MaxConcurrentReconciles); default 1. Operations on one
   * target are still decided one at a time (the conflict queue), whatever the number. */
  workers?: number;
  /** Shared informers (main passes the process's one factory); default: a factory of its own. */
  informers?: InformerFactory;
  veleroNamespace?: string;
  helmImage?: string;
  /** WATCH_NAMESPACE: the namespaces to watch; empty or unset: every namespace. */
  namespaces?: readonly string[];
  /** How long TargetNotFound / RbacProfileMissing / EngineNotInstalled wait before failing (default 5 min). */
  graceMs?: number;
  /** How often an Operation waiting for its engine's CRDs re-reads discovery (default 15 s). */
  engineRecheckMs?: number;
  /** Access reviews (default: SelfSubjectAccessReview with `client`). */
  reviewer?: AccessReviewer;
  /**
   * Check the signed admission record and re-review the stamped requester and approver before anything
   * starts (admitted.ts; main always sets it). Unset: not checked (controller tests without webhooks).
   */
  admission?: {
    keys: SigningKeySource;
    reviewer?: AccessReviewer;
    /**
     * The operator's own user name (SelfSubjectReview; undefined while unknown): an Operation carries a
     * scheduler's authority only when the operator created it for that scheduler.
     */
    self: () => Promise<string | undefined>;
  };
  /** Tests: list/watch from memory for the child kinds and named objects. */
  listerWatchers?: {
    operations: ListerWatcher<Operation>;
    instances: ListerWatcher<ApplicationInstance>;
    roleBindings: ListerWatcher<KubernetesObject>;
    clusterRoleBindings: ListerWatcher<KubernetesObject>;
    other?: (r: { group: string; version: string; plural: string }) => ListerWatcher<KubernetesObject>;
  };
}

export interface OperationController {
  controller: Controller;
  /** Register with the Manager (addInformer). */
  informers: readonly Informer<KubernetesObject>[];
  /** Register with manager.add: stops the on-demand informers (children, waited-for names) on shutdown. */
  runnable: { name: string; needLeaderElection: boolean; start(signal: AbortSignal): Promise<void> };
  /** For tests. */
  nameWatcher: NameWatcher;
  childWatcher: ChildWatcher;
  access: AccessCache;
}

/** Operations not started yet (or Failed and asked to re-run) that re-evaluate on outside events. */
function waiting(op: Operation): boolean {
  return !isTerminalPhase(op.status?.phase) && !isRunning(op);
}

/** The type verb an Operation's requester needs on its target (as the webhook asks it). */
function typeVerb(op: Operation): string {
  return op.spec.type.toLowerCase();
}

/**
 * An Operation carries the checked authority of a CronOperation/WatchOperation (ADR 0011) when its
 * controller ownerReference names one (api/scheduler-owner.ts: what the schedulers count as theirs) and its
 * signed creator is the operator itself: only the operator's own Operations are admitted with such a
 * reference, and a reference added where the webhook did not run borrows nothing.
 */
async function carriesSchedulerAuthority(
  op: Operation,
  createdBy: string,
  self: () => Promise<string | undefined>,
): Promise<boolean> {
  if (!schedulerOwner(op, 'CronOperation') && !schedulerOwner(op, 'WatchOperation')) return false;
  const me = await self();
  // Unknown for now (the review failed): retried with backoff rather than judged as anyone's.
  if (me === undefined) throw new Error("the operator's own user name is not known yet (SelfSubjectReview)");
  return createdBy === me;
}

function rbacMissing(op: Operation): boolean {
  const c = op.status?.conditions?.find((x) => x.type === CONDITION_ACCEPTED);
  return c?.status === 'False' && c.reason === 'RbacProfileMissing';
}

/** 400/422 from creating a child: the manifest is invalid; retrying cannot help. */
function isInvalid(err: unknown): boolean {
  const code = statusCode(err);
  return code === 400 || code === 422;
}

export function createOperationController(deps: OperationControllerDeps): OperationController {
  const clock = deps.clock ?? realClock;
  const log = deps.logger.child({ controller: OPERATION_CONTROLLER_NAME });
  const common = { clock, logger: log };
  const veleroNamespace = deps.veleroNamespace ?? DEFAULT_VELERO_NAMESPACE;
  const templates = (): readonly Template[] => deps.templates?.templates() ?? BUILTIN_TEMPLATES;
  const lw = deps.listerWatchers;

  const res = (r: { group: string; version: string; plural: string }) => ({
    group: r.group,
    version: r.version,
    plural: r.plural,
  });
  const factory =
    deps.informers ?? new InformerFactory({ kc: deps.kc, client: deps.client, logger: log, clock });
  const rbacRes = { group: 'rbac.authorization.k8s.io', version: 'v1' };
  const scope = scopedTo(deps.namespaces);
  const operations = lw
    ? new Informer<Operation>({ name: 'operations', listerWatcher: lw.operations, ...common })
    : factory.informer<Operation>(res(OPERATION), scope);
  const instances = lw
    ? new Informer<ApplicationInstance>({
        name: 'op-applicationinstances',
        listerWatcher: lw.instances,
        ...common,
      })
    : factory.informer<ApplicationInstance>(res(APPLICATION_INSTANCE), scope);
  const roleBindings = lw
    ? new Informer<KubernetesObject>({ name: 'rolebindings', listerWatcher: lw.roleBindings, ...common })
    : factory.informer<KubernetesObject>({ ...rbacRes, plural: 'rolebindings' }, scope);
  const clusterRoleBindings = lw
    ? new Informer<KubernetesObject>({
        name: 'clusterrolebindings',
        listerWatcher: lw.clusterRoleBindings,
        ...common,
      })
    : factory.informer<KubernetesObject>(
        { ...rbacRes, plural: 'clusterrolebindings' },
        { clusterScoped: true },
      );
  const onTarget = indexed(operations, OPERATIONS_BY_TARGET);
  const instancesOfRelease = indexed(instances, INSTANCES_BY_RELEASE);
  const readersOf = indexed(operations, OPERATIONS_BY_PARAMETER_SOURCE);
  // Operations on one target are decided one at a time: the conflict queue reads the others' state.
  const targetLock = new KeyedMutex();

  const access = new AccessCache(deps.reviewer ?? new SelfAccessReviewer(deps.client), { clock });
  const requesters =
    deps.admission &&
    new AccessCache(deps.admission.reviewer ?? new SubjectAccessReviewer(deps.client), { clock });
  const discovery = new EngineDiscovery(deps.client, clock);
  const opMetrics = new OperationMetrics(deps.metrics.registry, () => operations.list());
  const watcherDeps = {
    kc: deps.kc,
    client: deps.client,
    mapper: deps.mapper,
    ...common,
    ...(lw?.other ? { listerWatcher: lw.other } : {}),
    // Velero's children live in its own namespace; every other engine's in the Operation's.
    ...(deps.namespaces?.length
      ? {
          childNamespaces: (apiVersion: string) =>
            apiVersion.startsWith('velero.io/') ? [veleroNamespace] : (deps.namespaces ?? []),
        }
      : {}),
  };
  // Assigned below; the watchers call back into the controller's queue.
  let controller: Controller;
  const childWatcher = new ChildWatcher(watcherDeps, (key) => controller.enqueue(key));
  const nameWatcher = new NameWatcher(watcherDeps, (kind: NamedKind, ns: string, name: string) => {
    // Wake every Operation of the namespace that still waits: the cheap, always-correct mapping.
    for (const op of operations.list(ns)) if (waiting(op)) controller.enqueue(objectKey(op));
    log.debug({ kind, namespace: ns, name }, 'waited-for object changed');
  });
  /** When this replica first saw an attempt fail: `<uid>/<attempt>` → ms. */
  const failureSeen = new Map<string, number>();
  // Status writes go through the runtime Client: the cache shows what this replica wrote until the watch
  // does, so events and metrics fire once on a lagging cache and the conflict queue sees the other
  // Operations' latest state (runtime/pending-writes.ts).
  const statusClient = new Client({ client: deps.client, mapper: deps.mapper, cache: factory });

  /** spec.parameters after parametersFrom and the template's defaults; {} when they do not resolve (decide reports that). */
  function parametersOf(op: Operation): Record<string, unknown> {
    // The resolution decide materializes with: parametersFrom may supply backupName or configMapName.
    const ns = op.metadata.namespace ?? '';
    const ops = operations.list(ns);
    const r = resolveRequest(op, templates(), ops, new Date(clock.now()));
    return r.ok ? r.parameters : {};
  }

  /**
   * An object the environment needs, or undefined when it does not exist or the operator may not read
   * it: a missing profile rule is reported by RbacProfilePresent before anything is materialized.
   */
  async function readOptional<T>(path: string, signal: AbortSignal): Promise<T | undefined> {
    try {
      return await deps.client.request<T>({ method: 'GET', path, signal });
    } catch (err) {
      if (isNotFound(err) || statusCode(err) === 403) return undefined;
      throw err;
    }
  }

  async function environment(
    op: Operation,
    target: ApplicationInstance | undefined,
    children: readonly KubernetesObject[],
    signal: AbortSignal,
    backup?: RestoreBackup,
  ) {
    const env: EngineEnvironment = {
      veleroNamespace,
      ...(deps.helmImage ? { helmImage: deps.helmImage } : {}),
    };
    if (!target) return env;
    const release = releaseRef(target);
    const ns = op.metadata.namespace ?? '';
    if (op.spec.engine === 'snapshot' && op.spec.type === 'Restore') {
      const facts = await readRestoreFacts(
        deps.client,
        ns,
        { release: release.name, withSnapshots: mayMaterialize(op, children) },
        signal,
      );
      if (facts) env.restore = facts;
    } else if (op.spec.engine === 'volsync' || op.spec.engine === 'snapshot') {
      const list = await deps.client.request<{ items?: KubernetesObject[] }>({
        method: 'GET',
        path: resourcePath({ group: '', version: 'v1', plural: 'persistentvolumeclaims', namespace: ns }),
        query: { labelSelector: `${LABEL_HELM_INSTANCE}=${release.name}` },
        signal,
      });
      env.pvcs = (list.items ?? []).map((p) => p.metadata?.name ?? '').sort();
    }
    // What the Migration runs is read only when a child may be made (not started yet, or a retry):
    // the release record is a Secret, and a running sequence needs nothing more from it.
    if (op.spec.engine === 'helmHookJob' && mayMaterialize(op, children)) {
      const name = migrationConfigMapName({ parameters: parametersOf(op) });
      if (name) {
        const cm = await readOptional<{ data?: Record<string, string> }>(
          resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: ns }, name),
          signal,
        );
        // Parsed by the adapter, as untrusted text: a broken one ends the Operation with a condition.
        const text = cm?.data?.[MIGRATION_CONFIGMAP_KEY];
        if (text) env.migrationJobYaml = text;
      } else if (release.namespace === ns) {
        env.releaseHooks = await readReleaseHooks(deps.client, ns, release.name, signal);
      }
    }
    // The WorkflowTemplate's own ServiceAccounts (workflow.ts refuses those outside the template's list).
    // A ClusterWorkflowTemplate is the platform's, reached only through a template that allows it.
    const wfRef = op.spec.engine === 'workflow' ? parametersOf(op).workflowTemplateRef : undefined;
    if (
      wfRef !== null &&
      typeof wfRef === 'object' &&
      !Array.isArray(wfRef) &&
      typeof (wfRef as { name?: unknown }).name === 'string' &&
      (wfRef as { clusterScope?: unknown }).clusterScope !== true &&
      mayMaterialize(op, children)
    ) {
      const wft = await readOptional<unknown>(
        resourcePath(
          { group: 'argoproj.io', version: 'v1alpha1', plural: 'workflowtemplates', namespace: ns },
          (wfRef as { name: string }).name,
        ),
        signal,
      );
      if (wft) env.workflowTemplateServiceAccounts = workflowTemplateServiceAccounts(wft);
    }
    // A helm Upgrade's release record as it is now: where its rollback goes, and whether a stopped runner
    // left the release pending (helm-rollback.ts).
    if (op.spec.engine === 'helm' && op.spec.type === 'Upgrade' && release.namespace === ns) {
      const state = await readReleaseState(deps.client, ns, release.name, signal);
      if (state) env.helmRelease = state;
      const jobs = await readHookJobs(deps.client, ns, release.name, signal);
      if (jobs) env.helmHookJobs = jobs;
    }
    if (backup) env.veleroBackup = backup;
    return env;
  }

  /**
   * A velero Restore's Backup: the one parameters.backupName names (resolved only for this engine: it scans
   * the namespace's Operations), else for spec.source the newest Completed Backup of the instance made for
   * the source namespace, listed in Velero's namespace (restore-source.ts).
   */
  async function readRestoreBackup(op: Operation, signal: AbortSignal): Promise<RestoreBackup | undefined> {
    const backups = { group: 'velero.io', version: 'v1', plural: 'backups', namespace: veleroNamespace };
    const backupName = parametersOf(op).backupName;
    if (typeof backupName === 'string') {
      const backup = await readOptional<KubernetesObject>(resourcePath(backups, backupName), signal);
      return backup && asRestoreBackup(backup);
    }
    if (!op.spec.source) return undefined;
    const source = sourceNamespace(op);
    const list = await deps.client.request<{ items?: KubernetesObject[] }>({
      method: 'GET',
      path: resourcePath(backups),
      query: {
        labelSelector: `${LABEL_OPERATION_NAMESPACE}=${source},${LABEL_INSTANCE}=${op.spec.targetRef.name}`,
      },
      signal,
    });
    return newestBackup(list.items ?? [], source, op.spec.targetRef.name);
  }

  async function gatherFacts(
    ctx: ReconcileContext,
    op: Operation,
    instance: ApplicationInstance | undefined,
    adapter: EngineAdapter | undefined,
    absentTarget?: PreconditionFacts['absentTarget'],
  ): Promise<PreconditionFacts> {
    const target = instance ?? absentTarget?.recorded;
    const ns = op.metadata.namespace ?? '';
    const now = new Date(clock.now());
    const ops = operations.list(ns);
    // The same resolution evaluatePreconditions makes: parameters read through parametersFrom name
    // Secrets and ServiceAccounts too.
    const resolved = resolveRequest(op, templates(), ops, now);
    let rbac: PreconditionFacts['rbac'] = { allowed: true };
    const secrets = new Set<string>();
    const serviceAccounts = new Set<string>();
    const keep: string[] = [];
    if (resolved.ok && target) {
      rbac = await access.checkProfile(
        resolved.template.rbacProfile,
        { target: ns, velero: veleroNamespace },
        ctx.signal,
      );
      const required = requiredObjects(resolved.template, resolved.parameters);
      for (const [kind, names, into] of [
        ['secrets', required.secrets, secrets],
        ['serviceaccounts', required.serviceAccounts, serviceAccounts],
      ] as const) {
        for (const name of names) {
          keep.push(NameWatcher.id(kind, ns, name));
          if (await nameWatcher.exists(ctx.key, kind, ns, name, ctx.signal)) into.add(name);
        }
      }
    }
    nameWatcher.release(ctx.key, keep);
    const admission = await admissionFacts(
      op,
      resolved.ok && target ? resolved.policy : undefined,
      ctx.signal,
    );
    const catalogId = target?.spec.appRef?.catalogId;
    const app = catalogId ? deps.templates?.catalog?.().applications[catalogId] : undefined;
    const engine = resolved.ok && target && adapter ? await discovery.check(adapter, ctx.signal) : undefined;
    const release = target && releaseRef(target);
    const claimant =
      target && release && releaseClaimant(target, instancesOfRelease(release.namespace, release.name));
    return {
      now,
      target: instance,
      ...(claimant ? { claimant } : {}),
      ...(absentTarget ? { absentTarget } : {}),
      rbac,
      operations: ops,
      secrets,
      serviceAccounts,
      ...(app?.maintenanceWindow ? { applicationWindow: app.maintenanceWindow } : {}),
      ...(engine ? { engine } : {}),
      ...(admission ? { admission } : {}),
    };
  }

  /**
   * The admission record, then the type verb of whoever asked for the current re-run (reconcile) value and
   * (once the request resolves on an existing target) the stamped creator's type verb and the approver's
   * approve verb, reviewed through the requester cache.
   */
  async function admissionFacts(
    op: Operation,
    policy: { requiresApproval: boolean } | undefined,
    signal: AbortSignal,
  ): Promise<AdmissionFacts | undefined> {
    if (!deps.admission || !requesters) return undefined;
    const { keys, self } = deps.admission;
    const verified = verifyStamps(op, (id) => keys.find(id));
    if (!verified.ok) return verified;
    const { stamps } = verified;
    const ns = op.metadata.namespace ?? '';
    const target = op.spec.targetRef.name;
    const review = async (user: string, groups: readonly string[], verb: string) => ({
      user,
      verb,
      allowed: await requesters.instanceAllowed({ user, groups }, ns, verb, target, signal),
    });
    const asked = stamps.reconcile;
    const rerun = asked ? await review(asked.requestedBy, asked.requesterGroups, typeVerb(op)) : undefined;
    const reviewed = { ok: true as const, stamps, ...(rerun ? { rerun } : {}) };
    if (!policy) return reviewed;
    const requester = (await carriesSchedulerAuthority(op, stamps.createdBy, self))
      ? undefined
      : await review(stamps.createdBy, stamps.creatorGroups, typeVerb(op));
    const approver =
      policy.requiresApproval && stamps.approvedBy !== undefined
        ? await review(stamps.approvedBy, stamps.approverGroups ?? [], 'approve')
        : undefined;
    return { ...reviewed, ...(requester ? { requester } : {}), ...(approver ? { approver } : {}) };
  }

  /** The recorded children as they are now, and the first one that is no longer the object recorded. */
  async function readChildren(op: Operation, adapter: EngineAdapter | undefined, signal: AbortSignal) {
    const refs = op.status?.childRefs?.length
      ? op.status.childRefs
      : op.status?.childRef
        ? [op.status.childRef]
        : [];
    const out: KubernetesObject[] = [];
    let conflict: string | undefined;
    for (const ref of refs) {
      const kind = adapter?.childKinds.find((k) => k.apiVersion === ref.apiVersion && k.kind === ref.kind);
      const child = await childWatcher.get(ref, kind, signal);
      if (!child) continue;
      conflict ??= childConflict(op, { ...child, apiVersion: ref.apiVersion, kind: ref.kind }, ref);
      out.push(child);
    }
    return { children: out, ...(conflict ? { conflict } : {}) };
  }

  /**
   * Creates the decided children, or adopts those that already exist AND prove to be this Operation's
   * (adoption.ts): a crash between creating and recording them must not make a second child, and an
   * object someone else made under a child's name must never stand in for one. Every existing child is
   * checked before anything is created, so a conflict leaves no half-created set. Returns the refs
   * with uids, or the conflict.
   */
  async function createChildren(
    op: Operation,
    children: ChildManifest[],
    adapter: EngineAdapter,
    signal: AbortSignal,
  ): Promise<{ refs: ChildRef[] } | { conflict: string }> {
    const kindOf = (child: ChildManifest) => {
      const kind = adapter.childKinds.find((k) => k.apiVersion === child.apiVersion && k.kind === child.kind);
      if (kind) childWatcher.ensure(kind);
      return kind;
    };
    const refOfManifest = (child: ChildManifest) => ({
      apiVersion: child.apiVersion,
      kind: child.kind,
      name: child.metadata.name,
      namespace: child.metadata.namespace,
    });
    const lookup = async (child: ChildManifest) => {
      const found = await childWatcher.get(refOfManifest(child), kindOf(child), signal);
      return found && { ...found, apiVersion: child.apiVersion, kind: child.kind };
    };
    // One child: its POST is the check (AlreadyExists leads to the same read and proof below), so only
    // the cache is asked first; a read before every create was a large share of the requests an Operation
    // waited on to start (bench operations; docs/performance.md). Several: every one is read before any is
    // created.
    const only = children.length === 1 ? children[0] : undefined;
    const onlyKind = only && kindOf(only);
    const cached = only && onlyKind && childWatcher.cached(refOfManifest(only), onlyKind);
    const existing =
      only && onlyKind
        ? [cached ? { ...cached, apiVersion: only.apiVersion, kind: only.kind } : undefined]
        : await Promise.all(children.map(lookup));
    for (const found of existing) {
      const conflict = found && childConflict(op, found);
      if (conflict) return { conflict };
    }
    const refs: ChildRef[] = [];
    for (const [i, child] of children.entries()) {
      let obj = existing[i];
      if (!obj) {
        try {
          obj = { ...(await createObject(child, signal)), apiVersion: child.apiVersion, kind: child.kind };
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
          // Made since the lookup: by us (a stale cache) or by someone else; the same proof decides.
          // Gone again already: the queue retries the whole reconcile.
          obj = await lookup(child);
          if (!obj) throw err;
          const conflict = childConflict(op, obj);
          if (conflict) return { conflict };
        }
      }
      refs.push(refOf(obj));
    }
    return { refs };
  }

  /** POST, never apply: an apply would merge into an object someone else made under the child's name. */
  async function createObject(child: ChildManifest, signal: AbortSignal): Promise<KubernetesObject> {
    const info = await deps.mapper.resourceFor(child.apiVersion, child.kind);
    return deps.client.request<KubernetesObject>({
      method: 'POST',
      path: resourcePath({
        group: info.group,
        version: info.version,
        plural: info.plural,
        ...(info.namespaced ? { namespace: child.metadata.namespace } : {}),
      }),
      query: { fieldManager: deps.writer.fieldManager },
      body: child,
      signal,
    });
  }

  async function performActions(actions: readonly CancelAction[], signal: AbortSignal) {
    for (const a of actions) {
      try {
        if (a.kind === 'patch' && a.subresource) {
          await deps.client.request({
            method: 'PATCH',
            path: await deps.mapper.pathFor(a.child, a.subresource),
            query: { fieldManager: deps.writer.fieldManager },
            body: a.patch,
            contentType: PATCH_TYPES.merge,
            signal,
          });
        } else if (a.kind === 'patch') await deps.writer.mergePatch(a.child as never, a.patch, { signal });
        else if (a.kind === 'delete') {
          const path = await deps.mapper.pathFor(a.child);
          await deps.client.request({
            method: 'DELETE',
            path,
            body: {
              propagationPolicy: a.propagationPolicy ?? 'Background',
              ...(a.uid ? { preconditions: { uid: a.uid } } : {}),
            },
            signal,
          });
        } else if (a.kind === 'ensure') await createObject(a.object, signal);
        else if (a.kind === 'create') await deps.writer.apply(a.object, { signal });
      } catch (err) {
        // A delete whose uid precondition no longer holds (409): that object is already gone.
        if (
          isNotFound(err) ||
          isAlreadyExists(err) ||
          (a.kind === 'delete' && a.uid && statusCode(err) === 409)
        )
          continue;
        throw err;
      }
    }
  }

  /** TTL: delete the Operation; children elsewhere (no owner reference possible) go first. */
  async function deleteOperation(op: Operation, signal: AbortSignal) {
    const refs = op.status?.childRefs ?? (op.status?.childRef ? [op.status.childRef] : []);
    for (const ref of refs) {
      if (ref.namespace === op.metadata.namespace) continue; // garbage-collected with the Operation
      // A velero.io Backup IS the backup: its spec.ttl governs it, and Velero's backup sync would
      // recreate a deleted Backup object from the storage location anyway.
      if (ref.apiVersion.startsWith('velero.io/') && ref.kind === 'Backup') continue;
      try {
        const path = await deps.mapper.pathFor({
          ...ref,
          metadata: { name: ref.name, namespace: ref.namespace },
        });
        await deps.client.request({
          method: 'DELETE',
          path,
          body: { propagationPolicy: 'Background' },
          signal,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    try {
      await deps.client.request({
        method: 'DELETE',
        path: resourcePath(
          {
            group: OPERATION.group,
            version: OPERATION.version,
            plural: OPERATION.plural,
            namespace: op.metadata.namespace ?? '',
          },
          op.metadata.name ?? '',
        ),
        body: { propagationPolicy: 'Background', preconditions: { uid: op.metadata.uid } },
        signal,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  function identity(op: Operation) {
    return {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: { name: op.metadata.name ?? '', namespace: op.metadata.namespace ?? '' },
    };
  }

  function reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const op = operations.getByKey(ctx.key);
    if (!op) return reconcileLocked(ctx);
    return targetLock.run(keyOf(op.metadata.namespace, op.spec.targetRef.name), () => reconcileLocked(ctx));
  }

  async function reconcileLocked(ctx: ReconcileContext): Promise<ReconcileResult> {
    const op = operations.getByKey(ctx.key);
    if (!op) {
      nameWatcher.release(ctx.key);
      return {};
    }
    if (op.metadata.deletionTimestamp) {
      nameWatcher.release(ctx.key);
      return {};
    }
    const uid = op.metadata.uid ?? '';
    const adapter = deps.adapterFor(op.spec.engine);
    const target = instances.get(op.spec.targetRef.name, op.metadata.namespace);
    // Paused target: decide only records it, so nothing is looked up (and no child is read).
    const paused = isPaused(target) && !isTerminalPhase(op.status?.phase);
    const waits = needsPreconditions(op) && !paused;
    // A velero Restore's Backup; for one from spec.source whose instance is gone, the instance it recorded.
    const backup =
      op.spec.engine === 'velero' &&
      op.spec.type === 'Restore' &&
      !isTerminalPhase(op.status?.phase) &&
      !paused
        ? await readRestoreBackup(op, ctx.signal)
        : undefined;
    const absent = !target && op.spec.source && waits ? recordedInstance(op, backup) : undefined;
    const facts = waits ? await gatherFacts(ctx, op, target, adapter, absent) : undefined;
    if (!facts) nameWatcher.release(ctx.key);
    const { children, conflict: replaced } = paused
      ? { children: [] }
      : await readChildren(op, adapter, ctx.signal);
    const pods =
      adapter?.podOutcomeContainer && !isTerminalPhase(op.status?.phase)
        ? await readPodOutcomes(deps.client, children, adapter.podOutcomeContainer, ctx.signal)
        : undefined;
    const attemptKey = `${uid}/${op.status?.attempts ?? 0}`;
    const env =
      (isTerminalPhase(op.status?.phase) && !facts) || paused
        ? { veleroNamespace }
        : await environment(op, target ?? absent?.recorded, children, ctx.signal, backup);
    const seen = failureSeen.get(attemptKey);
    let d: Decision = decide({
      op,
      now: clock.now(),
      templates: templates(),
      ...(facts ? { facts } : {}),
      ...(target ? { target } : {}),
      adapter,
      env,
      children,
      ...(pods ? { pods } : {}),
      ...(seen !== undefined ? { failureSeenAt: seen } : {}),
      ...(deps.graceMs !== undefined ? { graceMs: deps.graceMs } : {}),
      ...(deps.engineRecheckMs !== undefined ? { engineRecheckMs: deps.engineRecheckMs } : {}),
    });
    if (d.failureSeen) failureSeen.set(attemptKey, clock.now());

    let status: OperationStatus = d.status;
    const conflicted = (message: string) => {
      status = childConflictStatus(op, d.status, message, clock.now());
      d = { status, events: [{ type: 'Warning', reason: Reason.ChildConflict, note: message }] };
    };
    if (replaced && !isTerminalPhase(op.status?.phase)) conflicted(replaced);
    else if (d.create && adapter) {
      if (d.prepare) await performActions(d.prepare, ctx.signal);
      try {
        const made = await createChildren(op, d.create, adapter, ctx.signal);
        if ('conflict' in made) conflicted(made.conflict);
        else status = { ...status, childRef: made.refs[0]!, childRefs: made.refs };
      } catch (err) {
        if (!isInvalid(err)) throw err;
        // The API server refuses the manifest: a permanent problem of this request.
        const message = `the API server refused the engine child: ${err instanceof Error ? err.message : String(err)}`;
        status = failedStatus(op, 'InvalidParameters', message, clock.now());
        d = { ...d, events: [{ type: 'Warning', reason: 'InvalidParameters', note: message }] };
      }
    }
    if (d.cancel && d.cancel.length > 0) await performActions(d.cancel, ctx.signal);
    if (d.actions && d.actions.length > 0) await performActions(d.actions, ctx.signal);
    if (d.deleteOperation) {
      ctx.log.info('ttlSecondsAfterFinished passed: deleting the Operation');
      await deleteOperation(op, ctx.signal);
      return {};
    }
    await statusClient.status().applyIfChanged({ ...identity(op), status: op.status }, status, {
      signal: ctx.signal,
    });
    for (const e of d.events) await deps.events.event(op, e.type, e.reason, e.note);
    if (status.phase !== op.status?.phase) {
      ctx.log.info({ from: op.status?.phase, to: status.phase }, 'phase changed');
      if (isTerminalPhase(status.phase)) {
        const start = Date.parse(String(status.startedAt ?? op.metadata.creationTimestamp ?? ''));
        const end = Date.parse(status.finishedAt ?? '');
        opMetrics.finished(
          op,
          status.phase!,
          Number.isNaN(start) || Number.isNaN(end) ? undefined : (end - start) / 1000,
        );
        for (const k of [...failureSeen.keys()]) if (k.startsWith(`${uid}/`)) failureSeen.delete(k);
      }
    }
    if (d.reconcileHandled !== undefined) {
      await deps.writer.mergePatch(identity(op), {
        metadata: { annotations: { [ANNOTATION_RECONCILE_HANDLED]: d.reconcileHandled } },
      });
    }
    return d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {};
  }

  controller = new Controller({
    name: OPERATION_CONTROLLER_NAME,
    reconcile,
    clock,
    logger: deps.logger,
    metrics: deps.metrics,
    ...(deps.workers ? { workers: deps.workers } : {}),
  });

  // The Operation itself, plus, when one runs, ends or goes away, the queue of its target (which also
  // holds those waiting for a dependency on it) and those reading its outputs through operationRef.
  controller.watch(operations, {
    map: (o) => {
      const keys = [objectKey(o)];
      if (!waiting(o) || o.metadata.deletionTimestamp) {
        const ns = o.metadata.namespace ?? '';
        const queue = waitingQueue(onTarget(ns, o.spec.targetRef.name), ns, o.spec.targetRef.name);
        keys.push(...queue.map((q) => objectKey(q)));
        const readers = readersOf(ns, o.metadata.name ?? '').filter(waiting);
        keys.push(...readers.map((r) => objectKey(r)));
      }
      return keys;
    },
  });
  controller.watch(instances, {
    map: (i) =>
      onTarget(i.metadata.namespace, i.metadata.name ?? '')
        .filter((o) => waiting(o) || isRunning(o))
        .map((o) => objectKey(o)),
  });
  const onBinding = (ns: string | undefined) => {
    // A grant in the Velero namespace (or cluster-wide) can unblock Operations of every namespace.
    const everywhere = ns === undefined || ns === veleroNamespace;
    access.invalidate(everywhere ? undefined : ns);
    // A revoked verb counts from its binding's watch event on.
    requesters?.invalidate(ns === undefined ? undefined : ns);
    return operations
      .list(everywhere ? undefined : ns)
      .filter((o) => waiting(o) && rbacMissing(o))
      .map((o) => objectKey(o));
  };
  controller.watch(roleBindings, { map: (b) => onBinding(b.metadata?.namespace ?? '') });
  controller.watch(clusterRoleBindings, { map: () => onBinding(undefined) });
  deps.templates?.onChange?.(() => {
    for (const o of operations.list()) if (waiting(o)) controller.enqueue(objectKey(o));
  });

  const runnable = {
    name: 'operation-on-demand-informers',
    needLeaderElection: true,
    async start(signal: AbortSignal) {
      await new Promise<void>((ok) => {
        if (signal.aborted) ok();
        else signal.addEventListener('abort', () => ok(), { once: true });
      });
      await Promise.all([childWatcher.stop(), nameWatcher.stop()]);
    },
  };

  return {
    controller,
    informers: [
      operations as unknown as Informer<KubernetesObject>,
      instances as unknown as Informer<KubernetesObject>,
      roleBindings,
      clusterRoleBindings,
    ],
    runnable,
    nameWatcher,
    childWatcher,
    access,
  };
}

function failedStatus(op: Operation, reason: string, message: string, now: number): OperationStatus {
  const at = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const gen = op.metadata.generation;
  const cond = (type: string, status: 'True' | 'False') => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: at,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
  });
  return {
    ...(op.status ?? {}),
    phase: 'Failed',
    finishedAt: at,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
    conditions: [cond(CONDITION_ACCEPTED, 'False'), cond('Succeeded', 'False')],
  };
}
