// Builders for an adapter's Observation, typed on the reason table so a misspelt reason fails to compile.
import type { Reason } from '../api/reasons.ts';
import type { Observation } from './types.ts';

function withOutputs(o: Observation, outputs?: Record<string, string>): Observation {
  return outputs && Object.keys(outputs).length > 0 ? { ...o, outputs } : o;
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
