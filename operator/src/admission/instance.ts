// Admission of ApplicationInstances: one rule, pure. An instance describes a Helm release in its OWN
// namespace; spec.release.namespace naming another would let whoever may create instances here read that
// namespace's release (status, chart, capabilities) through the operator. Refused at the field.
//
// The webhook is failurePolicy Ignore: the instance controller enforces the same rule for whatever gets
// past admission (Ready=False/ReleaseNamespaceForbidden, nothing read), so the operator being down never
// blocks instances, and the denial here is the early, readable answer.
import { invalid, isRecord, respond } from './decision.ts';
import type { AdmissionRequest, AdmissionResponse } from './review.ts';

export function decideInstance(req: AdmissionRequest): AdmissionResponse {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return respond(req.uid, []);
  const own = req.namespace ?? '';
  const spec = isRecord(req.object) ? req.object.spec : undefined;
  const release = isRecord(spec) ? spec.release : undefined;
  const asked = isRecord(release) ? release.namespace : undefined;
  if (asked === undefined || asked === '' || asked === own) return respond(req.uid, []);
  return respond(req.uid, [
    invalid(
      'spec.release.namespace',
      `Forbidden: ${JSON.stringify(asked)}: an ApplicationInstance describes a release in the instance's own namespace ${own}; leave spec.release.namespace out (or set it to ${own}) and create the instance in the release's namespace`,
      'FieldValueForbidden',
    ),
  ]);
}
