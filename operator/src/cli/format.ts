// What `kubectl vws` prints (pure): status of each kind, one progress line per change of an Operation, and
// the history table.

import {
  ANNOTATION_SCHEDULED_TIME,
  ANNOTATION_TRIGGER,
  type ApplicationInstance,
  type CronOperation,
  type Operation,
  type RolloutStatus,
  TERMINAL_PHASES,
  type WatchOperation,
} from '../api/index.ts';
import { printableLine } from '../api/printable.ts';

type Cond = { type: string; status: string; reason?: string; message?: string };

// Every string below comes from the cluster, much of it written by tenants or their workloads (a
// workflow node's message): each is printed as one printable line (api/printable.ts).
const conditionLine = (c: Cond) =>
  printableLine(`${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ''}${c.message ? `: ${c.message}` : ''}`);

function rows(pairs: [string, string | number | boolean | undefined][]): string[] {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${`${k}:`.padEnd(width)} ${printableLine(String(v))}`);
}

export function isFinished(op: Operation): boolean {
  return TERMINAL_PHASES.includes(op.status?.phase ?? 'Pending');
}

/** The condition that explains the Operation now: Succeeded's reason while it repeats the current one. */
function explaining(op: Operation): Cond | undefined {
  const cs = (op.status?.conditions ?? []) as Cond[];
  return (
    cs.find((c) => c.type === 'Succeeded') ?? cs.find((c) => c.type === 'Blocked' && c.status === 'True')
  );
}

/** "Backup/velero on shop" plus how it came to be. */
export function triggerOf(op: Operation): string {
  const a = op.metadata.annotations ?? {};
  const l = op.metadata.labels ?? {};
  const owner = l['ops.vworkspace.io/cron-operation'] ?? l['ops.vworkspace.io/watch-operation'];
  if (a[ANNOTATION_SCHEDULED_TIME])
    return `schedule ${a[ANNOTATION_SCHEDULED_TIME]}${owner ? ` (${owner})` : ''}`;
  if (a[ANNOTATION_TRIGGER]) return `${a[ANNOTATION_TRIGGER]}${owner ? ` (${owner})` : ''}`;
  return a['ops.vworkspace.io/created-by'] ? `by ${a['ops.vworkspace.io/created-by']}` : '-';
}

export function operationStatus(op: Operation): string {
  const s = op.status ?? {};
  const why = explaining(op);
  const child = s.childRef
    ? `${s.childRef.kind} ${s.childRef.namespace ? `${s.childRef.namespace}/` : ''}${s.childRef.name}`
    : undefined;
  const outputs = s.outputs
    ? Object.entries(s.outputs)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ')
    : undefined;
  return [
    `Operation ${op.metadata.namespace}/${op.metadata.name}`,
    ...rows([
      [
        'Type',
        `${op.spec.type}/${op.spec.engine}${op.spec.template ? ` (template ${op.spec.template})` : ''}`,
      ],
      ['Target', op.spec.targetRef?.name],
      ['Trigger', triggerOf(op)],
      ['Phase', `${s.phase ?? 'Pending'}${why?.reason ? ` (${why.reason})` : ''}`],
      ['Queue', s.queuePosition],
      ['Started', s.startedAt],
      ['Finished', s.finishedAt],
      ['Attempts', s.attempts],
      ['Child', child],
      ['Outputs', outputs],
      ['Approved by', op.metadata.annotations?.['ops.vworkspace.io/approved-by']],
    ]),
    'Conditions:',
    ...((s.conditions ?? []) as Cond[]).map((c) => `  ${conditionLine(c)}`),
  ].join('\n');
}

/** One line per observed change: time, phase, reason and message. */
export function progressLine(op: Operation, at: Date): string {
  const why = explaining(op);
  return printableLine(
    `${at.toISOString().slice(11, 19)} ${op.metadata.name} ${op.status?.phase ?? 'Pending'}${why?.reason ? ` ${why.reason}` : ''}${why?.message ? `: ${why.message}` : ''}`,
  );
}

export function cronStatus(c: CronOperation): string {
  const s = c.status ?? {};
  const spec = c.spec;
  const target = spec.targetSelector
    ? `fleet ${JSON.stringify(spec.targetSelector)}`
    : spec.operationTemplate.spec.targetRef?.name;
  return [
    `CronOperation ${c.metadata.namespace}/${c.metadata.name}`,
    ...rows([
      ['Schedule', `${spec.schedule} (${spec.timeZone ?? 'UTC'})${spec.suspend ? ', suspended' : ''}`],
      ['Runs', `${spec.operationTemplate.spec.type}/${spec.operationTemplate.spec.engine} on ${target}`],
      [
        'Concurrency',
        `${spec.concurrencyPolicy ?? 'Allow'}${spec.maxConcurrent ? `, at most ${spec.maxConcurrent} at once` : ''}`,
      ],
      ['Last schedule', s.lastScheduleTime],
      ['Last success', s.lastSuccessfulTime],
      ['Next', s.nextRuns?.map((r) => `${r.local}${r.dstShifted ? ' (DST)' : ''}`).join(', ')],
      ['Active', s.active?.map((a) => a.name).join(', ')],
      [
        'Run now',
        s.manualRun
          ? `${s.manualRun.request}: ${s.manualRun.phase}${s.manualRun.operation ? ` (${s.manualRun.operation})` : ''}`
          : undefined,
      ],
      [
        'Queued',
        s.queue
          ?.map((q) => `${q.targets.join(', ')} (${q.reason} ${q.request ?? q.scheduledTime})`)
          .join('; '),
      ],
      ['Missed', s.missedSlots?.map((m) => `${m.scheduledTime}${m.reason ? ` ${m.reason}` : ''}`).join(', ')],
    ]),
    ...(s.rollout ? rolloutRows(s.rollout) : []),
    ...((s.conditions ?? []) as Cond[]).map((x) => `Condition: ${conditionLine(x)}`),
  ].join('\n');
}

/** "3: a, b, c", or "25: a, …, t and 5 more". */
const nameList = (l: { count: number; names: string[] }) =>
  l.count === 0
    ? undefined
    : `${l.count}: ${l.names.join(', ')}${l.count > l.names.length ? ` and ${l.count - l.names.length} more` : ''}`;

function rolloutRows(r: RolloutStatus): string[] {
  const run =
    r.run.reason === 'manual'
      ? `run-now ${r.run.request ?? ''}`
      : r.run.reason === 'change'
        ? `change ${r.run.change ?? ''} first seen ${r.run.scheduledTime}`
        : `slot ${r.run.scheduledTime}`;
  return [
    `Rollout (${run}, began ${r.startedAt}):`,
    ...rows([
      ['  Phase', `${r.phase} (${r.reason})${r.wave ? `, wave ${r.wave.index} of ${r.wave.of}` : ''}`],
      [
        '  Failures',
        `${r.failures.counted} of a budget of ${r.failures.budget}${r.resumedAt ? ` since the resume at ${r.resumedAt}` : ''}`,
      ],
      ['  Failed', nameList(r.failed)],
      ['  Running', nameList(r.running)],
      ['  Succeeded', nameList(r.succeeded)],
      ['  Not started', nameList(r.notStarted)],
      ['  Cancelled', nameList(r.cancelled)],
      ['  Removed', nameList(r.removed)],
      ['  Abandoned', r.abandonedAt],
    ]),
  ];
}

/** The waiting triggers, the first five named: a rolled-out change can hold back a whole fleet. */
function pendingLine(targets: readonly { name: string; pendingTrigger?: string }[]): string | undefined {
  const pending = targets.filter((t) => t.pendingTrigger).map((t) => `${t.name} ${t.pendingTrigger}`);
  if (pending.length === 0) return undefined;
  const more = pending.length > 5 ? ` and ${pending.length - 5} more` : '';
  return `${pending.slice(0, 5).join(', ')}${more}`;
}

export function watchStatus(w: WatchOperation): string {
  const s = w.status ?? {};
  return [
    `WatchOperation ${w.metadata.namespace}/${w.metadata.name}`,
    ...rows([
      ['Runs', `${w.spec.operationTemplate.spec.type}/${w.spec.operationTemplate.spec.engine}`],
      ['Watching', s.watchingResources],
      ['Last trigger', s.lastTriggerTime],
      ['Last success', s.lastSuccessfulTime],
      ['Active', s.active?.map((a) => `${a.name}${a.target ? ` (${a.target})` : ''}`).join(', ')],
      ['Pending', pendingLine(s.targets ?? [])],
    ]),
    ...(s.rollout ? rolloutRows(s.rollout) : []),
    ...((s.conditions ?? []) as Cond[]).map((x) => `Condition: ${conditionLine(x)}`),
  ].join('\n');
}

export function instanceStatus(i: ApplicationInstance): string {
  const s = i.status ?? {};
  const ready = ((s.conditions ?? []) as Cond[]).find((c) => c.type === 'Ready');
  return [
    `ApplicationInstance ${i.metadata.namespace}/${i.metadata.name}`,
    ...rows([
      ['Ready', ready ? conditionLine(ready).replace(/^Ready=/, '') : undefined],
      [
        'Release',
        s.release
          ? `revision ${s.release.revision} ${s.release.status ?? ''} chart ${s.release.chartVersion ?? '?'}`
          : undefined,
      ],
      ['Capabilities', s.capabilities?.map((c) => `${c.verb}=${c.engine}`).join(', ')],
      [
        'Next run',
        s.nextScheduledRun
          ? `${s.nextScheduledRun.time} ${s.nextScheduledRun.type} (${s.nextScheduledRun.cronOperation})`
          : undefined,
      ],
      [
        'Last backup',
        s.lastSuccessfulBackup
          ? `${s.lastSuccessfulBackup.time} (${s.lastSuccessfulBackup.operation})`
          : undefined,
      ],
      [
        'Last verified',
        s.lastVerifiedBackup
          ? `${s.lastVerifiedBackup.time} (${s.lastVerifiedBackup.operation}), RTO ${s.lastVerifiedBackup.rtoSeconds}s`
          : undefined,
      ],
      [
        'Last drill',
        s.lastDrill
          ? `${s.lastDrill.result}${s.lastDrill.reason ? ` ${s.lastDrill.reason}` : ''} at ${s.lastDrill.time} (${s.lastDrill.operation})`
          : undefined,
      ],
    ]),
    ...(s.operations?.length ? ['Operations:'] : []),
    ...(s.operations ?? []).map(
      (o) =>
        `  ${o.type}: ${o.current ? `${o.active ?? 1} active, ${o.current.name} ${o.current.phase}${o.current.reason ? ` ${o.current.reason}` : ''}` : 'none active'}${o.last ? `; last ${o.last.name} ${o.last.phase}${o.last.reason ? ` ${o.last.reason}` : ''} at ${o.last.time ?? '?'}` : ''}`,
    ),
  ].join('\n');
}

function duration(op: Operation): string {
  const a = Date.parse(op.status?.startedAt ?? '');
  const b = Date.parse(op.status?.finishedAt ?? '');
  if (Number.isNaN(a) || Number.isNaN(b)) return '-';
  const s = Math.round((b - a) / 1000);
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${(s / 3600).toFixed(1)}h`;
}

/** The history table, newest first: what kubectl get would show plus how each one was triggered. */
export function historyTable(ops: readonly Operation[], withNamespace = false): string {
  const header = [
    ...(withNamespace ? ['NAMESPACE'] : []),
    'NAME',
    'TYPE',
    'TARGET',
    'TRIGGER',
    'PHASE',
    'REASON',
    'STARTED',
    'DURATION',
  ];
  const lines = [...ops]
    .sort(
      (x, y) =>
        Date.parse(String(y.metadata.creationTimestamp)) - Date.parse(String(x.metadata.creationTimestamp)),
    )
    .map((o) => [
      ...(withNamespace ? [o.metadata.namespace ?? ''] : []),
      o.metadata.name ?? '',
      o.spec.type,
      o.spec.targetRef?.name ?? '',
      triggerOf(o),
      o.status?.phase ?? 'Pending',
      explaining(o)?.reason ?? '-',
      o.status?.startedAt ?? '-',
      duration(o),
    ]);
  if (lines.length === 0) return 'No Operations found.';
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines]
    .map((l) =>
      l
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
