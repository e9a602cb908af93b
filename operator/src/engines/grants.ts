// The reconciler's side of the template grants (catalog/grants.ts): an Operation that reached the
// reconciler without the webhook (created while it was not registered, or in a namespace it does not
// judge) gets nothing its template does not allow. An Operation the webhook judged carries its
// created-by stamp, which only the webhook writes: its ServiceAccount was either allowed by the template
// or one the requester could run pods as themselves, so that one denial is the webhook's to make.
import { ANNOTATION_CREATED_BY } from '../api/annotations.ts';
import { grantDenials } from '../catalog/grants.ts';
import type { MaterializeInput, MaterializeResult } from './types.ts';

export function refuseUngranted(input: MaterializeInput): MaterializeResult | undefined {
  const judged = input.op.metadata.annotations?.[ANNOTATION_CREATED_BY] !== undefined;
  const denial = grantDenials(input.template, input.parameters).find(
    (d) => !(judged && d.serviceAccount !== undefined),
  );
  if (!denial) return undefined;
  return {
    ok: false,
    reason: 'NotAllowedByTemplate',
    message: `spec.parameters.${denial.parameter}: ${denial.message}`,
  };
}
