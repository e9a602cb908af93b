// The Operation state machine. Pure: (Operation, looked-up facts, the engine adapter, children as read,
// time) → the complete next status plus the effects the controller performs (create children, cancel
// them, delete the Operation, record Events). The controller does the I/O; everything that decides
// lives here so it is tested without an API server.
//
//   (new) ─▶ Pending ─▶ Blocked ⇄ Pending ─▶ Running ─▶ Succeeded | Failed | Cancelled
//
// - No child exists until every precondition holds (preconditions.ts).
// - Conditions: Accepted, Blocked, Running, Succeeded; Succeeded stays Unknown with the reason that
//   explains the current state until the end (the printer column "Reason" reads it).
// - Policies: retryLimit (a retryable failure creates attempt N+1 after a backoff), activeDeadlineSeconds
//   (DeadlineExceeded at the exact instant), spec.cancel, dryRun (status.plan, nothing created),
//   ttlSecondsAfterFinished / ttlSecondsAfterSucceed / ttlSecondsAfterUnsuccessfulCompletion (the
//   Operation is deleted), preconditionDeadlineSeconds (waiting ends PreconditionDeadlineExceeded).
// - ops.vworkspace.io/paused on the target: nothing starts (Blocked/TargetPaused) and a running child is
//   left alone; only spec.cancel of a not-started Operation and the TTL of a finished one still act.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Condition, ConditionStatus } from '@vworkspace/runtime';
import { findCondition, formatTime, removeCondition, setCondition } from '@vworkspace/runtime';
import {
  ANNOTATION_PAUSED,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_HANDLED,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
} from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { OperationPhase } from '../api/enums.ts';
import type { ChildRef, Operation, OperationStatus } from '../api/operation.ts';
import { isPaused, resumeHint } from '../api/paused.ts';
import {
  ACCEPTED_REASONS,
  CONDITION_ACCEPTED,
  CONDITION_BLOCKED,
  CONDITION_RUNNING,
  CONDITION_SUCCEEDED,
} from '../api/reasons.ts';
import { preconditionDeadlineSeconds, ttlSecondsFor } from '../catalog/policy.ts';
import type { Template } from '../catalog/template.ts';
import { jobFailed } from '../engines/runner-pod.ts';
import type {
  CancelAction,
  ChildManifest,
  EngineAdapter,
  EngineEnvironment,
  Observation,
  ObserveInput,
  PodOutcome,
} from '../engines/types.ts';
import { rerunRefusal } from './admitted.ts';
import { ENGINE_RECHECK_MS } from './engine-install.ts';
import {
  evaluatePreconditions,
  type PreconditionFacts,
  resolveOperation,
  targetOf,
} from './preconditions.ts';
export { ANNOTATION_RECONCILE_HANDLED };

/** Accepted=False reasons that may be fixed by creating something: waited for before failing. */
export const GRACE_REASONS = ['TargetNotFound', 'RbacProfileMissing', 'EngineNotInstalled'] as const;
/** How long TargetNotFound / RbacProfileMissing / EngineNotInstalled wait before failing (ADR 0003). */
export const DEFAULT_ACCEPTANCE_GRACE_MS = 5 * 60_000;

/**
 * Failed reasons a new ops.vworkspace.io/reconcile value re-evaluates: problems outside the Operation
 * that can be fixed (create the instance, grant the profile, fix the catalog) and exhausted retries.
 * Never: InvalidParameters (spec is immutable), DeadlineExceeded (its time budget is spent), Cancelled,
 * Succeeded, or an engine failure the engine calls permanent.
 */
export const RECONCILE_RETRY_REASONS: readonly string[] = [
  'TargetNotFound',
  'RbacProfileMissing',
  'EngineNotInstalled',
  'TemplateNotFound',
  'CapabilityMissing',
  'SelectorMismatch',
  'RetryLimitExceeded',
  'NotAllowedByTemplate',
  'UnsafePodSpec',
  'BackupNotAllowed',
  'BackupNotFound',
  'ChildConflict',
  'RequesterNotAuthorized',
];

export const RETRY_BACKOFF_BASE_MS = 10_000;
export const RETRY_BACKOFF_MAX_MS = 5 * 60_000;

/** Delay before attempt `failed + 1` once attempt `failed` failed: 10 s, 20 s, 40 s, … at most 5 min. */
export function retryBackoffMs(failedAttempt: number): number {
  return Math.min(RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_BASE_MS * 2 ** Math.max(0, failedAttempt - 1));
}

export interface DecideInput<T extends Template = Template> {
  op: Operation;
  now: number;
  templates: readonly T[];
  /** Facts for the preconditions; needed while the Operation has not started (see needsPreconditions). */
  facts?: PreconditionFacts;
  adapter: EngineAdapter | undefined;
  env: EngineEnvironment;
  /** The target ApplicationInstance (a retry materializes the next attempt for it). */
  target?: ApplicationInstance;
  /** The current attempt's children as read from the API server (absent = not found). */
  children: readonly KubernetesObject[];
  /** How a finished child Job's pods ended (adapters with podOutcomeContainer; controller reads them). */
  pods?: readonly PodOutcome[];
  /** When this replica first saw the current attempt fail (retry backoff); undefined = just now. */
  failureSeenAt?: number;
  graceMs?: number;
  /** How often an Operation waiting for its engine's CRDs re-reads discovery (default ENGINE_RECHECK_MS). */
  engineRecheckMs?: number;
}

export interface OperationEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
}

export interface Decision {
  /** The complete status to apply. */
  status: OperationStatus;
  /** Create these (server-side apply), then record their uids in status.childRefs. */
  create?: ChildManifest[];
  /** Before creating them: what the adapter asked done first (MaterializeResult.prepare). */
  prepare?: CancelAction[];
  cancel?: CancelAction[];
  /** While running: what the adapter asks done to the children (Observation.actions), e.g. resume a Job. */
  actions?: CancelAction[];
  /** ttlSecondsAfterFinished elapsed: delete the Operation (and its cross-namespace children). */
  deleteOperation?: boolean;
  requeueAfterMs?: number;
  events: OperationEvent[];
  /** Record this ops.vworkspace.io/reconcile value as handled. */
  reconcileHandled?: string;
  /** The current attempt's failure was first seen now: remember `now` as failureSeenAt. */
  failureSeen?: boolean;
}

const TERMINAL: readonly OperationPhase[] = ['Succeeded', 'Failed', 'Cancelled'];

export function isTerminalPhase(phase: OperationPhase | undefined): boolean {
  return phase !== undefined && TERMINAL.includes(phase);
}

function childRefsOf(status: OperationStatus | undefined): ChildRef[] {
  if (status?.childRefs && status.childRefs.length > 0) return status.childRefs;
  return status?.childRef ? [status.childRef] : [];
}

/** Whether the Operation still waits for its preconditions (the controller then gathers facts). */
export function needsPreconditions(op: Operation): boolean {
  if (op.spec.cancel) return false;
  const phase = op.status?.phase;
  if (phase === undefined || phase === 'Pending' || phase === 'Blocked') return true;
  return isTerminalPhase(phase) && pendingReconcileRequest(op) !== undefined;
}

/**
 * Whether this reconcile may materialize children (and so needs what the adapter reads from the
 * environment): the Operation has not started, or its current attempt failed or lost a child (a retry).
 */
export function mayMaterialize(op: Operation, children: readonly KubernetesObject[]): boolean {
  const refs = childRefsOf(op.status);
  if (op.status?.phase !== 'Running' || refs.length === 0) return true;
  return children.length < refs.length || children.some(jobFailed);
}

/** A new ops.vworkspace.io/reconcile value not acted on yet. */
export function pendingReconcileRequest(op: Operation): string | undefined {
  const a = op.metadata.annotations ?? {};
  const v = a[ANNOTATION_RECONCILE];
  return v !== undefined && v !== a[ANNOTATION_RECONCILE_HANDLED] ? v : undefined;
}

export function refOf(child: KubernetesObject): ChildRef {
  return {
    apiVersion: child.apiVersion ?? '',
    kind: child.kind ?? '',
    name: child.metadata?.name ?? '',
    namespace: child.metadata?.namespace ?? '',
    ...(child.metadata?.uid ? { uid: child.metadata.uid } : {}),
  };
}

/** The labels every child carries, whatever the adapter set (found and cleaned up by them). */
export function childLabels(op: Operation): Record<string, string> {
  return {
    [LABEL_OPERATION]: op.metadata.name ?? '',
    [LABEL_OPERATION_NAMESPACE]: op.metadata.namespace ?? '',
  };
}

/** Children in the Operation's namespace get an owner reference (garbage-collected with it). */
export function withOwnership(op: Operation, child: ChildManifest): ChildManifest {
  const meta = { ...child.metadata, labels: { ...(child.metadata.labels ?? {}), ...childLabels(op) } };
  const out: ChildManifest = { ...child, metadata: meta };
  const uid = op.metadata.uid;
  const owned = child.metadata.namespace === op.metadata.namespace && uid;
  if (owned && !child.metadata.ownerReferences) {
    out.metadata.ownerReferences = [
      {
        apiVersion: op.apiVersion,
        kind: op.kind,
        name: op.metadata.name ?? '',
        uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
  }
  return out;
}

// ---- status building ------------------------------------------------------------------------------

class StatusBuilder {
  status: OperationStatus;
  readonly #gen: number | undefined;
  readonly #now: string;

  constructor(op: Operation, now: number) {
    this.status = structuredClone(op.status ?? {});
    this.#gen = op.metadata.generation;
    this.#now = formatTime(now);
    if (this.#gen !== undefined) this.status.observedGeneration = this.#gen;
  }

  cond(type: string, status: ConditionStatus, reason: string, message: string): this {
    this.status.conditions = setCondition(
      this.status.conditions as Condition[] | undefined,
      {
        type,
        status,
        reason,
        message,
        ...(this.#gen !== undefined ? { observedGeneration: this.#gen } : {}),
      },
      this.#now,
    );
    return this;
  }

  drop(type: string): this {
    const left = removeCondition(this.status.conditions as Condition[] | undefined, type);
    if (left.length > 0) this.status.conditions = left;
    else delete this.status.conditions;
    return this;
  }

  phase(p: OperationPhase): this {
    this.status.phase = p;
    if (p !== 'Blocked') delete this.status.queuePosition;
    if (isTerminalPhase(p)) this.status.finishedAt ??= this.#now;
    return this;
  }

  /** Final outcome: Succeeded True/False with `reason`; Running (if any) goes False with it too. */
  finish(phase: 'Succeeded' | 'Failed' | 'Cancelled', reason: string, message: string): this {
    this.phase(phase);
    this.cond(CONDITION_SUCCEEDED, phase === 'Succeeded' ? 'True' : 'False', reason, message);
    if (findCondition(this.status.conditions as Condition[] | undefined, CONDITION_RUNNING)) {
      this.cond(CONDITION_RUNNING, 'False', reason, message);
    }
    return this;
  }
}

/** An Event when the phase changes. */
function phaseEvent(
  before: OperationPhase | undefined,
  after: OperationStatus,
  reason: string,
  note: string,
): OperationEvent[] {
  if (before === after.phase) return [];
  return [{ type: after.phase === 'Failed' ? 'Warning' : 'Normal', reason, note }];
}

/** The Blocked reason before this decision, to announce a change of reason while Blocked. */
function blockedReason(op: Operation): string | undefined {
  const c = findCondition(op.status?.conditions as Condition[] | undefined, CONDITION_BLOCKED);
  return c?.status === 'True' ? c.reason : undefined;
}

// ---- the state machine ------------------------------------------------------------------------------

export function decide<T extends Template>(input: DecideInput<T>): Decision {
  return withCleanup(input, decideStep(input));
}

/**
 * An Operation that has ended (or ends now) gets the engine's clean-up (EngineAdapter.cleanup: a Verify's
 * scratch namespace goes whatever the outcome), looked at again while something is still going away.
 */
function withCleanup(input: DecideInput, d: Decision): Decision {
  const adapter = input.adapter;
  if (!adapter?.cleanup || !isTerminalPhase(d.status.phase)) return d;
  const { actions, pending } = adapter.cleanup(input.children, input.op);
  const out: Decision = actions.length > 0 ? { ...d, actions: [...(d.actions ?? []), ...actions] } : d;
  if (!pending || out.deleteOperation) return out;
  return { ...out, requeueAfterMs: Math.min(out.requeueAfterMs ?? CLEANUP_RECHECK_MS, CLEANUP_RECHECK_MS) };
}

/** How often clean-up that no watch event reports (a namespace going away) is looked at again. */
export const CLEANUP_RECHECK_MS = 10_000;

function decideStep<T extends Template>(input: DecideInput<T>): Decision {
  const { op } = input;
  const before = op.status?.phase;
  const request = pendingReconcileRequest(op);
  const handled = request !== undefined ? { reconcileHandled: request } : {};

  if (isTerminalPhase(before)) {
    if (request !== undefined && before === 'Failed') {
      const retry = reconcileRetry(input);
      if (retry.retry) return { ...decideFresh(input, resetForRetry(op)), ...handled };
      return {
        status: op.status ?? {},
        events: [{ type: 'Normal', reason: 'ReconcileIgnored', note: retry.why }],
        ...handled,
        ...ttl(input),
      };
    }
    return { status: op.status ?? {}, events: [], ...handled, ...ttl(input) };
  }
  const started = childRefsOf(op.status).length > 0 && before === 'Running';
  if (op.spec.cancel && !started) return { ...decideCancel(input, started), ...handled };
  if (started && isPaused(input.target)) return { ...decidePausedRunning(input), ...handled };
  if (op.spec.cancel) return { ...decideCancel(input, started), ...handled };
  if (!started) return { ...decideFresh(input, op), ...handled };
  return { ...decideRunning(input), ...handled };
}

function ttl(input: DecideInput): Pick<Decision, 'deleteOperation' | 'requeueAfterMs'> {
  const { op, now } = input;
  const phase = op.status?.phase;
  if (phase !== 'Succeeded' && phase !== 'Failed' && phase !== 'Cancelled') return {};
  const seconds = ttlSecondsFor(phase, op.spec.policy, templateOf(input)?.defaults);
  const finished = Date.parse(op.status?.finishedAt ?? '');
  if (seconds === undefined || Number.isNaN(finished)) return {};
  const at = finished + seconds * 1000;
  return at <= now ? { deleteOperation: true } : { requeueAfterMs: at - now };
}

function templateOf(input: DecideInput): Template | undefined {
  const r = resolveOperation(input.op, input.templates);
  return r.ok ? r.template : undefined;
}

function reconcileRetry(input: DecideInput): { retry: boolean; why: string } {
  // A re-run is the action again: only on the authority of a requester the webhook checked and signed,
  // who still holds the type verb (admitted.ts).
  const refused = rerunRefusal(input.op, input.facts?.admission);
  if (refused) return { retry: false, why: refused };
  const c = findCondition(input.op.status?.conditions as Condition[] | undefined, CONDITION_SUCCEEDED);
  const reason = c?.reason ?? '';
  if (RECONCILE_RETRY_REASONS.includes(reason)) return { retry: true, why: '' };
  if (input.adapter && input.children.length > 0 && !ACCEPTED_REASONS.includes(reason as never)) {
    const obs = input.adapter.observe(input.children, {
      op: input.op,
      attempt: input.op.status?.attempts ?? 1,
    });
    if (obs.phase === 'Failed' && obs.retryable === true) return { retry: true, why: '' };
  }
  return {
    retry: false,
    why: `ops.vworkspace.io/reconcile ignored: ${reason || 'this outcome'} is final (only ${RECONCILE_RETRY_REASONS.join(', ')} and retryable engine failures are re-run); create a new Operation`,
  };
}

/** A Failed Operation being re-evaluated: back to Pending, history (attempts, template) kept. */
function resetForRetry(op: Operation): Operation {
  const status = structuredClone(op.status ?? {});
  status.phase = 'Pending';
  delete status.finishedAt;
  delete status.startedAt;
  delete status.queuePosition;
  // A fresh evaluation: the grace period of TargetNotFound / RbacProfileMissing starts again.
  const conds = (status.conditions ?? []) as Condition[];
  status.conditions = conds.filter((c) => c.type === CONDITION_BLOCKED);
  return { ...op, status };
}

/** A not-started Operation whose target is paused: Blocked/TargetPaused, nothing evaluated or created. */
function decidePausedFresh(input: DecideInput, op: Operation): Decision {
  const b = new StatusBuilder(op, input.now);
  const ns = op.metadata.namespace ?? '';
  const name = op.spec.targetRef.name;
  const message = `ApplicationInstance ${name} is paused (${ANNOTATION_PAUSED}: "true"): nothing starts on it until then; ${resumeHint(ns, name)}`;
  b.drop(CONDITION_ACCEPTED);
  b.phase('Blocked');
  b.cond(CONDITION_BLOCKED, 'True', 'TargetPaused', message);
  b.cond(CONDITION_SUCCEEDED, 'Unknown', 'TargetPaused', message);
  const changed = input.op.status?.phase !== 'Blocked' || blockedReason(input.op) !== 'TargetPaused';
  return {
    status: b.status,
    events: changed ? [{ type: 'Normal', reason: 'TargetPaused', note: message }] : [],
  };
}

/**
 * A running Operation whose target is paused: its child is left alone (not observed, retried, stopped,
 * timed out or cancelled); Succeeded=Unknown/TargetPaused says so, Running keeps the last engine reason.
 */
function decidePausedRunning(input: DecideInput): Decision {
  const { op, now } = input;
  const b = new StatusBuilder(op, now);
  const ns = op.metadata.namespace ?? '';
  const name = op.spec.targetRef.name;
  const children = childRefsOf(op.status)
    .map((r) => `${r.kind} ${r.namespace}/${r.name}`)
    .join(', ');
  const cancel = op.spec.cancel ? '; spec.cancel is acted on once it resumes' : '';
  const message = `ApplicationInstance ${name} is paused (${ANNOTATION_PAUSED}: "true"): ${children} runs on its own and is not followed, retried, stopped or timed out until then${cancel}; ${resumeHint(ns, name)}`;
  b.cond(CONDITION_SUCCEEDED, 'Unknown', 'TargetPaused', message);
  const prev = findCondition(op.status?.conditions as Condition[] | undefined, CONDITION_SUCCEEDED);
  return {
    status: b.status,
    events:
      prev?.reason === 'TargetPaused' ? [] : [{ type: 'Normal', reason: 'TargetPaused', note: message }],
  };
}

/** When policy.preconditionDeadlineSeconds runs out for a not-started Operation (from its creation). */
function preconditionDeadlineAt(op: Operation, template: Template | undefined): number | undefined {
  const seconds = preconditionDeadlineSeconds(op.spec.policy, template?.defaults);
  const created = Date.parse(String(op.metadata.creationTimestamp ?? ''));
  if (seconds === undefined || Number.isNaN(created)) return undefined;
  return created + seconds * 1000;
}

function decideFresh<T extends Template>(input: DecideInput<T>, op: Operation): Decision {
  const { now } = input;
  const before = input.op.status?.phase;
  if (isPaused(input.target ?? input.facts?.target)) return decidePausedFresh(input, op);
  const b = new StatusBuilder(op, now);
  const facts = input.facts;
  if (!facts) throw new Error('decide: preconditions facts are required before the Operation starts');
  const result = evaluatePreconditions(op, input.templates, facts);
  if (result.template) b.status.template = result.template.name;
  if (result.inputs) b.status.inputs = result.inputs;

  // policy.preconditionDeadlineSeconds: waiting (Blocked, or Pending in a grace period) ends here.
  const giveUpAt = result.outcome === 'satisfied' ? undefined : preconditionDeadlineAt(op, result.template);
  const waiting = result.outcome === 'blocked' || (result.outcome === 'rejected' && !result.permanent);
  if (waiting && giveUpAt !== undefined && now >= giveUpAt) {
    const seconds = (op.spec.policy?.preconditionDeadlineSeconds ??
      result.template?.defaults?.preconditionDeadlineSeconds)!;
    const message = `policy.preconditionDeadlineSeconds (${seconds}s since creation) passed while waiting: ${result.reason}: ${result.message}. Fix that, then create a new Operation (or one with a longer deadline)`;
    b.finish('Failed', 'PreconditionDeadlineExceeded', message);
    return {
      status: b.status,
      events: phaseEvent(before, b.status, 'PreconditionDeadlineExceeded', message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }
  const untilGiveUp = giveUpAt === undefined ? Number.POSITIVE_INFINITY : giveUpAt - now;

  if (result.outcome === 'rejected') {
    b.drop(CONDITION_BLOCKED);
    b.cond(CONDITION_ACCEPTED, 'False', result.reason, result.message);
    if (!result.permanent) {
      const grace = input.graceMs ?? DEFAULT_ACCEPTANCE_GRACE_MS;
      const prev = findCondition(op.status?.conditions as Condition[] | undefined, CONDITION_ACCEPTED);
      const since =
        prev?.status === 'False' && prev.reason === result.reason ? Date.parse(prev.lastTransitionTime) : now;
      const deadline = since + grace;
      if (now < deadline) {
        b.phase('Pending');
        b.cond(
          CONDITION_SUCCEEDED,
          'Unknown',
          result.reason,
          `${result.message} (fails at ${formatTime(deadline)} if still so)`,
        );
        const events: OperationEvent[] =
          prev?.reason !== result.reason || prev.status !== 'False'
            ? [{ type: 'Warning', reason: result.reason, note: result.message }]
            : [];
        // Nothing watches for an engine's CRDs appearing: discovery is re-read at an interval instead.
        // Nor for a backup appearing in Velero's namespace (its backup sync, a Backup finishing).
        const poll =
          result.reason === 'EngineNotInstalled' || result.reason === 'BackupNotFound'
            ? (input.engineRecheckMs ?? ENGINE_RECHECK_MS)
            : Number.POSITIVE_INFINITY;
        return {
          status: b.status,
          events,
          requeueAfterMs: Math.max(1, Math.min(deadline - now, poll, untilGiveUp)),
        };
      }
    }
    b.finish('Failed', result.reason, result.message);
    return {
      status: b.status,
      events: phaseEvent(before, b.status, result.reason, result.message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }

  if (result.outcome === 'blocked') {
    b.drop(CONDITION_ACCEPTED);
    b.phase('Blocked');
    b.cond(CONDITION_BLOCKED, 'True', result.reason, result.message);
    b.cond(CONDITION_SUCCEEDED, 'Unknown', result.reason, result.message);
    if (result.queuePosition !== undefined) b.status.queuePosition = result.queuePosition;
    else delete b.status.queuePosition;
    const changed = before !== 'Blocked' || blockedReason(input.op) !== result.reason;
    const wake = Math.min(
      result.wakeAt ? result.wakeAt.getTime() - now : Number.POSITIVE_INFINITY,
      untilGiveUp,
    );
    return {
      status: b.status,
      events: changed ? [{ type: 'Normal', reason: result.reason, note: result.message }] : [],
      ...(Number.isFinite(wake) ? { requeueAfterMs: Math.max(1, wake) } : {}),
    };
  }

  // satisfied
  const adapter = input.adapter;
  const accept = () => {
    b.cond(CONDITION_ACCEPTED, 'True', 'TemplateValidated', result.message);
    b.cond(CONDITION_BLOCKED, 'False', 'PreconditionsSatisfied', 'every precondition holds');
  };
  if (!adapter) {
    const message = `this operator build has no adapter for engine ${op.spec.engine}; upgrade the operator or use another engine`;
    b.cond(CONDITION_ACCEPTED, 'False', 'CapabilityMissing', message);
    b.finish('Failed', 'CapabilityMissing', message);
    return { status: b.status, events: phaseEvent(before, b.status, 'CapabilityMissing', message) };
  }
  const attempt = (op.status?.attempts ?? 0) + 1;
  const target = targetOf(facts)!;
  const m = adapter.materialize({
    op,
    target,
    template: result.template as never,
    parameters: result.parameters,
    env: input.env,
    attempt,
  });
  if (!m.ok) {
    const reason = ACCEPTED_REASONS.includes(m.reason as never) ? m.reason : 'InvalidParameters';
    b.cond(CONDITION_ACCEPTED, 'False', reason, m.message);
    b.finish('Failed', reason, m.message);
    return { status: b.status, events: phaseEvent(before, b.status, reason, m.message) };
  }
  const children = m.children.map((c) => withOwnership(op, c));
  accept();
  if (result.policy.dryRun) {
    // Values an engine read from a Secret never reach status (the adapter's redacted plan).
    const plan = m.plan ? m.plan.map((c) => withOwnership(op, c)) : children;
    b.status.plan = { children: plan as unknown[] } as Record<string, unknown>;
    const names = children.map((c) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`).join(', ');
    const message = `dry run: nothing was created; status.plan holds ${names}`;
    b.finish('Succeeded', 'DryRunCompleted', message);
    return {
      status: b.status,
      events: phaseEvent(before, b.status, 'DryRunCompleted', message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }
  // The children as created have no status yet: the adapter's observation of them is the initial
  // progress reason (VeleroBackupInProgress, JobRunning, …).
  const initial = adapter.observe(children, { op, attempt });
  const progress = initial.phase === 'Running' ? initial : undefined;
  const reason = progress?.reason ?? 'Running';
  const refs = children.map(refOf);
  b.phase('Running');
  b.status.attempts = attempt;
  b.status.startedAt ??= formatTime(now);
  b.status.childRef = refs[0]!;
  b.status.childRefs = refs;
  delete b.status.outputs;
  const message =
    progress?.message ?? `created ${refs.map((r) => `${r.kind} ${r.namespace}/${r.name}`).join(', ')}`;
  b.cond(CONDITION_RUNNING, 'True', reason, message);
  b.cond(CONDITION_SUCCEEDED, 'Unknown', reason, message);
  const note = `attempt ${attempt}: created ${refs.map((r) => `${r.kind} ${r.namespace}/${r.name}`).join(', ')}`;
  return {
    status: b.status,
    create: children,
    ...(m.prepare?.length ? { prepare: m.prepare } : {}),
    events: [{ type: 'Normal', reason: attempt > 1 ? 'Retrying' : 'Started', note }],
    ...deadlineRequeue(input, b.status),
  };
}

function deadlineAt(input: DecideInput, status: OperationStatus): number | undefined {
  const seconds =
    input.op.spec.policy?.activeDeadlineSeconds ?? templateOf(input)?.defaults?.activeDeadlineSeconds;
  const started = Date.parse(status.startedAt ?? '');
  if (seconds === undefined || Number.isNaN(started)) return undefined;
  return started + seconds * 1000;
}

function deadlineRequeue(input: DecideInput, status: OperationStatus): Pick<Decision, 'requeueAfterMs'> {
  const at = deadlineAt(input, status);
  return at === undefined ? {} : { requeueAfterMs: Math.max(1, at - input.now) };
}

/** How the Running condition says stop actions were carried out (decideCancel reads it back). */
const STOPPING = 'spec.cancel: stopping ';
/** … and that the engine is putting the application back after the stop (a `settling` wait). */
const SETTLING = 'spec.cancel: putting it back: ';

function decideCancel(input: DecideInput, started: boolean): Decision {
  const { op, now } = input;
  const before = op.status?.phase;
  const b = new StatusBuilder(op, now);
  if (!started) {
    const message = 'spec.cancel: cancelled before any child was created';
    b.finish('Cancelled', 'Cancelled', message);
    return { status: b.status, events: phaseEvent(before, b.status, 'Cancelled', message) };
  }
  const adapter = input.adapter;
  const observeInput = observeInputOf(input);
  const obs =
    adapter && input.children.length > 0 ? adapter.observe(input.children, observeInput) : undefined;
  const names = childRefsOf(op.status)
    .map((r) => `${r.kind} ${r.namespace}/${r.name}`)
    .join(', ');
  if (obs?.rollback) b.status.rollback = obs.rollback;
  const announce = findCondition(
    op.status?.conditions as Condition[] | undefined,
    CONDITION_RUNNING,
  )?.message;
  if (!obs || obs.phase !== 'Running') {
    // Say what happened: gone, ended by the stop this decision asked for earlier (an Argo Workflow ends
    // Failed once shut down), or finished on its own before any stop was asked.
    const ended = !obs
      ? `spec.cancel: ${names} deleted`
      : announce?.startsWith(STOPPING) || announce?.startsWith(SETTLING)
        ? `spec.cancel: ${names} stopped (${obs.reason})`
        : `spec.cancel: ${names} finished (${obs.reason}) before it could be stopped`;
    const message = obs?.stopped ? `${ended}; ${obs.stopped}` : ended;
    b.finish('Cancelled', 'Cancelled', message);
    return { status: b.status, events: phaseEvent(before, b.status, 'Cancelled', message) };
  }
  const all = adapter!.cancel(input.children, observeInput);
  const actions = actionable(all);
  const waits = all.flatMap((a) => (a.kind === 'wait' ? [a.message] : []));
  const settling = all.some((a) => a.kind === 'wait' && a.settling === true);
  if (actions.length === 0 && waits.length === 0) {
    const message = `spec.cancel: engine ${op.spec.engine} cannot stop ${names}; it may still finish on its own`;
    b.finish('Cancelled', 'Cancelled', message);
    return { status: b.status, events: phaseEvent(before, b.status, 'Cancelled', message) };
  }
  const message =
    waits.length > 0
      ? `${settling ? SETTLING : 'spec.cancel: '}${waits.join('; ')}`
      : `${STOPPING}${names}; waiting for it to stop`;
  b.cond(CONDITION_RUNNING, 'True', obs.reason, message);
  b.cond(CONDITION_SUCCEEDED, 'Unknown', obs.reason, message);
  return {
    status: b.status,
    cancel: actions,
    events: announce === message ? [] : [{ type: 'Normal', reason: 'Cancelling', note: message }],
    ...waitRecheck(all),
  };
}

/** The soonest `recheckAfterMs` of the waits: they wait for objects that are not children (no event). */
function waitRecheck(actions: readonly CancelAction[]): Pick<Decision, 'requeueAfterMs'> {
  const ms = actions.flatMap((a) => (a.kind === 'wait' && a.recheckAfterMs ? [a.recheckAfterMs] : []));
  return ms.length > 0 ? { requeueAfterMs: Math.min(...ms) } : {};
}

/** What the controller carries out: `none` and `wait` only shape the message. */
function actionable(actions: readonly CancelAction[]): CancelAction[] {
  return actions.filter((a) => a.kind !== 'none' && a.kind !== 'wait');
}

/** What observe and cancel are told: the attempt, the pods' outcomes and the facts gathered now. */
function observeInputOf(input: DecideInput): ObserveInput {
  const { op } = input;
  return {
    op,
    attempt: op.status?.attempts ?? 1,
    ...(input.pods ? { pods: input.pods } : {}),
    env: input.env,
  };
}

function decideRunning(input: DecideInput): Decision {
  const { op, now } = input;
  const b = new StatusBuilder(op, now);
  const adapter = input.adapter;
  const refs = childRefsOf(op.status);
  const names = refs.map((r) => `${r.kind} ${r.namespace}/${r.name}`).join(', ');
  const attempt = op.status?.attempts ?? 1;
  const retryLimit = op.spec.policy?.retryLimit ?? templateOf(input)?.defaults?.retryLimit ?? 0;

  // activeDeadlineSeconds: stop the child, fail now (as a Job does), whatever it reports; only an engine
  // putting the application back after the stop (a settling wait: a helm rollback) is waited for.
  const deadline = deadlineAt(input, b.status);
  if (deadline !== undefined && now >= deadline) {
    const seconds = (deadline - Date.parse(b.status.startedAt ?? '')) / 1000;
    const passed = `policy.activeDeadlineSeconds (${seconds}s since ${b.status.startedAt}) passed`;
    const observeInput = observeInputOf(input);
    const all = adapter && input.children.length > 0 ? adapter.cancel(input.children, observeInput) : [];
    const cancel = actionable(all);
    const settling = all.flatMap((a) => (a.kind === 'wait' && a.settling === true ? [a.message] : []));
    const running = findCondition(op.status?.conditions as Condition[] | undefined, CONDITION_RUNNING);
    const wasSettling = running?.status === 'True' && running.reason === 'DeadlineExceeded';
    if (settling.length > 0) {
      const message = `${passed}; ${settling.join('; ')}`;
      b.cond(CONDITION_RUNNING, 'True', 'DeadlineExceeded', message);
      b.cond(CONDITION_SUCCEEDED, 'Unknown', 'DeadlineExceeded', message);
      return {
        status: b.status,
        cancel,
        events: running?.message === message ? [] : [{ type: 'Normal', reason: 'Cancelling', note: message }],
        ...waitRecheck(all),
      };
    }
    const last =
      wasSettling && adapter && input.children.length > 0
        ? adapter.observe(input.children, observeInput).stopped
        : undefined;
    const stopped =
      cancel.length > 0 || input.children.length === 0 || wasSettling
        ? `${names} was stopped${last ? `; ${last}` : ''}`
        : `engine ${op.spec.engine} cannot stop ${names} now; it may still finish on its own`;
    const message = `${passed}; ${stopped}. Raise the deadline on a new Operation if the work needs longer`;
    b.finish('Failed', 'DeadlineExceeded', message);
    return {
      status: b.status,
      cancel,
      events: phaseEvent('Running', b.status, 'DeadlineExceeded', message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }
  if (!adapter) throw new Error(`no adapter for engine ${op.spec.engine}`);

  let obs: Observation;
  if (input.children.length === 0) {
    obs = {
      phase: 'Failed',
      reason: 'ChildDeleted',
      message: `${names} was deleted by someone else before it finished`,
      retryable: true,
    };
  } else {
    obs = adapter.observe(input.children, observeInputOf(input));
  }
  if (obs.outputs && Object.keys(obs.outputs).length > 0) {
    b.status.outputs = { ...(b.status.outputs ?? {}), ...obs.outputs };
  }
  if (obs.rollback) b.status.rollback = obs.rollback;

  if (obs.phase === 'Running') {
    b.cond(CONDITION_RUNNING, 'True', obs.reason, obs.message);
    b.cond(CONDITION_SUCCEEDED, 'Unknown', obs.reason, obs.message);
    const actions = actionable(obs.actions ?? []);
    const deadlineIn = deadlineRequeue(input, b.status).requeueAfterMs;
    const wake = Math.min(
      deadlineIn ?? Number.POSITIVE_INFINITY,
      obs.recheckAfterMs ?? Number.POSITIVE_INFINITY,
    );
    return {
      status: b.status,
      events: [],
      ...(actions.length > 0 ? { actions } : {}),
      ...(Number.isFinite(wake) ? { requeueAfterMs: wake } : {}),
    };
  }
  if (obs.phase === 'Succeeded') {
    b.finish('Succeeded', obs.reason, obs.message);
    return {
      status: b.status,
      events: phaseEvent('Running', b.status, obs.reason, obs.message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }

  // Failed.
  const retryable = obs.retryable !== false;
  if (retryable && attempt <= retryLimit) {
    if (input.failureSeenAt === undefined || input.failureSeenAt > now) {
      const wait = retryBackoffMs(attempt);
      const message = `attempt ${attempt} failed (${obs.reason}: ${obs.message}); attempt ${attempt + 1} of ${retryLimit + 1} starts in ${wait / 1000}s`;
      b.cond(CONDITION_RUNNING, 'True', obs.reason === 'ChildDeleted' ? 'Running' : obs.reason, message);
      b.cond(CONDITION_SUCCEEDED, 'Unknown', obs.reason === 'ChildDeleted' ? 'Running' : obs.reason, message);
      return {
        status: b.status,
        events: [{ type: 'Warning', reason: 'AttemptFailed', note: message }],
        failureSeen: true,
        requeueAfterMs: wait,
      };
    }
    const due = input.failureSeenAt + retryBackoffMs(attempt);
    if (now < due) return { status: b.status, events: [], requeueAfterMs: due - now };
    // Next attempt: same preconditions already held; materialize attempt N+1 with a new name.
    const resolved = resolveOperation(op, input.templates);
    const target = input.target;
    if (!resolved.ok || !target) {
      const message = resolved.ok
        ? `attempt ${attempt} failed (${obs.reason}) and the target is gone; no retry`
        : resolved.message;
      b.finish('Failed', resolved.ok ? 'TargetNotFound' : resolved.reason, message);
      return { status: b.status, events: phaseEvent('Running', b.status, 'Failed', message) };
    }
    const m = adapter.materialize({
      op,
      target,
      template: resolved.template as never,
      parameters: resolved.parameters,
      env: input.env,
      attempt: attempt + 1,
    });
    if (!m.ok) {
      b.finish('Failed', obs.reason, `${obs.message}; retry impossible: ${m.message}`);
      return { status: b.status, events: phaseEvent('Running', b.status, obs.reason, m.message) };
    }
    const children = m.children.map((c) => withOwnership(op, c));
    const newRefs = children.map(refOf);
    b.status.attempts = attempt + 1;
    b.status.childRef = newRefs[0]!;
    b.status.childRefs = newRefs;
    delete b.status.outputs;
    const initial = adapter.observe(children, { op, attempt: attempt + 1 });
    const reason = initial.phase === 'Running' ? initial.reason : 'Running';
    const message = `attempt ${attempt + 1} of ${retryLimit + 1}: created ${newRefs.map((r) => `${r.kind} ${r.namespace}/${r.name}`).join(', ')} after ${obs.reason}`;
    b.cond(CONDITION_RUNNING, 'True', reason, message);
    b.cond(CONDITION_SUCCEEDED, 'Unknown', reason, message);
    return {
      status: b.status,
      create: children,
      ...(m.prepare?.length ? { prepare: m.prepare } : {}),
      events: [{ type: 'Normal', reason: 'Retrying', note: message }],
      ...deadlineRequeue(input, b.status),
    };
  }
  if (retryable && (retryLimit > 0 || obs.reason === 'ChildDeleted')) {
    const message = `${obs.reason}: ${obs.message}; gave up after ${attempt} attempt(s) (policy.retryLimit ${retryLimit}). Fix the cause, then set a new value of ops.vworkspace.io/reconcile to try again`;
    b.finish('Failed', 'RetryLimitExceeded', message);
    return {
      status: b.status,
      events: phaseEvent('Running', b.status, 'RetryLimitExceeded', message),
      ...ttl({ ...input, op: { ...op, status: b.status } }),
    };
  }
  b.finish('Failed', obs.reason, obs.message);
  return {
    status: b.status,
    events: phaseEvent('Running', b.status, obs.reason, obs.message),
    ...ttl({ ...input, op: { ...op, status: b.status } }),
  };
}
