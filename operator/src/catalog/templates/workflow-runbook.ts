import type { Template } from '../template.ts';
import { standardPreconditions } from '../template.ts';
import { objectName, outputSchema } from './fragments.ts';

/** argoproj.io/v1alpha1 Workflow from a WorkflowTemplate; parameters.arguments become workflow arguments. */
export const workflowRunbook: Template = {
  name: 'workflow-runbook',
  description:
    'Runs an Argo WorkflowTemplate of the Operation namespace (a ClusterWorkflowTemplate only where the template sets allowClusterWorkflowTemplates) as a Workflow there; arguments become its parameters. Cancel stops the Workflow (spec.shutdown: Stop, so its exit handler still runs).',
  type: 'Runbook',
  engine: 'workflow',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['workflowTemplateRef'],
    properties: {
      workflowTemplateRef: {
        type: 'object',
        description: 'The WorkflowTemplate to run',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: objectName('Name of the WorkflowTemplate'),
          clusterScope: {
            type: 'boolean',
            description:
              'true refers to a ClusterWorkflowTemplate instead of a WorkflowTemplate of the namespace; only with a template that sets allowClusterWorkflowTemplates',
            default: false,
          },
        },
      },
      arguments: {
        type: 'object',
        description: 'Workflow parameters by name (strings), e.g. {"database": "main"}',
        maxProperties: 64,
        additionalProperties: { type: 'string', maxLength: 8192 },
      },
      serviceAccountName: objectName(
        "ServiceAccount the Workflow's pods run as; unset: the template's first allowedServiceAccount (never the WorkflowTemplate's own, and a WorkflowTemplate naming an account outside the list is refused). One of the template's allowedServiceAccounts, unless the requester may create pods (or impersonate that ServiceAccount) in the namespace themselves",
      ),
    },
  },
  outputSchema: outputSchema({ workflowName: 'Name of the Argo Workflow (argo get <workflowName>)' }),
  rbacProfile: 'runbook.workflow',
  preconditions: standardPreconditions(),
  targetSelectors: { capabilities: [{ verb: 'runbook', engine: 'workflow' }] },
  defaults: { requireReady: false, retryLimit: 0, activeDeadlineSeconds: 7200 },
};
