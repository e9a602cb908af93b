// ops.vworkspace.io/paused: "true" on an ApplicationInstance (maintenance): the scheduling controllers
// create nothing for it — a CronOperation slot passes it over, a run-now request or a WatchOperation trigger
// waits until the annotation is removed. Only the exact value "true" pauses.
// (The Operation controller blocks Operations on a paused target the same way; when both land, this
// should become its instance/paused.ts helper.)
import { ANNOTATION_PAUSED } from '../api/index.ts';

export function isPaused(
  instance: { metadata?: { annotations?: Record<string, string> } } | undefined,
): boolean {
  return instance?.metadata?.annotations?.[ANNOTATION_PAUSED] === 'true';
}
