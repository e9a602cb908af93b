// The reconciler's side of the template grants (catalog/grants.ts): an Operation that reached the
// reconciler without the webhook (created while it was not registered, or in a namespace it does not
// judge) gets nothing its template does not allow. An Operation the webhook judged carries its
// created-by stamp, which only the webhook writes: the serviceAccountName it saw in spec.parameters was
// either allowed by the template or one the requester could run pods as themselves, so that one denial
// is the webhook's to make. A name that arrived any other way (spec.parametersFrom) was never judged.
import { ANNOTATION_CREATED_BY } from '../api/annotations.ts';
import { grantDenials } from '../catalog/grants.ts';
import type { MaterializeInput, MaterializeResult } from './types.ts';

export function refuseUngranted(input: MaterializeInput): MaterializeResult | undefined {
  const { op } = input;
  const judged = op.metadata.annotations?.[ANNOTATION_CREATED_BY] !== undefined;
  const seen = op.spec.parameters?.serviceAccountName;
  const denial = grantDenials(input.template, input.parameters).find(
    (d) => !(judged && d.serviceAccount !== undefined && d.serviceAccount === seen),
  );
  if (!denial) return undefined;
  return {
    ok: false,
    reason: 'NotAllowedByTemplate',
    message: `spec.parameters.${denial.parameter}: ${denial.message}`,
  };
}
