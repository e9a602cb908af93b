// The PrometheusRule shipped for clusters with the Prometheus Operator: alerts on the metrics the operator
// really exports (hack/packaging/prometheus-rule.test.ts checks every name against the operator's
// registries). Generated beside the bundle, like the ServiceMonitor (docs/adr/0004-olm-packaging.md), and
// into a monitoring bundle variant (`hack/bundle.ts --output-dir DIR --with-monitoring`). docs/monitoring.md
// explains each alert.
import { POD_LABELS } from './csv.ts';

const RUNBOOK = 'https://github.com/vworkspace/vworkspace-operator/blob/main/docs/monitoring.md';

export interface Alert {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: 'warning' | 'critical' | 'info' };
  annotations: { summary: string; description: string; runbook_url: string };
}

export const ALERTS: readonly Alert[] = [
  {
    alert: 'VWorkspaceScheduleStalled',
    // The planned run is 10 minutes overdue (max over replicas: every replica's cache sees the same status).
    expr: 'max by (namespace, cronoperation) (time() - vworkspace_cronoperation_next_schedule_time_seconds) > 600',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary:
        'CronOperation {{ $labels.namespace }}/{{ $labels.cronoperation }} did not run a slot that was due.',
      description:
        "Its next run was due {{ $value | humanizeDuration }} ago and no reconcile moved it on. Check that one operator replica leads (leader_election_master_status), its logs, and the CronOperation's Ready condition and Events (kubectl vws status cronoperation/{{ $labels.cronoperation }} -n {{ $labels.namespace }}).",
      runbook_url: `${RUNBOOK}#vworkspaceschedulestalled`,
    },
  },
  {
    alert: 'VWorkspaceOperationFailed',
    expr: 'sum by (type, engine) (increase(vworkspace_operations_total{result="failed"}[15m])) > 0',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'A {{ $labels.type }} Operation on engine {{ $labels.engine }} failed.',
      description:
        '{{ $value | humanize }} {{ $labels.type }} Operation(s) ({{ $labels.engine }}) failed in the last 15 minutes. Find them with `kubectl get operations -A` (Phase Failed, Reason column) or `kubectl vws history`; the Succeeded condition says why and what to do.',
      runbook_url: `${RUNBOOK}#vworkspaceoperationfailed`,
    },
  },
  {
    alert: 'VWorkspaceOperationBlockedTooLong',
    // Waiting for a maintenance window is expected to take long; every other reason needs someone.
    expr: 'max by (namespace, reason) (vworkspace_operations_blocked_oldest_seconds{reason!="OutsideMaintenanceWindow"}) > 3600',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary:
        'An Operation in {{ $labels.namespace }} has been Blocked ({{ $labels.reason }}) for over an hour.',
      description:
        'The oldest Operation Blocked with {{ $labels.reason }} in {{ $labels.namespace }} has waited {{ $value | humanizeDuration }}. docs/conditions.md says what each reason waits for (AwaitingApproval: approve with `kubectl vws approve`; TargetNotReady: fix the release; MissingSecret / MissingServiceAccount: create it), or cancel it with `kubectl vws cancel`.',
      runbook_url: `${RUNBOOK}#vworkspaceoperationblockedtoolong`,
    },
  },
];

export const PROMETHEUS_RULE_NAME = 'vworkspace-operator';

/** monitoring.coreos.com/v1 PrometheusRule with ALERTS; namespaced, like the ServiceMonitor. */
export function prometheusRule(): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: PROMETHEUS_RULE_NAME, labels: { ...POD_LABELS } },
    spec: { groups: [{ name: 'vworkspace-operator', rules: ALERTS.map((a) => ({ ...a })) }] },
  };
}
