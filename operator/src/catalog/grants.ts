// What a template lets a requester reach beyond what every Operation of the template gets: other
// ServiceAccounts, ClusterWorkflowTemplates, cluster-scoped restores, another namespace's backups (clone). The operator acts with its own
// identity, so each of these would otherwise hand the requester what RBAC does not (ADR 0009). Pure:
// the webhook reports each denial at its field path; the engine adapters refuse the same requests
// for Operations that reached the reconciler without the webhook.

import type { Template } from './template.ts';
import { DEFAULT_RUNNER_SERVICE_ACCOUNT } from './templates/fragments.ts';

export type GrantFields = Pick<
  Template,
  | 'name'
  | 'type'
  | 'engine'
  | 'allowedServiceAccounts'
  | 'allowClusterWorkflowTemplates'
  | 'allowClusterResources'
  | 'allowClone'
>;

/** The ServiceAccounts a template's pods may run as: its list, else only the runner ServiceAccount. */
export function allowedServiceAccounts(t: Pick<Template, 'allowedServiceAccounts'>): readonly string[] {
  return t.allowedServiceAccounts ?? [DEFAULT_RUNNER_SERVICE_ACCOUNT];
}

export interface GrantDenial {
  /** The parameter's path under spec.parameters, e.g. `workflowTemplateRef.clusterScope`. */
  parameter: string;
  message: string;
  /**
   * Set when the denial is a ServiceAccount outside the template's list: a requester who could run
   * pods as it themselves (create pods in the namespace, or impersonate it) may still ask for it.
   */
  serviceAccount?: string;
}

/** Why the template does not let a pod run as `serviceAccount`; undefined when it does. */
export function serviceAccountDenial(t: GrantFields, serviceAccount: string): GrantDenial | undefined {
  const allowed = allowedServiceAccounts(t);
  if (allowed.includes(serviceAccount)) return undefined;
  return {
    parameter: 'serviceAccountName',
    serviceAccount,
    message: `ServiceAccount "${serviceAccount}" is not allowed by template ${t.name} (allowedServiceAccounts: ${allowed.join(', ')}); use one of those, or have a platform admin add it to the template's allowedServiceAccounts in the catalog`,
  };
}

/** Why the template does not let a Restore read `source` namespace's backups into `namespace`; undefined when it does. */
export function cloneDenial(t: GrantFields, source: string, namespace: string): string | undefined {
  if (source === namespace || t.allowClone === true) return undefined;
  return `template ${t.name} does not allow restoring another namespace's backups (allowClone is not true); restore a backup made for ${namespace} (spec.source.namespace: ${namespace}, or no spec.source), or use a template that allows clones`;
}

/** Every request of `parameters` (after defaults) that the template does not allow. */
export function grantDenials(t: GrantFields, parameters: Readonly<Record<string, unknown>>): GrantDenial[] {
  const out: GrantDenial[] = [];
  const sa = parameters.serviceAccountName;
  if (typeof sa === 'string') {
    const d = serviceAccountDenial(t, sa);
    if (d) out.push(d);
  }
  const ref = parameters.workflowTemplateRef;
  const clusterScope =
    ref !== null && typeof ref === 'object' && (ref as Record<string, unknown>).clusterScope === true;
  if (t.engine === 'workflow' && clusterScope && t.allowClusterWorkflowTemplates !== true) {
    out.push({
      parameter: 'workflowTemplateRef.clusterScope',
      message: `template ${t.name} does not allow ClusterWorkflowTemplates (allowClusterWorkflowTemplates is not true); run a WorkflowTemplate of this namespace (clusterScope: false), or use a template a platform admin wrote for ClusterWorkflowTemplates`,
    });
  }
  if (
    t.engine === 'velero' &&
    t.type === 'Restore' &&
    parameters.includeClusterResources === true &&
    t.allowClusterResources !== true
  ) {
    out.push({
      parameter: 'includeClusterResources',
      message: `template ${t.name} does not allow restoring cluster-scoped objects (allowClusterResources is not true); leave includeClusterResources out (the PersistentVolumes of restored claims are still restored), or ask a platform admin for a template that allows it`,
    });
  }
  return out;
}
