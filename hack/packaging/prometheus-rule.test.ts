// The shipped alerts only name metrics the operator really exports, each has what an on-call person needs
// (summary, description, a runbook section that exists), and the expressions are well-formed.

import { OperationMetrics, registerBackupMetrics, registerCronMetrics } from '@vworkspace/operator/packaging';
import { RuntimeMetrics } from '@vworkspace/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { readRepoFile } from '../bundle.ts';
import { ALERTS, prometheusRule } from './prometheus-rule.ts';

/** Every series name the operator's registries expose (histograms and summaries with their suffixes). */
async function exportedNames(): Promise<Set<string>> {
  const registry = new Registry();
  new RuntimeMetrics(registry);
  new OperationMetrics(registry, () => []);
  registerCronMetrics(registry, () => []);
  registerBackupMetrics(
    registry,
    () => [],
    () => [],
  );
  const names = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram')
      for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
}

/** Metric names an expression uses that are not exported. */
function unknownMetrics(expr: string, exported: ReadonlySet<string>): string[] {
  const used = expr.match(/\b(vworkspace|controller_runtime|workqueue|leader_election)_[a-z0-9_]+/g) ?? [];
  return [...new Set(used)].filter((n) => !exported.has(n));
}

function balanced(expr: string): boolean {
  const open: string[] = [];
  const pairs: Record<string, string> = { ')': '(', '}': '{', ']': '[' };
  for (const ch of expr.replace(/"[^"]*"/g, '')) {
    if ('({['.includes(ch)) open.push(ch);
    else if (ch in pairs && open.pop() !== pairs[ch]) return false;
  }
  return open.length === 0;
}

describe('PrometheusRule', () => {
  it('alerts on a stalled schedule, a failed or long-Blocked Operation, an overdue or unproven backup, a failed drill and a failed rollback', () => {
    expect(ALERTS.map((a) => a.alert)).toEqual([
      'VWorkspaceScheduleStalled',
      'VWorkspaceOperationFailed',
      'VWorkspaceOperationBlockedTooLong',
      'VWorkspaceBackupOverdue',
      'VWorkspaceVerifiedBackupTooOld',
      'VWorkspaceRestoreDrillFailed',
      'VWorkspaceRollbackFailed',
    ]);
    const rule = prometheusRule() as { kind: string; spec: { groups: { rules: unknown[] }[] } };
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec.groups[0]?.rules).toHaveLength(ALERTS.length);
  });

  it('uses only metrics the operator exports', async () => {
    const exported = await exportedNames();
    for (const a of ALERTS)
      expect({ alert: a.alert, unknown: unknownMetrics(a.expr, exported) }).toEqual({
        alert: a.alert,
        unknown: [],
      });
    // The check can fail: a misspelled name is reported.
    expect(unknownMetrics('sum(vworkspace_operation_total) > 0', exported)).toEqual([
      'vworkspace_operation_total',
    ]);
  });

  it('has well-formed expressions and durations, and a runbook section per alert in docs/monitoring.md', () => {
    const doc = readRepoFile('docs/monitoring.md') ?? '';
    for (const a of ALERTS) {
      expect(balanced(a.expr), a.expr).toBe(true);
      if (a.for) expect(a.for).toMatch(/^\d+[smh]$/);
      expect(a.annotations.summary.length).toBeGreaterThan(10);
      const anchor = a.annotations.runbook_url.split('#')[1];
      expect(anchor).toBe(a.alert.toLowerCase());
      expect(doc).toContain(`### ${a.alert}`);
    }
    expect(balanced('sum(rate(x[5m])')).toBe(false);
  });
});
