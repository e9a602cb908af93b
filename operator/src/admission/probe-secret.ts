// spec.parameters.probeSecret of a restore drill (ADR 0057 Decision 1). The probe Job gets the Secret as
// its environment (envFrom, by name) and its last log lines reach status.outputs.probeOutput, so naming a
// Secret is reading it: a requester who may create a Verify but may not `get` that Secret could have the
// probe echo it. The requester must therefore pass a SubjectAccessReview `get secrets/<name>` in the
// namespace, with the request's whole userInfo, through the same path as parametersFrom's reads
// (sourceAccess: looked up by the handler, judged by checkAccess). The check is on the parameter, whatever
// the template: any template that declares probeSecret gets it.
//
// Only a name written in the spec is one admission checked, so probeSecret may not come from an
// Operation's parametersFrom (another Operation's outputs) nor from a scheduler's parametersFromTrigger
// (the triggering instance's fields). The Operations a CronOperation creates carry the authority checked
// here when it was created or last edited (scheduled.ts). Pure.
import { parameterOf } from '../catalog/index.ts';
import { type Facts, forbidden, type Problem } from './decision.ts';
import type { SourceAccess } from './parameters-from.ts';
import { checkAccess } from './spec-checks.ts';
import type { OperationSpecView } from './spec-view.ts';

export const PROBE_SECRET = 'probeSecret';

/** The review naming a probe Secret needs, reported at `<base>.parameters.probeSecret`; none without one. */
export function probeSecretAccess(view: OperationSpecView, base: string): SourceAccess[] {
  const name = view.parameters?.[PROBE_SECRET];
  if (typeof name !== 'string' || name === '') return [];
  return [
    {
      check: { verb: 'get', resource: 'secrets', name },
      field: `${base}.parameters.${PROBE_SECRET}`,
      why: `naming Secret ${name} as the probe's environment (the probe's output reaches status; name a Secret you may read, or leave probeSecret out)`,
    },
  ];
}

/** The requester may read the probe Secret, and it is written in the spec, not filled in from elsewhere. */
export function checkProbeSecret(
  view: OperationSpecView,
  base: string,
  user: string,
  namespace: string,
  facts: Pick<Facts, 'access'>,
  /** A scheduler's spec.parametersFromTrigger[].parameter, in order. */
  triggered: readonly string[] = [],
): Problem[] {
  const problems = probeSecretAccess(view, base).flatMap((a) =>
    checkAccess(a.check, user, namespace, a.field, a.why, facts),
  );
  const why = `Forbidden: ${PROBE_SECRET} names the Secret the probe reads, and only a name written in ${base}.parameters.${PROBE_SECRET} is one admission checks you may read: set ${base}.parameters.${PROBE_SECRET}`;
  for (const [i, s] of (view.parametersFrom ?? []).entries()) {
    for (const [j, m] of s.outputs.entries()) {
      if (parameterOf(m) !== PROBE_SECRET) continue;
      const key = m.parameter !== undefined ? 'parameter' : 'output';
      problems.push(forbidden(`${base}.parametersFrom[${i}].outputs[${j}].${key}`, why));
    }
  }
  for (const [i, parameter] of triggered.entries()) {
    if (parameter === PROBE_SECRET)
      problems.push(forbidden(`spec.parametersFromTrigger[${i}].parameter`, why));
  }
  return problems;
}
