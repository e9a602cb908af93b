// Whether an Operation is one a CronOperation or WatchOperation produces: the admission webhook's side of
// operationForRun (cron-decide.ts) and operationForTrigger (watch-decide.ts), so that an Operation the
// operator creates is admitted on its scheduler's authority only when it is exactly what that scheduler
// makes for some run or trigger (docs/adr/0025-what-a-scheduler-produces.md):
//   - the target: the fixed one (targetRef of a one-target CronOperation), else an instance that matches
//     spec.targetSelector (fleet) or spec.selector (WatchOperation) as it is now;
//   - the parameters: operationTemplate.spec.parameters with spec.parametersFromTrigger applied, where
//     object.<path> is read from that target now, trigger.reason is what the Operation's annotations
//     say (scheduled-time: schedule; trigger: manual or the WatchOperation's trigger), trigger.scheduledTime
//     of a slot is its scheduled-time annotation, and the values only the run knew (the time a run-now
//     request or a trigger was acted on, the run-now value) are read from the Operation and must have the
//     form the scheduler gives them (an RFC 3339 time; a run-now value whose hash is in the name);
//   - every other field of spec: as operationTemplate.spec writes it.
// Pure: the webhook passes the scheduler and the target as read now.

import { jsonEqual } from '@vworkspace/runtime';
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER } from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { CronOperation } from '../api/cronoperation.ts';
import type { Operation } from '../api/operation.ts';
import type { WatchOperation } from '../api/watchoperation.ts';
import { matchesLabelSelector } from '../catalog/selectors.ts';
import { type CronRun, runOperationName } from './cron-decide.ts';
import { applyTriggerParameters, type ParameterFromTrigger, valueAt } from './trigger-parameters.ts';

export type Scheduler =
  | { kind: 'CronOperation'; object: CronOperation }
  | { kind: 'WatchOperation'; object: WatchOperation };

/** Where an Operation differs from what its scheduler produces, as a field of the Operation. */
export interface Mismatch {
  field: string;
  message: string;
}

/** The scheduler's own RFC 3339 form (formatTime): seconds, UTC. */
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const RUN_NOW_MAX = 256;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
const show = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v));

/** The value the Operation carries for variable `from`, read where a substitution put it. */
function carried(
  subs: readonly ParameterFromTrigger[],
  from: string,
  parameters: Record<string, unknown> | undefined,
): unknown {
  const s = subs.findLast((x) => x.from === from);
  return s ? valueAt({ ...parameters }, s.parameter) : undefined;
}

type Variables = Record<string, string | undefined>;

/** The trigger.* variables of the run the Operation says it belongs to, or why they cannot be. */
function runVariables(
  s: Scheduler,
  op: Pick<Operation, 'metadata' | 'spec'>,
  target: string,
): { variables: Variables } | Mismatch {
  const subs = s.object.spec.parametersFromTrigger ?? [];
  const ann = op.metadata.annotations ?? {};
  const params = op.spec.parameters;
  const timeOf = (from: string): string | undefined | Mismatch => {
    const v = carried(subs, from, params);
    if (v === undefined) return undefined;
    if (typeof v === 'string' && TIME.test(v)) return v;
    const at = subs.findLast((x) => x.from === from)?.parameter ?? '';
    return {
      field: `spec.parameters.${at}`,
      message: `${show(v)} is not a time as ${s.kind} ${s.object.metadata.name} writes ${from} (RFC 3339 in UTC, e.g. 2026-01-31T02:00:00Z)`,
    };
  };
  if (s.kind === 'WatchOperation') {
    const trigger = ann[ANNOTATION_TRIGGER];
    if (!trigger?.startsWith('label:') && !trigger?.startsWith('field:'))
      return {
        field: `metadata.annotations[${ANNOTATION_TRIGGER}]`,
        message: `must name the trigger (label:<key> or field:<path>) the WatchOperation ${s.object.metadata.name} ran for`,
      };
    const time = timeOf('trigger.time');
    if (typeof time === 'object') return time;
    return { variables: { 'trigger.reason': trigger, 'trigger.time': time } };
  }
  const slot = ann[ANNOTATION_SCHEDULED_TIME];
  if (slot !== undefined) {
    return { variables: { 'trigger.reason': 'schedule', 'trigger.scheduledTime': slot } };
  }
  if (ann[ANNOTATION_TRIGGER] !== 'manual')
    return {
      field: `metadata.annotations[${ANNOTATION_SCHEDULED_TIME}]`,
      message: `must name the slot (or ${ANNOTATION_TRIGGER}: manual, a run-now request) the CronOperation ${s.object.metadata.name} ran for`,
    };
  const time = timeOf('trigger.scheduledTime');
  if (typeof time === 'object') return time;
  const request = carried(subs, 'trigger.request', params);
  if (request !== undefined) {
    // The run-now value is hashed into the name: the Operation carries the value its name was made for.
    const run: CronRun = { reason: 'manual', time: new Date(0), request: String(request) };
    if (
      typeof request !== 'string' ||
      request.length > RUN_NOW_MAX ||
      runOperationName(s.object, run, target) !== op.metadata.name
    )
      return {
        field: `spec.parameters.${subs.findLast((x) => x.from === 'trigger.request')?.parameter ?? ''}`,
        message: `${show(request)} is not the run-now value Operation ${op.metadata.name} was created for`,
      };
  }
  return {
    variables: { 'trigger.reason': 'manual', 'trigger.scheduledTime': time, 'trigger.request': request },
  };
}

/** Why `target` is not a target of the scheduler, or undefined. */
function targetMismatch(s: Scheduler, target: string, instance: ApplicationInstance): Mismatch | undefined {
  const field = 'spec.targetRef.name';
  const name = s.object.metadata.name;
  if (s.kind === 'CronOperation' && !s.object.spec.targetSelector) {
    const fixed = s.object.spec.operationTemplate.spec.targetRef?.name;
    return fixed === target
      ? undefined
      : { field, message: `CronOperation ${name} runs on ${show(fixed)}, not on ${show(target)}` };
  }
  const [selector, at] =
    s.kind === 'CronOperation'
      ? [s.object.spec.targetSelector, 'spec.targetSelector']
      : [s.object.spec.selector, 'spec.selector'];
  if (matchesLabelSelector(selector, instance.metadata.labels ?? {})) return undefined;
  return {
    field,
    message: `ApplicationInstance ${target} does not match ${at} of ${s.kind} ${name} (as its labels are now)`,
  };
}

/** The first parameter path (dotted, at most two levels) where `a` and `b` differ. */
function differingParameter(a: Record<string, unknown>, b: Record<string, unknown>): string {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  for (const k of keys) {
    if (jsonEqual(a[k], b[k])) continue;
    const [x, y] = [a[k], b[k]];
    if (isRecord(x) && isRecord(y)) return `${k}.${differingParameter(x, y)}`;
    return k;
  }
  return '';
}

/**
 * Where `op` differs from what `scheduler` produces for its target and run, or undefined when it is
 * exactly that. `instance` is the Operation's target as read now (the caller reports a missing one).
 */
export function producedMismatch(
  scheduler: Scheduler,
  op: Pick<Operation, 'metadata' | 'spec'>,
  instance: ApplicationInstance,
): Mismatch | undefined {
  const target = op.spec.targetRef?.name ?? '';
  const wrongTarget = targetMismatch(scheduler, target, instance);
  if (wrongTarget) return wrongTarget;
  const run = runVariables(scheduler, op, target);
  if ('field' in run) return run;
  const tmpl = scheduler.object.spec.operationTemplate.spec;
  const { parameters } = applyTriggerParameters(
    tmpl.parameters,
    scheduler.object.spec.parametersFromTrigger,
    {
      variables: run.variables,
      object: instance,
    },
  );
  const { parameters: _template, ...rest } = tmpl;
  const expected: Record<string, unknown> = {
    ...rest,
    ...(parameters ? { parameters } : {}),
    targetRef: { name: target },
  };
  const actual: Record<string, unknown> = { ...op.spec };
  const what = `${scheduler.kind} ${scheduler.object.metadata.name}`;
  for (const k of [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort()) {
    if (jsonEqual(expected[k], actual[k])) continue;
    if (k === 'parameters') {
      const p = differingParameter(
        isRecord(expected[k]) ? expected[k] : {},
        isRecord(actual[k]) ? actual[k] : {},
      );
      return {
        field: `spec.parameters.${p}`,
        message: `${what} produces ${show(valueAt({ ...parameters }, p))} here for ApplicationInstance ${target}, not ${show(valueAt({ ...op.spec.parameters }, p))}`,
      };
    }
    return {
      field: `spec.${k}`,
      message: `${what} produces ${show(expected[k])} here, not ${show(actual[k])}`,
    };
  }
  return undefined;
}
