// `@vworkspace/operator/packaging`: the operator's own tables that its packaging is generated from and
// checked against — webhook paths and names (the CSV's webhookdefinitions), the operator's permissions
// and the RBAC profiles' ClusterRoles (the CSV and bundle/manifests), the built-in templates (their
// reference page and the runner images a cluster must be able to pull) and the metrics the shipped
// PrometheusRule may name. Kept in the product so the bundle cannot drift from what the code serves.
export { WEBHOOK_PATHS } from '../admission/handlers.ts';
export { MUTATING_OPERATION_WEBHOOK } from '../admission/operation.ts';
export { MUTATING_SCHEDULE_WEBHOOK } from '../admission/stamps.ts';
export { renderTemplatesReference } from '../catalog/reference.ts';
export { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
export { RUNCOMMAND_IMAGES } from '../catalog/templates/job-runcommand.ts';
export { registerBackupMetrics } from '../instance/backup-metrics.ts';
export { OperationMetrics } from '../operation/metrics.ts';
export {
  profileClusterRole,
  profileClusterRoleFileName,
  renderProfileClusterRole,
} from '../rbac/clusterroles.ts';
export { OPERATOR_CLUSTER_RULES, OPERATOR_NAMESPACE_RULES, type PolicyRule } from '../rbac/operator.ts';
export { RBAC_PROFILE_LIST } from '../rbac/profiles.ts';
export { registerCronMetrics } from '../schedule/cron-metrics.ts';
