// The vocabulary every admission decision shares: looked-up facts, problems with field paths, and how
// problems become one AdmissionResponse. Pure: no I/O.

import type { Template } from '../catalog/index.ts';
import type { Lookup } from '../catalog/lookup.ts';
import type { SigningKeySource } from '../identity/signing-key.ts';
import { type AdmissionResponse, allow, deny, type StatusCause } from './review.ts';

export type { Lookup };

/** The ApplicationInstance fields the decisions read. */
export interface TargetInstance {
  name: string;
  labels?: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
  /** Its spec: what a scheduler's `object.spec.*` substitutions read (scheduled.ts). */
  spec?: unknown;
}

/**
 * One SubjectAccessReview the decision needs: may the requester `verb` applicationinstances[/name]
 * (or, with `resource`, another resource of the namespace)?
 */
export interface AccessCheck {
  verb: string;
  /** Unset: every ApplicationInstance of the namespace (WatchOperation targets whichever instance changes). */
  name?: string;
  /**
   * Unset: applicationinstances (apps.vworkspace.io); `operations`: ops.vworkspace.io (parametersFrom);
   * `pods` / `serviceaccounts`: the core group (whether the requester could run pods as a ServiceAccount);
   * `deletebackuprequests` (velero.io) / `volumesnapshots` (snapshot.storage.k8s.io): whether the requester
   * could delete the backups a CronOperation's spec.retention deletes (retention.ts); `secrets` (core): whether
   * the requester may read the Secret a drill's probe gets (probe-secret.ts) or a repository Secret a restore
   * drill reads (repository-access.ts).
   */
  resource?:
    | 'operations'
    | 'pods'
    | 'serviceaccounts'
    | 'deletebackuprequests'
    | 'volumesnapshots'
    | 'secrets';
  /** Unset: the request's namespace. A clone's check is in the namespace its backups come from. */
  namespace?: string;
}

export interface AccessResult {
  allowed: boolean;
  /** The authorizer's reason, if it gave one. */
  reason?: string;
}

/** What a decision needs looked up; the handler fetches exactly this and nothing else. */
export interface Needs {
  /** Name of the ApplicationInstance to read in the request's namespace. */
  target?: string;
  access: AccessCheck[];
  /** The CronOperation/WatchOperation whose authority an Operation the operator creates carries (scheduled.ts). */
  scheduledBy?: { kind: 'CronOperation' | 'WatchOperation'; name: string; uid: string };
  /** Operations of the namespace to read (spec.parametersFrom operationRef). */
  operations?: string[];
}

/** The fields of an Operation that parametersFrom admission reads, as read with the operator's identity. */
export interface SourceOperation {
  name: string;
  type: string;
  engine: string;
  /** spec.template, else status.template. */
  template?: string;
  phase?: string;
  outputs?: Record<string, unknown>;
  dryRun: boolean;
}

export interface Facts {
  /** The effective templates (built-ins merged with the catalog); a failure means "not loaded yet". */
  templates: Lookup<readonly Template[]>;
  /** The target read with the operator's identity: `undefined` value = it does not exist. */
  target?: Lookup<TargetInstance | undefined>;
  /** Results by accessKey(check). A missing entry counts as a transient failure, never as allowed. */
  access: Readonly<Record<string, Lookup<AccessResult>>>;
  /** Needs.scheduledBy as read now (the object; undefined value = it does not exist). */
  scheduledBy?: { claim: NonNullable<Needs['scheduledBy']>; owner: Lookup<unknown> };
  /** The Operations Needs.operations named, by name: `undefined` value = it does not exist. */
  sources?: Readonly<Record<string, Lookup<SourceOperation | undefined>>>;
  /** The key the admission record is signed with (unset: none is written or checked; stamps.ts). */
  signingKeys?: SigningKeySource;
  /** Where velero.io Backups live (a velero CronOperation's spec.retention is checked there); default velero. */
  veleroNamespace?: string;
}

export function accessKey(c: AccessCheck): string {
  return `${c.namespace ? `${c.namespace}|` : ''}${c.resource ? `${c.resource}:` : ''}${c.verb}/${c.name ?? '*'}`;
}

/** invalid → 422, forbidden → 403, retry → 503 (a lookup failed: never admit on a failed lookup). */
export type ProblemKind = 'invalid' | 'forbidden' | 'retry';

export interface Problem {
  field: string;
  message: string;
  kind: ProblemKind;
  /** metav1.CauseType, e.g. FieldValueInvalid. */
  reason: string;
}

export const invalid = (field: string, message: string, reason = 'FieldValueInvalid'): Problem => ({
  field,
  message,
  kind: 'invalid',
  reason,
});
export const forbidden = (field: string, message: string): Problem => ({
  field,
  message,
  kind: 'forbidden',
  reason: 'FieldValueForbidden',
});
export const retry = (field: string, message: string): Problem => ({
  field,
  message: `${message}; this is temporary, retry the request`,
  kind: 'retry',
  reason: 'InternalError',
});

/**
 * One response for all problems. The status code follows the most fundamental problem: a request that
 * is invalid stays invalid whatever the authorizer says, and a lookup failure only matters when nothing
 * else is wrong.
 */
export function respond(
  uid: string,
  problems: readonly Problem[],
  warnings: string[] = [],
): AdmissionResponse {
  if (problems.length === 0) return allow(uid, warnings);
  const causes: StatusCause[] = problems.map((p) => ({
    field: p.field,
    message: p.message,
    reason: p.reason,
  }));
  const kinds = new Set(problems.map((p) => p.kind));
  const res = kinds.has('invalid')
    ? deny(uid, causes, 422, 'Invalid')
    : kinds.has('forbidden')
      ? deny(uid, causes, 403, 'Forbidden')
      : deny(uid, causes, 503, 'ServiceUnavailable');
  return warnings.length > 0 ? { ...res, warnings } : res;
}

// ---- narrowing of untrusted JSON --------------------------------------------------------------

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Structural equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** The string annotations of an object (anything else in metadata.annotations is ignored here). */
export function annotationsOf(obj: unknown): Record<string, string> {
  const meta = isRecord(obj) ? obj.metadata : undefined;
  const ann = isRecord(meta) ? meta.annotations : undefined;
  if (!isRecord(ann)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(ann)) if (typeof v === 'string') out[k] = v;
  return out;
}

/** `metadata.annotations[key]`, the way apimachinery prints a map key in a field path. */
export function annotationPath(key: string): string {
  return `metadata.annotations[${key}]`;
}
