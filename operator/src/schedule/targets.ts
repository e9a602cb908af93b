// Which instances a CronOperation creates Operations for: read by the CronOperation controller (whom
// to notify when its plan changes) and by the instance's status (status.nextScheduledRun).
import type { ApplicationInstance, CronOperation } from '../api/index.ts';
import { matchesLabelSelector } from '../catalog/selectors.ts';

/** Does the CronOperation create Operations for `instance` (its fixed target, or its fleet selector)? */
export function cronTargets(cron: CronOperation, instance: ApplicationInstance): boolean {
  if (cron.metadata.namespace !== instance.metadata.namespace) return false;
  const selector = cron.spec.targetSelector;
  if (selector) return matchesLabelSelector(selector, instance.metadata.labels ?? {});
  return cron.spec.operationTemplate.spec.targetRef?.name === instance.metadata.name;
}
