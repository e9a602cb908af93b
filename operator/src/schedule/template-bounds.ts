// A CronOperation's or WatchOperation's operationTemplate past the bounds the webhook puts on parameters
// (catalog/parameters-limits.ts). The webhook refuses one; one stored where it did not run (a namespace it
// does not select) must not reach the code that makes an Operation of it for each run, which copies and
// serialises the template (structuredClone, JSON) one call per nesting level and runs out of stack. The
// scheduler says so in its Ready condition instead and creates nothing. Pure.
import { checkParametersLimits } from '../catalog/parameters-limits.ts';

/** The Ready reason of a scheduler whose template is past the bounds. */
export const INVALID_OPERATION_TEMPLATE = 'InvalidOperationTemplate';

/** What is wrong with the template's parameters, as a Ready message, or undefined when within bounds. */
export function templateBoundsProblem(
  templateSpec: { parameters?: unknown } | undefined,
): string | undefined {
  const limits = checkParametersLimits(templateSpec?.parameters ?? {});
  if (limits.ok) return undefined;
  return `spec.operationTemplate.spec.parameters: ${limits.message}; no Operations are created until it is fixed`;
}
