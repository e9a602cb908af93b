// ops.vworkspace.io/paused: "true" on an ApplicationInstance, set during maintenance: the operator
// starts nothing on the instance and stops following what runs there until the annotation goes. Shared
// by the Operation controller and the CronOperation/WatchOperation controllers (which create nothing
// for a paused target). Only the exact value "true" pauses, as documented.
import { ANNOTATION_PAUSED } from './annotations.ts';

export function isPaused(
  instance: { metadata?: { annotations?: Record<string, string> } } | undefined,
): boolean {
  return instance?.metadata?.annotations?.[ANNOTATION_PAUSED] === 'true';
}

/** How to resume, for messages. */
export function resumeHint(namespace: string, name: string): string {
  return `remove it to resume: kubectl annotate applicationinstance ${name} -n ${namespace} ${ANNOTATION_PAUSED}-`;
}
