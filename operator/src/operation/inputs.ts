// spec.parametersFrom and the template's parametersFrom defaults: which Operation's outputs become which
// parameters. Pure. Resolved once, at the first evaluation where every source is ready, and recorded in
// status.inputs; from then on the record is the truth (a newer Backup never changes what a waiting
// Restore restores, and an approver approves what the status shows).
//
//   operationRef  the named Operation (same namespace): waits while it runs; unusable when it is gone,
//                 ended Failed/Cancelled, was a dry run, or lacks an output
//   latest        the latest real success of the type on the same target (latest by startedAt); waits
//                 when none succeeded yet but one is under way; unusable when there is none at all

import { formatTime } from '@vworkspace/runtime';
import type { Operation } from '../api/operation.ts';
import type { InputRecord } from '../api/parameters-from.ts';
import { describeFilter, parameterOf, parameterSources, type SourceRef } from '../catalog/flow.ts';
import type { Template } from '../catalog/template.ts';
import { isDryRun, onSameTarget, succeededForReal, unfinished } from './history.ts';

export type InputsResult =
  | { outcome: 'none' }
  | { outcome: 'resolved'; records: InputRecord[]; parameters: Record<string, unknown>; fresh: boolean }
  | { outcome: 'waiting'; message: string }
  | { outcome: 'unavailable'; message: string };

type SourceResult =
  | { outcome: 'resolved'; record: InputRecord }
  | { outcome: 'waiting'; message: string }
  | { outcome: 'unavailable'; message: string };

/** The parameters a record supplies (later sources cannot overlap earlier ones: admission refuses that). */
export function recordedParameters(records: readonly InputRecord[] | undefined): Record<string, unknown> {
  return Object.assign({}, ...(records ?? []).map((r) => r.parameters));
}

export function resolveInputs(
  op: Operation,
  template: Pick<Template, 'name' | 'parametersFrom'>,
  operations: readonly Operation[],
  now: Date,
): InputsResult {
  const recorded = op.status?.inputs;
  if (recorded) {
    return { outcome: 'resolved', records: recorded, parameters: recordedParameters(recorded), fresh: false };
  }
  const sources = parameterSources(op.spec, template);
  if (sources.length === 0) return { outcome: 'none' };
  const records: InputRecord[] = [];
  const waits: string[] = [];
  for (const s of sources) {
    const r = resolveSource(op, s, operations, now);
    if (r.outcome === 'unavailable') return r;
    if (r.outcome === 'waiting') waits.push(r.message);
    else records.push(r.record);
  }
  if (waits.length > 0) return { outcome: 'waiting', message: waits.join('; ') };
  return { outcome: 'resolved', records, parameters: recordedParameters(records), fresh: true };
}

function resolveSource(op: Operation, s: SourceRef, all: readonly Operation[], now: Date): SourceResult {
  const ns = op.metadata.namespace ?? '';
  const params = s.outputs.map(parameterOf);
  const instead = `set spec.parameters.${params.join(', spec.parameters.')} on a new Operation instead`;
  if (s.source.operationRef) {
    const name = s.source.operationRef.name;
    const src = all.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
    const what = `${s.from}: Operation ${name}`;
    if (name === op.metadata.name) {
      return { outcome: 'unavailable', message: `${what} is this Operation; name another one` };
    }
    if (!src) {
      return {
        outcome: 'unavailable',
        message: `${what} does not exist in namespace ${ns} (deleted, e.g. by its TTL?); name an existing one or ${instead}`,
      };
    }
    const phase = src.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed' && phase !== 'Cancelled') {
      return {
        outcome: 'waiting',
        message: `${what} is ${phase ?? 'Pending'}; waits for it to succeed and then reads its outputs`,
      };
    }
    if (phase !== 'Succeeded' || isDryRun(src)) {
      const how = phase === 'Succeeded' ? 'was a dry run' : `ended ${phase}`;
      return { outcome: 'unavailable', message: `${what} ${how}: it has no outputs to read; ${instead}` };
    }
    return record(s, src, now);
  }
  const filter = s.source.latest!;
  const target = op.spec.targetRef.name;
  const candidates = onSameTarget(op, all, filter);
  const src = candidates.find(succeededForReal);
  if (src) return record(s, src, now);
  const running = unfinished(candidates).map((o) => `${o.metadata.name} (${o.status?.phase ?? 'Pending'})`);
  const none = `${s.from}: no ${describeFilter(filter)} Operation on ${target} has Succeeded yet`;
  if (running.length > 0) {
    return { outcome: 'waiting', message: `${none}; waits for ${running.join(', ')}` };
  }
  return {
    outcome: 'unavailable',
    message: `${none} (only stored Operations count: TTLs and history limits delete older ones); run one first, or ${instead}`,
  };
}

function record(s: SourceRef, src: Operation, now: Date): SourceResult {
  const outputs = src.status?.outputs ?? {};
  const missing = s.outputs.filter((m) => outputs[m.output] === undefined || outputs[m.output] === '');
  const name = src.metadata.name ?? '';
  if (missing.length > 0) {
    const has = Object.keys(outputs);
    return {
      outcome: 'unavailable',
      message: `${s.from}: Operation ${name} has no output ${missing.map((m) => m.output).join(', ')} (it has ${has.length > 0 ? has.join(', ') : 'none'}); read an output its template declares`,
    };
  }
  const status = src.status ?? {};
  return {
    outcome: 'resolved',
    record: {
      from: s.from,
      operation: name,
      ...(src.metadata.uid ? { uid: src.metadata.uid } : {}),
      type: src.spec.type,
      engine: src.spec.engine,
      ...(status.startedAt ? { startedAt: status.startedAt } : {}),
      ...(status.finishedAt ? { finishedAt: status.finishedAt } : {}),
      parameters: Object.fromEntries(s.outputs.map((m) => [parameterOf(m), outputs[m.output]])),
      resolvedAt: formatTime(now.getTime()),
    },
  };
}
