// RbacProfilePresent: SelfSubjectAccessReviews, as the operator, of every rule and verb of a profile in
// the namespaces it applies in. Results are cached briefly (30 s) so a queue of waiting Operations does
// not flood the API server; a RoleBinding or ClusterRoleBinding change invalidates the namespace (or
// everything) at once, so a grant takes effect on its watch event rather than after the cache expires.
// A failed review is a transient error (thrown): the Operation is retried with backoff, never failed.
// The same cache, with a SubjectAccessReviewer, keeps the reviews of stamped requesters (admitted.ts).

import type { Clock, KubeClient } from '@vworkspace/runtime';
import { realClock } from '@vworkspace/runtime';
import { APPS_GROUP, PLURAL_APPLICATION_INSTANCES } from '../api/constants.ts';
import { type AccessAttributes, profileChecks, rbacProfile } from '../rbac/profiles.ts';
import type { RbacResult } from './preconditions.ts';

export const ACCESS_CACHE_TTL_MS = 30_000;

/** A review's attributes: the operator's own access, or (with `subject`) a stamped user's on one object. */
export interface ReviewAttributes extends AccessAttributes {
  name?: string;
  subject?: { user: string; groups: readonly string[] };
}

export interface AccessReviewer {
  /** May the operator (or `a.subject`) do this? Throws when the review cannot be made. */
  allowed(a: ReviewAttributes, signal?: AbortSignal): Promise<boolean>;
}

/**
 * Posts SubjectAccessReviews for the subject the attributes name (the stamped creator or approver of an
 * Operation, admitted.ts): user and groups as the webhook saw them.
 */
export class SubjectAccessReviewer implements AccessReviewer {
  readonly #client: KubeClient;
  constructor(client: KubeClient) {
    this.#client = client;
  }
  async allowed(a: ReviewAttributes, signal?: AbortSignal): Promise<boolean> {
    if (!a.subject) throw new Error('a SubjectAccessReview needs a subject');
    const res = await this.#client.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: a.subject.user,
          groups: [...a.subject.groups],
          resourceAttributes: {
            namespace: a.namespace,
            group: a.group,
            resource: a.resource,
            verb: a.verb,
            ...(a.name !== undefined ? { name: a.name } : {}),
          },
        },
      },
      timeoutMs: 5_000,
      ...(signal ? { signal } : {}),
    });
    return res?.status?.allowed === true;
  }
}

/** Posts SelfSubjectAccessReviews with the operator's own credentials. */
export class SelfAccessReviewer implements AccessReviewer {
  readonly #client: KubeClient;
  constructor(client: KubeClient) {
    this.#client = client;
  }
  async allowed(a: AccessAttributes, signal?: AbortSignal): Promise<boolean> {
    // A subresource rule (pods/log) is reviewed as resource + subresource.
    const [resource, subresource] = a.resource.split('/');
    const res = await this.#client.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            namespace: a.namespace,
            group: a.group,
            resource,
            ...(subresource ? { subresource } : {}),
            verb: a.verb,
          },
        },
      },
      timeoutMs: 5_000,
      ...(signal ? { signal } : {}),
    });
    return res?.status?.allowed === true;
  }
}

export class AccessCache {
  readonly #reviewer: AccessReviewer;
  readonly #clock: Clock;
  readonly #ttl: number;
  readonly #cache = new Map<string, { allowed: boolean; at: number }>();
  readonly #inFlight = new Map<string, Promise<boolean>>();
  /** Bumped by invalidate(): a review begun before must not refill the cache. */
  #generation = 0;

  constructor(reviewer: AccessReviewer, opts: { clock?: Clock; ttlMs?: number } = {}) {
    this.#reviewer = reviewer;
    this.#clock = opts.clock ?? realClock;
    this.#ttl = opts.ttlMs ?? ACCESS_CACHE_TTL_MS;
  }

  /** Forget results in `namespace`, or all of them (a ClusterRoleBinding changed). */
  invalidate(namespace?: string): void {
    this.#generation++;
    if (namespace === undefined) {
      this.#cache.clear();
      this.#inFlight.clear();
      return;
    }
    for (const m of [this.#cache, this.#inFlight])
      for (const k of m.keys()) if (k.startsWith(`${namespace}|`)) m.delete(k);
  }

  async allowed(a: ReviewAttributes, signal?: AbortSignal): Promise<boolean> {
    const who = a.subject ? JSON.stringify([a.subject.user, [...a.subject.groups].sort()]) : '';
    const key = `${a.namespace}|${a.group}|${a.resource}|${a.verb}|${a.name ?? ''}|${who}`;
    const now = this.#clock.now();
    const hit = this.#cache.get(key);
    if (hit && now - hit.at < this.#ttl) return hit.allowed;
    // Workers that miss together share one review (a burst of Operations in one namespace asked the
    // same questions once per worker).
    let pending = this.#inFlight.get(key);
    if (!pending) {
      const generation = this.#generation;
      const review = this.#reviewer.allowed(a, signal).then((allowed) => {
        // An invalidation while the review ran makes its answer stale: use it, but do not keep it.
        if (generation === this.#generation) this.#cache.set(key, { allowed, at: now });
        return allowed;
      });
      const settled = () => {
        if (this.#inFlight.get(key) === review) this.#inFlight.delete(key);
      };
      review.then(settled, settled);
      this.#inFlight.set(key, review);
      pending = review;
    }
    return pending;
  }

  /**
   * May `subject` do `verb` on the ApplicationInstance `name`? Asked for every instance of the namespace
   * first: RBAC grants most verbs namespace-wide, and that one answer (kept like the others) then serves
   * every Operation of the namespace, whatever its target; only a "no" asks for the one instance.
   */
  async instanceAllowed(
    subject: NonNullable<ReviewAttributes['subject']>,
    namespace: string,
    verb: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const a = { namespace, group: APPS_GROUP, resource: PLURAL_APPLICATION_INSTANCES, verb, subject };
    return (await this.allowed(a, signal)) || this.allowed({ ...a, name }, signal);
  }

  /** Every check of `profileId` for an Operation in `namespace`. */
  async checkProfile(
    profileId: string,
    namespaces: { target: string; velero: string },
    signal?: AbortSignal,
  ): Promise<RbacResult> {
    const profile = rbacProfile(profileId);
    if (!profile) return { allowed: false, unknownProfile: true };
    const checks = profileChecks(profile, namespaces);
    const results = await Promise.all(checks.map((c) => this.allowed(c, signal)));
    const missing = checks.filter((_, i) => !results[i]);
    return missing.length === 0 ? { allowed: true } : { allowed: false, missing };
  }
}
