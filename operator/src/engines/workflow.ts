// workflow engine: an argoproj.io/v1alpha1 Workflow in the Operation's namespace that runs a
// WorkflowTemplate (or ClusterWorkflowTemplate); the Operation's arguments become its parameters.
import type { KubernetesObject } from '@kubernetes/client-node';
import { ANNOTATION_SHUTDOWN } from '../api/annotations.ts';
import { allowedServiceAccounts, serviceAccountDenial } from '../catalog/grants.ts';
import {
  DEFAULT_WORKFLOW_SHUTDOWN,
  WORKFLOW_SHUTDOWN_STRATEGIES,
  type WorkflowShutdown,
} from '../catalog/template.ts';
import { refuseUngranted } from './grants.ts';
import { childMetadata, childName, NAME_LIMITS } from './names.ts';
import { asManifest, at, isRecord, type Json, ofKind, str } from './object.ts';
import { failed, running, succeeded } from './observation.ts';
import type {
  CancelAction,
  EngineAdapter,
  MaterializeInput,
  MaterializeResult,
  Observation,
} from './types.ts';

export const ARGO_API_VERSION = 'argoproj.io/v1alpha1';

/**
 * A Workflow without the annotation was created before templates chose: it is stopped the way cancel
 * worked then.
 */
const UNRECORDED_WORKFLOW_SHUTDOWN: WorkflowShutdown = 'Terminate';

/** Every ServiceAccount a WorkflowTemplate names: spec, spec.executor, and each template's (and executor's). */
export function workflowTemplateServiceAccounts(wft: unknown): string[] {
  const spec = isRecord(wft) && isRecord(wft.spec) ? wft.spec : {};
  const holders = [spec, ...(Array.isArray(spec.templates) ? spec.templates.filter(isRecord) : [])];
  const names = holders.flatMap((h) => [
    h.serviceAccountName,
    isRecord(h.executor) ? h.executor.serviceAccountName : undefined,
  ]);
  return [...new Set(names.filter((n): n is string => typeof n === 'string' && n !== ''))].sort();
}

function materialize(input: MaterializeInput): MaterializeResult {
  const { op, parameters, attempt } = input;
  const refused = refuseUngranted(input);
  if (refused) return refused;
  const ref = parameters.workflowTemplateRef;
  const templateName = isRecord(ref) ? str(ref.name) : undefined;
  if (!isRecord(ref) || !templateName) {
    return {
      ok: false,
      reason: 'InvalidParameters',
      message: 'parameters.workflowTemplateRef.name names the WorkflowTemplate to run; it is required',
    };
  }
  // A WorkflowTemplate's own ServiceAccounts run its pods (a template-level one beats the Workflow's),
  // so each must be one the template allows, whoever wrote the WorkflowTemplate.
  const escaped = (input.env.workflowTemplateServiceAccounts ?? [])
    .map((sa) => serviceAccountDenial(input.template, sa))
    .find((d) => d !== undefined);
  if (escaped) {
    return {
      ok: false,
      reason: 'NotAllowedByTemplate',
      message: `WorkflowTemplate ${templateName}: ${escaped.message}`,
    };
  }
  const args = isRecord(parameters.arguments) ? parameters.arguments : {};
  // Sorted: the same arguments always give the same manifest.
  const workflowParameters = Object.keys(args)
    .sort()
    .map((name) => ({ name, value: String(args[name]) }));
  const spec: Json = {
    workflowTemplateRef: { name: templateName, ...(ref.clusterScope === true ? { clusterScope: true } : {}) },
    ...(workflowParameters.length > 0 ? { arguments: { parameters: workflowParameters } } : {}),
    // Always explicit: without it Argo runs the pods as the WorkflowTemplate's (its author's) account.
    serviceAccountName:
      typeof parameters.serviceAccountName === 'string'
        ? parameters.serviceAccountName
        : allowedServiceAccounts(input.template)[0],
  };
  const metadata = childMetadata(op, {
    name: childName(op, attempt, NAME_LIMITS.workflow),
    attempt,
    annotations: { [ANNOTATION_SHUTDOWN]: input.template.workflowShutdown ?? DEFAULT_WORKFLOW_SHUTDOWN },
  });
  return { ok: true, children: [{ apiVersion: ARGO_API_VERSION, kind: 'Workflow', metadata, spec }] };
}

const LEAF_TYPES = new Set(['Pod', 'Container', 'Suspend', 'HTTP', 'Plugin', 'Skipped']);

/** The node that failed: a leaf (the step that actually ran) first, else any failed node. */
function failedNode(wf: KubernetesObject): { name: string; message?: string } | undefined {
  const nodes = at(wf, 'status', 'nodes');
  if (!isRecord(nodes)) return undefined;
  const bad = Object.values(nodes)
    .filter(isRecord)
    .filter((n) => n.phase === 'Failed' || n.phase === 'Error')
    .sort(
      (a, b) =>
        String(a.startedAt ?? '').localeCompare(String(b.startedAt ?? '')) ||
        String(a.id ?? '').localeCompare(String(b.id ?? '')),
    );
  const node = bad.find((n) => LEAF_TYPES.has(String(n.type))) ?? bad[0];
  if (!node) return undefined;
  const message = str(node.message);
  return {
    name: str(node.displayName) ?? str(node.name) ?? str(node.id) ?? '?',
    ...(message ? { message } : {}),
  };
}

function observe(children: readonly KubernetesObject[]): Observation {
  const wf = ofKind(children, 'Workflow')[0];
  if (!wf) return running('WorkflowRunning', 'waiting for the Workflow to appear');
  const name = wf.metadata?.name ?? '';
  const outputs = { workflowName: name };
  const phase = str(at(wf, 'status', 'phase')) ?? '';
  const progress = str(at(wf, 'status', 'progress'));
  const message = str(at(wf, 'status', 'message'));
  if (phase === 'Succeeded')
    return succeeded(
      'WorkflowSucceeded',
      `Workflow ${name} Succeeded${progress ? ` (${progress})` : ''}`,
      outputs,
    );
  if (phase === 'Failed' || phase === 'Error') {
    const node = failedNode(wf);
    const see = `see \`argo get ${name}\` and \`argo logs ${name}\``;
    if (node) {
      return failed(
        'WorkflowNodeFailed',
        `Workflow ${name} ${phase}: node ${node.name} failed${node.message ? `: ${node.message}` : ''}; ${see}`,
        true,
        outputs,
      );
    }
    return failed(
      'WorkflowFailed',
      `Workflow ${name} ${phase}${message ? `: ${message}` : ''}; ${see}`,
      true,
      outputs,
    );
  }
  const state = phase || 'Pending';
  return running(
    'WorkflowRunning',
    `Workflow ${name} is ${state}${progress ? ` (${progress})` : ''}${message ? `: ${message}` : ''}`,
    outputs,
  );
}

/** The strategy recorded on the Workflow when it was created (see UNRECORDED_WORKFLOW_SHUTDOWN). */
function shutdownOf(wf: KubernetesObject): WorkflowShutdown {
  const recorded = wf.metadata?.annotations?.[ANNOTATION_SHUTDOWN];
  return WORKFLOW_SHUTDOWN_STRATEGIES.find((s) => s === recorded) ?? UNRECORDED_WORKFLOW_SHUTDOWN;
}

/**
 * Argo's own stop, `spec.shutdown`: Stop lets the exit handler run, Terminate does not; both stop the
 * running steps. Repeated on every pass until the Workflow has stopped (the patch is idempotent); one
 * already shutting down keeps the strategy it has.
 */
function cancel(children: readonly KubernetesObject[]): CancelAction[] {
  return ofKind(children, 'Workflow').map((wf) => {
    const current = WORKFLOW_SHUTDOWN_STRATEGIES.find((s) => s === at(wf, 'spec', 'shutdown'));
    return { kind: 'patch', child: asManifest(wf), patch: { spec: { shutdown: current ?? shutdownOf(wf) } } };
  });
}

export const workflowAdapter: EngineAdapter = {
  engine: 'workflow',
  types: ['Backup', 'Restore', 'Upgrade', 'Migration', 'RunCommand', 'Runbook'],
  childKinds: [{ apiVersion: ARGO_API_VERSION, kind: 'Workflow', plural: 'workflows' }],
  materialize,
  observe,
  cancel,
};
