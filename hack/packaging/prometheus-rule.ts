// The PrometheusRule shipped for clusters with the Prometheus Operator: alerts on the metrics the operator
// really exports (hack/packaging/prometheus-rule.test.ts checks every name against the operator's
// registries). Generated beside the bundle, like the ServiceMonitor (docs/adr/0004-olm-packaging.md), and
// into a monitoring bundle variant (`hack/bundle.ts --output-dir DIR --with-monitoring`). docs/monitoring.md
// explains each alert.
import { POD_LABELS } from './csv.ts';

const RUNBOOK = 'https://github.com/vworkspace/vworkspace-operator/blob/main/docs/monitoring.md';

/** VWorkspaceBackupOverdue fires when the last success is older than FACTOR × the schedule's gap + GRACE. */
export const BACKUP_TOLERANCE_FACTOR = 2;
export const BACKUP_GRACE_SECONDS = 3600;
/** VWorkspaceVerifiedBackupTooOld: the N days of "no verified backup within N days". */
export const VERIFIED_MAX_AGE_DAYS = 7;

// Seconds since the last successful backup or, for an instance never backed up, since its first Backup
// schedule was created (`or` keeps the left series where both exist). Max over the replicas, which all
// export the same values.
const BACKUP_AGE =
  'time() - max by (namespace, applicationinstance) (vworkspace_instance_last_successful_backup_timestamp_seconds or vworkspace_instance_backup_scheduled_since_timestamp_seconds)';

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
  {
    alert: 'VWorkspaceBackupOverdue',
    // The schedule's tolerance: its longest gap twice (one run may fail; the next must succeed), plus an
    // hour for that run to finish. Without a success yet, the time runs from the oldest Backup schedule's
    // creation. A suspended or deleted schedule expects nothing (no interval series): no alert.
    expr: `${BACKUP_AGE} > ${BACKUP_TOLERANCE_FACTOR} * max by (namespace, applicationinstance) (vworkspace_instance_backup_interval_seconds) + ${BACKUP_GRACE_SECONDS}`,
    labels: { severity: 'critical' },
    annotations: {
      summary:
        "ApplicationInstance {{ $labels.namespace }}/{{ $labels.applicationinstance }} has no successful backup within its schedule's tolerance.",
      description: `Its last successful backup (or, without one, its first Backup schedule) is {{ $value | humanizeDuration }} old: more than ${BACKUP_TOLERANCE_FACTOR} times the longest gap of its Backup schedule plus ${BACKUP_GRACE_SECONDS / 60} minutes. See its Backups with \`kubectl vws history applicationinstance/{{ $labels.applicationinstance }} --type Backup -n {{ $labels.namespace }}\`.`,
      runbook_url: `${RUNBOOK}#vworkspacebackupoverdue`,
    },
  },
  {
    alert: 'VWorkspaceVerifiedBackupTooOld',
    // Instances a drill has proved once are watched; one never verified has no series (ADR 0050).
    expr: `time() - max by (namespace, applicationinstance) (vworkspace_instance_last_verified_backup_timestamp_seconds) > ${VERIFIED_MAX_AGE_DAYS} * 86400`,
    labels: { severity: 'warning' },
    annotations: {
      summary: `No restore drill has proved a backup of {{ $labels.namespace }}/{{ $labels.applicationinstance }} for over ${VERIFIED_MAX_AGE_DAYS} days.`,
      description:
        'The last backup a restore drill proved was verified {{ $value | humanizeDuration }} ago. Check its Verify schedule and the last drills: `kubectl vws status applicationinstance/{{ $labels.applicationinstance }} -n {{ $labels.namespace }}` (status.lastDrill).',
      runbook_url: `${RUNBOOK}#vworkspaceverifiedbackuptooold`,
    },
  },
  {
    alert: 'VWorkspaceRestoreDrillFailed',
    // 1 passed, 0 failed; it stays 0 until a drill passes, so the alert lasts as long as the doubt.
    expr: 'max by (namespace, applicationinstance) (vworkspace_instance_last_drill_succeeded) == 0',
    labels: { severity: 'critical' },
    annotations: {
      summary:
        'The last restore drill of {{ $labels.namespace }}/{{ $labels.applicationinstance }} failed: its backup did not restore and pass the probe.',
      description:
        'status.lastDrill names the Verify Operation; its Succeeded condition and outputs say what the restore or the probe reported. `kubectl vws status applicationinstance/{{ $labels.applicationinstance }} -n {{ $labels.namespace }}`.',
      runbook_url: `${RUNBOOK}#vworkspacerestoredrillfailed`,
    },
  },
  {
    alert: 'VWorkspaceRollbackFailed',
    // An Upgrade could not put the release (or its data) back: nothing retries it, a person must (ADR 0055).
    expr: 'max by (namespace, operation, applicationinstance) (vworkspace_operations_rollback_failed) > 0',
    labels: { severity: 'critical' },
    annotations: {
      summary:
        'Upgrade {{ $labels.namespace }}/{{ $labels.operation }} could not put {{ $labels.applicationinstance }} back: RollbackFailed.',
      description:
        'Its rollback Job or its restore from the pre-upgrade backup failed, and nothing retries it. The Succeeded condition of the Operation says which `helm rollback` (and which snapshot Restore) to run: `kubectl vws status {{ $labels.operation }} -n {{ $labels.namespace }}`, status.rollback says what was done. Once the release is back, delete the Operation to clear the alert.',
      runbook_url: `${RUNBOOK}#vworkspacerollbackfailed`,
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
