// Precondition DependenciesSucceeded: a template may require a recent real success of another type on
// the same target first (e.g. an Upgrade needs a Backup started less than 1h ago). Pure. Until it holds
// the Operation waits (Blocked/DependencyNotMet) and is re-evaluated whenever an Operation on the target
// ends; the message says what to run.
import type { Operation } from '../api/operation.ts';
import { describeFilter } from '../catalog/flow.ts';
import type { Dependency, Template } from '../catalog/template.ts';
import { formatGoDuration, parsePositiveDuration } from '../schedule/duration.ts';
import { latestSucceeded, onSameTarget, startedAtMs, unfinished } from './history.ts';

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
  if (latest && (maxAgeMs === undefined || since <= maxAgeMs)) return { ok: true };

  const target = op.spec.targetRef.name;
  const within = dep.maxAge ? ` started within the last ${dep.maxAge}` : '';
  const found = latest
    ? `the latest, ${latest.metadata.name}, started ${Number.isNaN(since) ? 'at an unknown time' : `${formatGoDuration(since)} ago`}`
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
