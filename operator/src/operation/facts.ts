// The facts the preconditions of an Operation that has not started are judged on (PreconditionFacts):
// the profile's access reviews, the waited-for Secrets and ServiceAccounts (watched by name while it
// waits), the engine's CRDs, the release's claimant, the application's window and the admission record
// with its re-reviewed requester and approver. Reads and reviews only; preconditions.ts judges.
import type { ReconcileContext } from '@vworkspace/runtime';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { typeAccessVerb } from '../api/enums.ts';
import type { Operation } from '../api/operation.ts';
import { schedulerOwner } from '../api/scheduler-owner.ts';
import type { Catalog } from '../catalog/catalog-schema.ts';
import { requiredObjects } from '../catalog/parameters.ts';
import type { Template } from '../catalog/template.ts';
import type { EngineAdapter } from '../engines/types.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import { verifyStamps } from '../identity/stamp.ts';
import { releaseClaimant } from '../release/claim.ts';
import { releaseRef } from '../release/ref.ts';
import type { AccessCache } from './access.ts';
import type { AdmissionFacts } from './admitted.ts';
import type { EngineDiscovery } from './engine-install.ts';
import { type PreconditionFacts, resolveRequest } from './preconditions.ts';
import { NameWatcher } from './watchers.ts';

/** The admission record's check (admitted.ts): the signing keys and the operator's own user name. */
export interface AdmissionCheck {
  keys: SigningKeySource;
  /**
   * The operator's own user name (SelfSubjectReview; undefined while unknown): an Operation carries a
   * scheduler's authority only when the operator created it for that scheduler.
   */
  self: () => Promise<string | undefined>;
  /** Reviews of the stamped requester and approver (SubjectAccessReview). */
  requesters: AccessCache;
}

export interface FactsOptions {
  /**
   * The cached Operations deciding about `op` reads: those on its target (conflicts, dependencies,
   * parametersFrom `latest`) and those its parametersFrom names (operationRef).
   */
  operations: (op: Operation) => readonly Operation[];
  /** The cached instances of a release (namespace, name). */
  instancesOfRelease: (namespace: string, name: string) => ApplicationInstance[];
  templates: () => readonly Template[];
  catalog?: (() => Catalog) | undefined;
  now: () => number;
  /** The operator's own access (the rbacProfile's rules). */
  access: AccessCache;
  names: NameWatcher;
  discovery: EngineDiscovery;
  veleroNamespace: string;
  /** Unset: the admission record is not checked (controller tests without webhooks). */
  admission?: AdmissionCheck | undefined;
}

export class PreconditionReader {
  readonly #o: FactsOptions;

  constructor(opts: FactsOptions) {
    this.#o = opts;
  }

  async read(
    ctx: ReconcileContext,
    op: Operation,
    instance: ApplicationInstance | undefined,
    adapter: EngineAdapter | undefined,
    absentTarget?: PreconditionFacts['absentTarget'],
  ): Promise<PreconditionFacts> {
    const o = this.#o;
    const target = instance ?? absentTarget?.recorded;
    const ns = op.metadata.namespace ?? '';
    const now = new Date(o.now());
    const ops = o.operations(op);
    // The same resolution evaluatePreconditions makes: parameters read through parametersFrom name
    // Secrets and ServiceAccounts too.
    const resolved = resolveRequest(op, o.templates(), ops, now);
    let rbac: PreconditionFacts['rbac'] = { allowed: true };
    const secrets = new Set<string>();
    const serviceAccounts = new Set<string>();
    const keep: string[] = [];
    if (resolved.ok && target) {
      rbac = await o.access.checkProfile(
        resolved.template.rbacProfile,
        { target: ns, velero: o.veleroNamespace },
        ctx.signal,
      );
      const required = requiredObjects(resolved.template, resolved.parameters);
      for (const [kind, names, into] of [
        ['secrets', required.secrets, secrets],
        ['serviceaccounts', required.serviceAccounts, serviceAccounts],
      ] as const) {
        for (const name of names) {
          keep.push(NameWatcher.id(kind, ns, name));
          if (await o.names.exists(ctx.key, kind, ns, name, ctx.signal)) into.add(name);
        }
      }
    }
    o.names.release(ctx.key, keep);
    const admission = await this.#admission(
      op,
      resolved.ok && target ? resolved.policy : undefined,
      ctx.signal,
    );
    const catalogId = target?.spec.appRef?.catalogId;
    const app = catalogId ? o.catalog?.().applications[catalogId] : undefined;
    const engine =
      resolved.ok && target && adapter ? await o.discovery.check(adapter, ctx.signal) : undefined;
    const release = target && releaseRef(target);
    const claimant =
      target && release && releaseClaimant(target, o.instancesOfRelease(release.namespace, release.name));
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
  async #admission(
    op: Operation,
    policy: { requiresApproval: boolean } | undefined,
    signal: AbortSignal,
  ): Promise<AdmissionFacts | undefined> {
    const check = this.#o.admission;
    if (!check) return undefined;
    const verified = verifyStamps(op, (id) => check.keys.find(id));
    if (!verified.ok) return verified;
    const { stamps } = verified;
    const ns = op.metadata.namespace ?? '';
    const target = op.spec.targetRef.name;
    const review = async (user: string, groups: readonly string[], verb: string) => ({
      user,
      verb,
      allowed: await check.requesters.instanceAllowed({ user, groups }, ns, verb, target, signal),
    });
    const asked = stamps.reconcile;
    const rerun = asked ? await review(asked.requestedBy, asked.requesterGroups, typeVerb(op)) : undefined;
    const reviewed = { ok: true as const, stamps, ...(rerun ? { rerun } : {}) };
    if (!policy) return reviewed;
    const requester = (await carriesSchedulerAuthority(op, stamps.createdBy, check.self))
      ? undefined
      : await review(stamps.createdBy, stamps.creatorGroups, typeVerb(op));
    const approver =
      policy.requiresApproval && stamps.approvedBy !== undefined
        ? await review(stamps.approvedBy, stamps.approverGroups ?? [], 'approve')
        : undefined;
    return { ...reviewed, ...(requester ? { requester } : {}), ...(approver ? { approver } : {}) };
  }
}

/** The type verb an Operation's requester needs on its target (as the webhook asks it). */
function typeVerb(op: Operation): string {
  return typeAccessVerb(op.spec.type);
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
