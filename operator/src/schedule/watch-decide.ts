// What one WatchOperation reconcile does, as a pure function of the WatchOperation (with the status the
// controller trusts), the ApplicationInstances of its namespace, the Operations it created and now.
//
// Triggers, per matching instance:
//  - a trigger label that is present and not yet in the processed mark (annotation
//    processed.ops.vworkspace.io/<watchoperation>, a comma-separated list of label keys). The label is
//    marked when its Operation is created (or queued as pending), and removed together with the mark once
//    no Operation of this WatchOperation runs for the instance any more (success or failure), as in the
//    KubeVela maintenance KEP;
//  - a watched field path whose value changed since status.targets[].fieldsHash. The first sighting of an
//    instance only records the values (a baseline); status and unrelated metadata are never looked at.
// Concurrency per instance: Allow creates another Operation, Forbid keeps the LATEST trigger in
// status.targets[].pendingTrigger and runs it when the running one finished (never dropped), Replace
// cancels the running one (spec.cancel) and creates the new one.
//
// Operation names are `<watchoperation>-<8 hex>` of (instance uid, trigger, field values, the previous
// lastTriggerTime): the same change decided again (restart, stale cache) gives the same name, which the
// controller adopts; a later change — even back to an earlier value — gives a new one.

import { createHash } from 'node:crypto';
import { formatTime, setCondition } from '@vworkspace/runtime';
import {
  ANNOTATION_PAUSED,
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  CONDITION_READY,
  LABEL_WATCH_OPERATION,
  OPERATION,
  type Operation,
  type WatchOperation,
  type WatchOperationStatus,
  type WatchTarget,
  watchProcessedAnnotation,
} from '../api/index.ts';
import { isPaused } from '../api/paused.ts';
import { matchesLabelSelector } from '../catalog/selectors.ts';
import { createdOperationMetadata } from './created-metadata.ts';
import { activeOperations, activeRefs, lastSuccessfulTime, operationsToPrune } from './history.ts';
import { keepRefusal } from './refused.ts';
import { haltedCondition } from './rollout-run.ts';
import { type PlannedEvent, readyCondition, withoutUndefined } from './run-plan.ts';
import { INVALID_OPERATION_TEMPLATE, templateBoundsProblem } from './template-bounds.ts';
import { applyTriggerParameters, valueAt } from './trigger-parameters.ts';
import { planWatchRollout, rolloutMode } from './watch-rollout-plan.ts';

export { valueAt };

export const WATCH_EVENT = {
  OperationCreated: 'OperationCreated',
  TriggerPending: 'TriggerPending',
  ReplacingOperation: 'ReplacingOperation',
  TriggerLabelRemoved: 'TriggerLabelRemoved',
  InvalidSelector: 'InvalidSelector',
  TriggerParameterMissing: 'TriggerParameterMissing',
  InvalidOperationTemplate: INVALID_OPERATION_TEMPLATE,
} as const;

type Selector = NonNullable<WatchOperation['spec']['selector']>;

export interface InstancePatch {
  instance: string;
  /** New value of the processed mark; null removes it. */
  processed: string | null;
  /** Trigger labels to remove from the instance. */
  removeLabels: string[];
}

export interface WatchPlan {
  create: Operation[];
  cancel: string[];
  prune: string[];
  /** Metadata changes on instances: processed marks and, once handled, trigger label removal. */
  instances: InstancePatch[];
  events: PlannedEvent[];
  status: WatchOperationStatus;
  /** Something changed that must be remembered even if the status write fails. */
  decided: boolean;
  /** Look again after this long (a rollout's gather window or pause between waves ends). */
  requeueAfterMs?: number;
}

// ---- field values --------------------------------------------------------------------------------

const ABSENT = '\u0000absent';

/** JSON with sorted keys, so equal values hash alike whatever the key order. */
function canonical(v: unknown): string {
  if (v === undefined) return ABSENT;
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

function b64(s: string, chars: number): string {
  return createHash('sha256').update(s).digest('base64url').slice(0, chars);
}

const PATHS_CHARS = 6;
const VALUE_CHARS = 7; // 42 bits per value; 16 paths fit the schema's 128 characters

/**
 * status.targets[].fieldsHash: `<hash of the path list>:<hash of each value>` (fixed width), so a change
 * names the path that changed, and a changed path list is a new baseline rather than a trigger.
 */
export function fieldsHash(instance: unknown, paths: readonly string[]): string | undefined {
  if (paths.length === 0) return undefined;
  return `${b64(canonical(paths), PATHS_CHARS)}:${paths.map((p) => b64(canonical(valueAt(instance, p)), VALUE_CHARS)).join('')}`;
}

/** The first watched path whose value differs between two fieldsHash values; undefined if none or not comparable. */
export function changedPath(before: string | undefined, after: string | undefined, paths: readonly string[]) {
  if (!before || !after) return undefined;
  const [bp, bv = ''] = before.split(':');
  const [ap, av = ''] = after.split(':');
  if (bp !== ap || bv.length !== av.length) return undefined;
  for (let i = 0; i < paths.length; i++) {
    const s = i * VALUE_CHARS;
    if (bv.slice(s, s + VALUE_CHARS) !== av.slice(s, s + VALUE_CHARS)) return paths[i];
  }
  return undefined;
}

// ---- processed mark ------------------------------------------------------------------------------

export function parseProcessed(v: string | undefined): string[] {
  return (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function formatProcessed(labels: Iterable<string>): string {
  return [...new Set(labels)].sort().join(',');
}

// ---- selector ------------------------------------------------------------------------------------

export function selectorProblem(selector: Selector | undefined): string | undefined {
  for (const e of selector?.matchExpressions ?? []) {
    const n = e.values?.length ?? 0;
    if ((e.operator === 'In' || e.operator === 'NotIn') && n === 0)
      return `matchExpressions key ${e.key}: operator ${e.operator} needs at least one value`;
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && n > 0)
      return `matchExpressions key ${e.key}: operator ${e.operator} takes no values`;
  }
  return undefined;
}

// ---- the decision --------------------------------------------------------------------------------

/**
 * The Operation a WatchOperation creates for `instance`, named for the trigger, with its
 * parametersFromTrigger applied (`time` is trigger.time), and the substitutions the trigger has no value for.
 */
export function operationForTrigger(
  watch: WatchOperation,
  instance: ApplicationInstance,
  trigger: string,
  hash: string | undefined,
  previousTriggerTime: string | undefined,
  time?: string,
): { op: Operation; missing: string[] } {
  const name = watch.metadata.name ?? '';
  const tmpl = watch.spec.operationTemplate;
  const suffix = createHash('sha256')
    .update(
      [instance.metadata.uid ?? instance.metadata.name, trigger, hash ?? '', previousTriggerTime ?? ''].join(
        '\u0000',
      ),
    )
    .digest('hex')
    .slice(0, 8);
  const { parameters, missing } = applyTriggerParameters(
    tmpl.spec.parameters,
    watch.spec.parametersFromTrigger,
    {
      variables: { 'trigger.reason': trigger, 'trigger.time': time },
      object: instance,
    },
  );
  const { parameters: _template, ...rest } = structuredClone(tmpl.spec);
  const op: Operation = {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: createdOperationMetadata(watch, `${name}-${suffix}`, [LABEL_WATCH_OPERATION, name], {
      [ANNOTATION_TRIGGER]: trigger,
    }),
    spec: {
      ...rest,
      ...(parameters ? { parameters } : {}),
      targetRef: { name: instance.metadata.name ?? '' },
    },
  };
  return { op, missing };
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Decides one reconcile. `watch.status` is the status the controller trusts; `instances` are the
 * ApplicationInstances of the namespace (with the processed marks the controller trusts); `ops` the
 * Operations labelled as created by this WatchOperation.
 */
export function decideWatch(
  watch: WatchOperation,
  instances: readonly ApplicationInstance[],
  ops: readonly Operation[],
  now: Date,
): WatchPlan {
  const spec = watch.spec;
  const prev = watch.status ?? {};
  const generation = watch.metadata.generation;
  const name = watch.metadata.name ?? '';
  const nowIso = formatTime(now);
  const processedKey = watchProcessedAnnotation(name);
  const labelKeys = spec.triggers.labels ?? [];
  const paths = spec.triggers.fieldPaths ?? [];
  const policy = spec.concurrencyPolicy ?? 'Allow';
  // Under spec.rollout (or while a run it began is unfinished) a trigger only waits: the rollout starts it.
  const rolling = rolloutMode(watch);
  const plan: WatchPlan = {
    create: [],
    cancel: [],
    prune: [],
    instances: [],
    events: [],
    status: {},
    decided: false,
  };

  plan.prune = operationsToPrune(ops, spec);
  const remaining = ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));
  const base = {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTriggerTime: prev.lastTriggerTime,
    lastSuccessfulTime: lastSuccessfulTime(ops, prev.lastSuccessfulTime),
  };

  // A selector that does not parse, or a template past the parameters' bounds (the webhook refuses them,
  // but objects may predate it or be stored where it does not run): say so, watch and create nothing.
  const problem = selectorProblem(spec.selector);
  const bounds = templateBoundsProblem(spec.operationTemplate.spec);
  if (problem || bounds !== undefined) {
    const reason = problem ? WATCH_EVENT.InvalidSelector : WATCH_EVENT.InvalidOperationTemplate;
    const message = problem
      ? `spec.selector: ${problem}; nothing is watched until it is fixed`
      : (bounds ?? '');
    const before = prev.conditions?.find((c) => c.type === CONDITION_READY);
    if (before?.reason !== reason || before.message !== message)
      plan.events.push({ type: 'Warning', reason, note: message });
    const active = activeRefs(remaining);
    plan.status = withoutUndefined({
      ...base,
      conditions: readyCondition(prev.conditions, 'False', reason, message, generation, now),
      active: active.length ? active : undefined,
      targets: prev.targets,
      watchingResources: prev.watchingResources,
    });
    return plan;
  }

  const prevTargets = new Map((prev.targets ?? []).map((t) => [t.name, t]));
  // Instances with a pending trigger go first, oldest first, so maxConcurrent serves triggers in order.
  const pendingSince = (i: ApplicationInstance) => {
    const t = prevTargets.get(i.metadata.name ?? '');
    return t?.pendingTrigger ? (t.pendingSince ?? '') : '\uffff';
  };
  const matching = instances
    .filter((i) => matchesLabelSelector(spec.selector, i.metadata.labels ?? {}))
    .sort(
      (a, b) =>
        pendingSince(a).localeCompare(pendingSince(b)) ||
        byName({ name: a.metadata.name ?? '' }, { name: b.metadata.name ?? '' }),
    );
  const targets: WatchTarget[] = [];
  const createdNow: Operation[] = [];
  let lastTriggerTime = prev.lastTriggerTime;
  let capacity =
    spec.maxConcurrent === undefined
      ? Number.POSITIVE_INFINITY
      : spec.maxConcurrent - activeOperations(remaining).length;

  for (const inst of matching) {
    const iname = inst.metadata.name ?? '';
    const before = prevTargets.get(iname);
    const hash = fieldsHash(inst, paths);
    const processed = parseProcessed(inst.metadata.annotations?.[processedKey]);
    const running = activeOperations(remaining).filter((o) => o.spec?.targetRef?.name === iname);
    const labels = inst.metadata.labels ?? {};
    const newLabels = labelKeys.filter((k) => Object.hasOwn(labels, k) && !processed.includes(k));
    const field = changedPath(before?.fieldsHash, hash, paths);
    const fresh = newLabels.length > 0 ? `label:${newLabels[0]}` : field ? `field:${field}` : undefined;

    const next: WatchTarget = withoutUndefined({
      name: iname,
      fieldsHash: hash,
      lastTrigger: before?.lastTrigger,
      lastTriggerTime: before?.lastTriggerTime,
      pendingTrigger: before?.pendingTrigger,
      pendingSince: before?.pendingSince,
    });
    if (hash !== before?.fieldsHash) plan.decided = true;
    let mark = processed;
    let run: string | undefined;

    if (spec.suspend) {
      // Field changes while suspended are not replayed (the baseline moves on); trigger labels are
      // requests: they stay unmarked and fire after resume, as does a pending trigger.
    } else if (fresh) {
      mark = [...processed, ...newLabels];
      if (rolling) {
        next.pendingTrigger = fresh;
        next.pendingSince = nowIso;
      } else if (running.length > 0 && policy === 'Forbid') {
        next.pendingTrigger = fresh; // the latest wins: earlier pending triggers are coalesced into it
        next.pendingSince = nowIso;
        plan.events.push({
          type: 'Normal',
          reason: WATCH_EVENT.TriggerPending,
          note: `${fresh} on ${iname} waits for ${running.map((o) => o.metadata.name).join(', ')} to finish (concurrencyPolicy Forbid)`,
        });
      } else {
        if (running.length > 0 && policy === 'Replace') {
          const cancel = running.filter((o) => o.spec?.cancel !== true).map((o) => o.metadata.name ?? '');
          if (cancel.length > 0) {
            plan.cancel.push(...cancel);
            plan.events.push({
              type: 'Normal',
              reason: WATCH_EVENT.ReplacingOperation,
              note: `concurrencyPolicy is Replace: cancelling ${cancel.join(', ')} for ${fresh} on ${iname}`,
            });
          }
        }
        run = fresh;
      }
    } else if (!rolling && before?.pendingTrigger && running.length === 0) {
      run = before.pendingTrigger;
    }

    const made = run
      ? operationForTrigger(watch, inst, run, hash, before?.lastTriggerTime, nowIso)
      : undefined;
    const hold = isPaused(inst) ? 'paused' : capacity <= 0 ? 'full' : undefined;
    if (run && made && hold && !ops.some((o) => o.metadata.name === made.op.metadata.name)) {
      // A paused instance (maintenance) or maxConcurrent: wait like a Forbid trigger, keeping the time it
      // first waited (oldest runs first).
      if (run !== before?.pendingTrigger)
        plan.events.push({
          type: 'Normal',
          reason: WATCH_EVENT.TriggerPending,
          note:
            hold === 'paused'
              ? `${run} on ${iname} waits: ${ANNOTATION_PAUSED} is "true" on the instance; it runs once the annotation is removed`
              : `${run} on ${iname} waits: maxConcurrent (${spec.maxConcurrent}) Operations of this WatchOperation are running`,
        });
      next.pendingSince = run === before?.pendingTrigger ? (before.pendingSince ?? nowIso) : nowIso;
      next.pendingTrigger = run;
      run = undefined;
    }
    if (run && made) {
      const { op, missing } = made;
      const opName = op.metadata.name ?? '';
      if (!ops.some((o) => o.metadata.name === opName)) {
        capacity--;
        if (missing.length > 0)
          plan.events.push({
            type: 'Warning',
            reason: WATCH_EVENT.TriggerParameterMissing,
            note: `Operation ${opName}: ${missing.join(', ')} has no value for ApplicationInstance ${iname}, so its parameter keeps the template's value (or none); set it on the instance or change spec.parametersFromTrigger`,
          });
        plan.create.push(op);
        createdNow.push(op);
        plan.events.push({
          type: 'Normal',
          reason: WATCH_EVENT.OperationCreated,
          note: `created Operation ${opName} for ${run} on ApplicationInstance ${iname}`,
        });
      }
      next.lastTrigger = run;
      next.lastTriggerTime = nowIso;
      delete next.pendingTrigger;
      delete next.pendingSince;
      lastTriggerTime = nowIso;
    }
    if (run || next.pendingTrigger !== before?.pendingTrigger) plan.decided = true;

    // Handled: nothing of ours runs or waits for this instance any more ⇒ remove the trigger labels.
    const stillBusy = run !== undefined || running.length > 0 || next.pendingTrigger !== undefined;
    if (!stillBusy && mark.length > 0) {
      const remove = mark.filter((k) => Object.hasOwn(labels, k));
      plan.instances.push({ instance: iname, processed: null, removeLabels: remove });
      if (remove.length > 0)
        plan.events.push({
          type: 'Normal',
          reason: WATCH_EVENT.TriggerLabelRemoved,
          note: `removed trigger label ${remove.join(', ')} from ApplicationInstance ${iname}: its Operation finished`,
        });
    } else if (formatProcessed(mark) !== formatProcessed(processed)) {
      plan.instances.push({ instance: iname, processed: formatProcessed(mark), removeLabels: [] });
    }
    targets.push(next);
  }
  if (targets.length !== prevTargets.size) plan.decided = true;
  targets.sort(byName);
  const rollout = rolling
    ? planWatchRollout({
        watch,
        matching,
        targets,
        ops,
        remaining,
        createdNow,
        plan,
        now,
        operationFor: (inst, trigger) =>
          operationForTrigger(watch, inst, trigger, fieldsHash(inst, paths), undefined, nowIso).op,
      })
    : undefined;

  const active = activeRefs([...remaining, ...createdNow]);
  plan.status = withoutUndefined({
    ...base,
    lastTriggerTime,
    conditions: spec.suspend
      ? readyCondition(
          prev.conditions,
          'False',
          'Suspended',
          'spec.suspend is true: no Operations are created',
          generation,
          now,
        )
      : readyCondition(
          prev.conditions,
          'True',
          'WatchActive',
          `watching ${matching.length} ApplicationInstance(s) for ${[...labelKeys.map((k) => `label ${k}`), ...paths].join(', ')}`,
          generation,
          now,
        ),
    active: active.length ? active : undefined,
    watchingResources: matching.length,
    targets: targets.length ? targets : undefined,
    rollout: rollout ?? prev.rollout,
  });
  if (rollout)
    plan.status.conditions = setCondition(
      plan.status.conditions,
      generation !== undefined
        ? { ...haltedCondition(rollout), observedGeneration: generation }
        : haltedCondition(rollout),
      now,
    );
  // A refused create (refused.ts) stays the Ready condition until an Operation is created again.
  plan.status.conditions = keepRefusal(prev.conditions, plan.status.conditions, plan.create.length > 0);
  return plan;
}
