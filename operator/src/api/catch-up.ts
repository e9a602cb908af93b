// CronOperation spec.catchUp: what runs of the slots that came due while the operator was not running
// (docs/adr/0047-catch-up-policy-and-backfill.md). Its own file so the CronOperation schema only gains a field.
import { type Static, Type } from '@sinclair/typebox';
import { cel, StringEnum } from './schema-helpers.ts';

export const CATCH_UP_POLICIES = ['Skip', 'Latest', 'All'] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

/** The most slots policy All creates in one catch-up: a bound on the burst after a long outage. */
export const MAX_CATCH_UP_RUNS = 24;

export const CatchUpSchema = Type.Object(
  {
    policy: StringEnum(CATCH_UP_POLICIES, {
      description:
        'Skip: no slot that came due while the operator was not running runs; the next slot does. Latest (default): only the most recent missed slot runs. All: the most recent maxRuns missed slots run, oldest first, each once. startingDeadlineSeconds still applies; the slots that do not run are recorded in status.missedSlots (reason CatchUpSkipped or StartingDeadlineExceeded). Slots that come due while spec.suspend is true are passed over under every policy.',
      default: 'Latest',
    }),
    maxRuns: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: MAX_CATCH_UP_RUNS,
        description: `Policy All: how many of the most recent missed slots run (1 to ${MAX_CATCH_UP_RUNS}).`,
      }),
    ),
  },
  {
    description:
      'What runs of the slots missed while the operator was down. Unset: Latest (only the most recent missed slot runs).',
    'x-kubernetes-validations': [
      cel(
        "self.policy == 'All' ? has(self.maxRuns) : !has(self.maxRuns)",
        'maxRuns is required with policy All (how many missed slots may run, 1 to 24) and allowed only with it; remove it or set policy: All',
        { fieldPath: '.maxRuns' },
      ),
    ],
  },
);
export type CatchUp = Static<typeof CatchUpSchema>;

/**
 * The CronOperation spec rule for catchUp: All runs several slots of one target at once, which
 * concurrencyPolicy Forbid or Replace and maxConcurrent would skip, cancel or drop again.
 */
export function catchUpAllRule() {
  return cel(
    "!has(self.catchUp) || self.catchUp.policy != 'All' || ((!has(self.concurrencyPolicy) || self.concurrencyPolicy == 'Allow') && !has(self.maxConcurrent))",
    'catchUp.policy All creates several missed slots at once: it needs concurrencyPolicy Allow and no maxConcurrent; use policy Latest with those',
    { fieldPath: '.catchUp.policy' },
  );
}
