// Precondition DependenciesSucceeded: a template may require a recent real success of another type on
// the same target first (e.g. an Upgrade needs a Backup started less than 1h ago). What counts: an
// Operation of that type (engine, template when the dependency names them) on the same target, Succeeded,
// not a dry run, started within maxAge, and whose product has not expired by its own parameters.ttl (a
// Backup kept for 1s protects nothing). What it contains is the template's to pin (dependency.template).
// Pure. Until it holds
// the Operation waits (Blocked/DependencyNotMet) and is re-evaluated whenever an Operation on the target
// ends; the message says what to run.
import type { Operation } from '../api/operation.ts';
import { describeFilter } from '../catalog/flow.ts';
import type { Dependency, Template } from '../catalog/template.ts';
import { formatGoDuration, parsePositiveDuration } from '../time/duration.ts';
import { latestSucceeded, onSameTarget, startedAtMs, unfinished } from './history.ts';

/**
 * When what a succeeded Operation made is already gone by its own retention (parameters.ttl, e.g. a velero
 * Backup kept 1s): such a success never satisfies a dependency, whatever its age. undefined: still kept.
 */
function expiredAt(o: Operation, now: Date): string | undefined {
  const ttl = o.spec.parameters?.ttl;
  if (typeof ttl !== 'string') return undefined;
  const d = parsePositiveDuration(ttl);
  const end = Date.parse(o.status?.finishedAt ?? '');
  if (!d.ok || Number.isNaN(end) || end + d.ms > now.getTime()) return undefined;
  return new Date(end + d.ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export type DependencyResult = { ok: true } | { ok: false; message: string };

export function checkDependencies(
  op: Operation,
  template: Pick<Template, 'name' | 'dependencies'>,
  operations: readonly Operation[],
  now: Date,
): DependencyResult {
  for (const dep of template.dependencies ?? []) {
    const r = checkOne(op, template.name, dep, operations, now);
    if (!r.ok) return r;
  }
  return { ok: true };
}

function checkOne(
  op: Operation,
  templateName: string,
  dep: Dependency,
  operations: readonly Operation[],
  now: Date,
): DependencyResult {
  const age = dep.maxAge ? parsePositiveDuration(dep.maxAge) : undefined;
  const maxAgeMs = age?.ok ? age.ms : undefined;
  const latest = latestSucceeded(op, operations, dep);
  const since = latest ? now.getTime() - startedAtMs(latest) : Number.NaN;
  const gone = latest ? expiredAt(latest, now) : undefined;
  if (latest && !gone && (maxAgeMs === undefined || since <= maxAgeMs)) return { ok: true };

  const target = op.spec.targetRef.name;
  const within = dep.maxAge ? ` started within the last ${dep.maxAge}` : '';
  const found = latest
    ? `the latest, ${latest.metadata.name}, started ${Number.isNaN(since) ? 'at an unknown time' : `${formatGoDuration(since)} ago`}${gone ? ` and what it made expired ${gone} (its parameters.ttl)` : ''}`
    : 'there is none';
  const running = unfinished(onSameTarget(op, operations, dep)).map(
    (o) => `${o.metadata.name} (${o.status?.phase ?? 'Pending'})`,
  );
  const next =
    running.length > 0
      ? `waits for ${running.join(', ')}`
      : `run one (an Operation with type: ${dep.type}${dep.engine ? `, engine: ${dep.engine}` : ''}${dep.template ? `, template: ${dep.template}` : ''}, targetRef.name: ${target}); this Operation starts when it succeeds`;
  return {
    ok: false,
    message: `template ${templateName} needs a Succeeded ${describeFilter(dep)} of ${target}${within}: ${found}; ${next}`,
  };
}
