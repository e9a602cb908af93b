// The writes `kubectl vws` makes, as plain request bodies (pure): the run-now annotation, an Operation from a
// template, approval and cancellation; and which Operations a history asks for.

import {
  ANNOTATION_ABANDON,
  ANNOTATION_APPROVE,
  ANNOTATION_RESUME,
  ANNOTATION_RUN_NOW,
  type CronOperation,
  ENGINES,
  LABEL_CRON_OPERATION,
  LABEL_WATCH_OPERATION,
  OPERATION,
  OPERATION_TYPES,
  type Operation,
  type WatchOperation,
} from '../api/index.ts';
import { schedulerOwner } from '../api/scheduler-owner.ts';
import type { Template } from '../catalog/index.ts';
import { runId } from '../schedule/cron-decide.ts';
import type { ObjectRef } from './object-ref.ts';

export const runNowPatch = (value: string) => ({
  metadata: { annotations: { [ANNOTATION_RUN_NOW]: value } },
});
/** Resume (or abandon) the halted fleet run; any new value acts once, so the CLI sends the time. */
export const rolloutPatch = (verb: 'resume' | 'abandon', value: string) => ({
  metadata: { annotations: { [verb === 'resume' ? ANNOTATION_RESUME : ANNOTATION_ABANDON]: value } },
});
/** Why `kubectl vws resume|abandon` has nothing to act on, or undefined when it has. */
export function rolloutControlProblem(
  owner: CronOperation | WatchOperation,
  verb: 'resume' | 'abandon',
): string | undefined {
  const name = `${owner.kind === 'WatchOperation' ? 'watchoperation' : 'cronoperation'}/${owner.metadata.name}`;
  const r = owner.status?.rollout;
  if (!r) return `${name} has no fleet run rolled out in waves (spec.rollout) to ${verb}`;
  if (verb === 'resume' && r.phase !== 'Halted')
    return `${name}: the fleet run is ${r.phase} (${r.reason}), not Halted; there is nothing to resume`;
  if (verb === 'abandon' && (r.phase === 'Completed' || r.phase === 'Abandoned'))
    return `${name}: the fleet run is already ${r.phase}; there is nothing to abandon`;
  return undefined;
}
export const approvePatch = { metadata: { annotations: { [ANNOTATION_APPROVE]: 'true' } } };
export const cancelPatch = { spec: { cancel: true } };

/** The prefix of the Operations a CronOperation creates for the run-now value (one, or one per instance). */
export function manualRunPrefix(cron: CronOperation, value: string): string {
  return `${cron.metadata.name}-${runId({ reason: 'manual', time: new Date(0), request: value })}`;
}

export interface TemplateRun {
  template: string;
  target: string;
  type?: string;
  engine?: string;
  name?: string;
  parameters: Record<string, unknown>;
}

/**
 * An Operation of `template` on `target`. Type and engine come from the built-in template of that name,
 * else from --type/--engine (a catalog template); the webhook checks the rest.
 */
export function operationFromTemplate(
  run: TemplateRun,
  namespace: string,
  builtins: readonly Template[],
): { ok: true; op: Operation } | { ok: false; message: string } {
  const known = builtins.find((t) => t.name === run.template);
  const type = run.type ?? known?.type;
  const engine = run.engine ?? known?.engine;
  if (!type || !engine)
    return {
      ok: false,
      message: `template ${run.template} is not built in: pass --type and --engine (built-in templates: ${builtins.map((t) => t.name).join(', ')})`,
    };
  if (!(OPERATION_TYPES as readonly string[]).includes(type))
    return { ok: false, message: `--type ${type}: use one of ${OPERATION_TYPES.join(', ')}` };
  if (!(ENGINES as readonly string[]).includes(engine))
    return { ok: false, message: `--engine ${engine}: use one of ${ENGINES.join(', ')}` };
  return {
    ok: true,
    op: {
      apiVersion: OPERATION.apiVersion,
      kind: OPERATION.kind,
      metadata: {
        namespace,
        ...(run.name ? { name: run.name } : { generateName: `${run.template.slice(0, 40)}-` }),
      },
      spec: {
        type: type as Operation['spec']['type'],
        engine: engine as Operation['spec']['engine'],
        template: run.template,
        targetRef: { name: run.target },
        ...(Object.keys(run.parameters).length > 0 ? { parameters: run.parameters } : {}),
      },
    },
  };
}

export interface RestoreRun {
  instance: string;
  /** The namespace whose backups to restore; unset: the one the Operation is created in. */
  from?: string;
  backup?: string;
  name?: string;
}

/**
 * A velero Restore of `instance` from the backups of `from` (spec.source, so the instance may be gone:
 * the restore brings it back; another namespace is a clone): docs/disaster-recovery.md.
 */
export function restoreOperation(run: RestoreRun, namespace: string): Operation {
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: {
      namespace,
      ...(run.name ? { name: run.name } : { generateName: `restore-${run.instance.slice(0, 40)}-` }),
    },
    spec: {
      type: 'Restore',
      engine: 'velero',
      targetRef: { name: run.instance },
      source: { namespace: run.from ?? namespace },
      ...(run.backup ? { parameters: { backupName: run.backup } } : {}),
    },
  };
}

/** The list query and filter of a history: an object's Operations, or the namespace's. */
export function historyQuery(
  ref: ObjectRef | undefined,
  type: string | undefined,
): { labelSelector?: string; keep: (op: Operation) => boolean } {
  const ofType = (op: Operation) => type === undefined || op.spec.type.toLowerCase() === type.toLowerCase();
  // The label narrows the list on the server; what the scheduler really created is its controller reference
  // (anyone who may edit an Operation can set the label).
  const createdBy = (kind: 'CronOperation' | 'WatchOperation') => (op: Operation) =>
    schedulerOwner(op, kind)?.name === ref?.name && ofType(op);
  if (ref?.kind === 'cronoperation')
    return { labelSelector: `${LABEL_CRON_OPERATION}=${ref.name}`, keep: createdBy('CronOperation') };
  if (ref?.kind === 'watchoperation')
    return { labelSelector: `${LABEL_WATCH_OPERATION}=${ref.name}`, keep: createdBy('WatchOperation') };
  if (ref?.kind === 'applicationinstance')
    return { keep: (op) => op.spec.targetRef?.name === ref.name && ofType(op) };
  return { keep: ofType };
}
