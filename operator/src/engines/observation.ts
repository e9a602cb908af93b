// Builders for an adapter's Observation, typed on the reason table so a misspelt reason fails to compile.
// The message often quotes the engine's child (a workflow node's message, a Job's pod's termination
// message): text whoever runs the step writes, so it reaches status printable and bounded.
import { bounded } from '../api/printable.ts';
import type { Reason } from '../api/reasons.ts';
import type { Observation } from './types.ts';

/** Characters of an engine's message kept in status (a condition message may hold 32 KiB). */
export const MAX_ENGINE_MESSAGE = 1024;

function withOutputs(o: Observation, outputs?: Record<string, string>): Observation {
  const clean = { ...o, message: bounded(o.message, MAX_ENGINE_MESSAGE) };
  return outputs && Object.keys(outputs).length > 0 ? { ...clean, outputs } : clean;
}

export function running(reason: Reason, message: string, outputs?: Record<string, string>): Observation {
  return withOutputs({ phase: 'Running', reason, message }, outputs);
}

export function succeeded(reason: Reason, message: string, outputs?: Record<string, string>): Observation {
  return withOutputs({ phase: 'Succeeded', reason, message }, outputs);
}

export function failed(
  reason: Reason,
  message: string,
  retryable: boolean,
  outputs?: Record<string, string>,
): Observation {
  return withOutputs({ phase: 'Failed', reason, message, retryable }, outputs);
}
