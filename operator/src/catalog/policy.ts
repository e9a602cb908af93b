// The policy an Operation runs with: its own fields, else the template's defaults, else the built-in
// defaults of DESIGN §2 (requireReady true for the destructive types).
//
// Template policy is a floor where loosening it would hand the requester something RBAC does not:
// `defaults.requiresApproval: true` (and the template's separationOfDuties, which no Operation can set)
// is a second person's consent, so an Operation may ask for approval but never waive it. The other
// fields stay defaults a requester may override either way (docs/security/threat-model.md, "Approval
// floor"): retries, deadlines and TTLs are bounded by the CRD and give nothing that creating more
// Operations would not; requireReady: false is the documented way to operate on a broken release; dryRun
// only ever creates less. The webhook refuses a loosening (policyLoosening); effectivePolicy enforces the
// floor anyway, for Operations admitted while the webhook was not there.

import { type OperationType, REQUIRE_READY_BY_DEFAULT } from '../api/enums.ts';
import type { OperationPolicy } from '../api/operation.ts';
import type { PolicyDefaults } from './template.ts';

export interface EffectivePolicy {
  requireReady: boolean;
  retryLimit: number;
  activeDeadlineSeconds?: number;
  requiresApproval: boolean;
  dryRun: boolean;
  ttlSecondsAfterFinished?: number;
}

export function effectivePolicy(
  type: OperationType,
  policy: OperationPolicy | undefined,
  defaults: PolicyDefaults | undefined,
): EffectivePolicy {
  const p = policy ?? {};
  const d = defaults ?? {};
  const deadline = p.activeDeadlineSeconds ?? d.activeDeadlineSeconds;
  const ttl = p.ttlSecondsAfterFinished ?? d.ttlSecondsAfterFinished;
  return {
    requireReady: p.requireReady ?? d.requireReady ?? REQUIRE_READY_BY_DEFAULT.includes(type),
    retryLimit: p.retryLimit ?? d.retryLimit ?? 0,
    ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
    requiresApproval: d.requiresApproval === true || (p.requiresApproval ?? false),
    dryRun: p.dryRun ?? false,
    ...(ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl }),
  };
}

/** The TTL fields a finished Operation reads, most specific first, the Operation's before its template's. */
const TTL_FIELDS = {
  Succeeded: ['ttlSecondsAfterSucceed', 'ttlSecondsAfterFinished'],
  Unsuccessful: ['ttlSecondsAfterUnsuccessfulCompletion', 'ttlSecondsAfterFinished'],
} as const;

/**
 * Seconds after finishedAt when an Operation that ended in `phase` is deleted: its own phase-specific
 * TTL, its ttlSecondsAfterFinished, then the template's two in the same order (KubeBlocks' names for the
 * specific ones, Kubernetes' Job name for the common one). undefined: kept.
 */
export function ttlSecondsFor(
  phase: 'Succeeded' | 'Failed' | 'Cancelled',
  policy: OperationPolicy | undefined,
  defaults: PolicyDefaults | undefined,
): number | undefined {
  const fields = TTL_FIELDS[phase === 'Succeeded' ? 'Succeeded' : 'Unsuccessful'];
  for (const source of [policy, defaults]) {
    for (const f of fields) {
      const v = source?.[f];
      if (v !== undefined) return v;
    }
  }
  return undefined;
}

/** policy.preconditionDeadlineSeconds, else the template's default; undefined: wait without limit. */
export function preconditionDeadlineSeconds(
  policy: OperationPolicy | undefined,
  defaults: PolicyDefaults | undefined,
): number | undefined {
  return policy?.preconditionDeadlineSeconds ?? defaults?.preconditionDeadlineSeconds;
}

/** A policy field an Operation set looser than its template's floor. */
export interface PolicyLoosening {
  /** Under spec.policy, e.g. `requiresApproval`. */
  field: keyof EffectivePolicy;
  message: string;
}

/** Where `policy` loosens the template's floor (see the header); empty when it does not. */
export function policyLoosening(
  policy: Readonly<Record<string, unknown>> | undefined,
  template: { name: string; defaults?: PolicyDefaults; separationOfDuties?: boolean },
): PolicyLoosening[] {
  if (template.defaults?.requiresApproval === true && policy?.requiresApproval === false) {
    const sod = template.separationOfDuties === true ? ' by someone other than its creator' : '';
    return [
      {
        field: 'requiresApproval',
        message: `Forbidden: template ${template.name} requires approval${sod}; an Operation may ask for approval but not switch it off: leave policy.requiresApproval out (or true) and have the Operation approved with the annotation ops.vworkspace.io/approve: "true"`,
      },
    ];
  }
  return [];
}
