// The policy an Operation runs with: its own fields, else the template's defaults, else the built-in
// defaults of DESIGN §2 (requireReady true for the destructive types).

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
    requiresApproval: p.requiresApproval ?? d.requiresApproval ?? false,
    dryRun: p.dryRun ?? false,
    ...(ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl }),
  };
}
