// Argo Workflows for real (docs/engines.md "workflow"): the workflow-controller and argoexec built from
// the pinned module (hack/tools/argo.sh, hack/images/engines/argo.ts) run on the real node with Argo's
// full CRDs (hack/lib/engines/argo.ts). Runbook Operations go through the operator's real `workflow`
// adapter and the built-in Runbook template (the Operation controller in this process); what is proven
// is what Argo really did: the step pods' logs (read through the API server from the kubelet), the
// processes on the host, the exit handler's pod.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARGO_NAMESPACE, installArgo, workflowRunnerObjects } from '../../../hack/lib/engines/argo.ts';
import { apply, type RealNode } from '../../../hack/lib/real-node.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import type { Template } from '../../../operator/src/catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../../../operator/src/catalog/templates/index.ts';
import { workflowRunbook } from '../../../operator/src/catalog/templates/workflow-runbook.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { Api, cond, type RunningController, startController } from '../../integration/operation/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';

/** The ServiceAccount the Workflows' pods run as (the Runbook template's default allowed one). */
const RUNNER = 'vworkspace-runner';
/** A catalog-style template that stops its Workflows with Terminate instead of the default Stop. */
const TERMINATING: Template = {
  ...workflowRunbook,
  name: 'runbook-terminate',
  workflowShutdown: 'Terminate',
};
/** A catalog-style template whose one allowed account is the namespace's `default` (no executor rights). */
const DEFAULT_ACCOUNT: Template = {
  ...workflowRunbook,
  name: 'runbook-default-account',
  allowedServiceAccounts: ['default'],
};

type Obj = Record<string, unknown>;
/** The restricted pod settings every step runs with (busybox would run as root otherwise). */
const POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};

/** A step: busybox running a shell script, the parameters reaching it through the environment. */
function step(image: string, name: string, script: string, inputs: string[], extra: Obj = {}): Obj {
  return {
    name,
    inputs: { parameters: inputs.map((p) => ({ name: p })) },
    container: {
      image,
      command: ['sh', '-c', script],
      env: inputs.map((p) => ({
        name: p.toUpperCase().replace(/-/g, '_'),
        value: `{{inputs.parameters.${p}}}`,
      })),
    },
    ...extra,
  };
}

/**
 * Two steps in order: `first` greets with the Operation's argument and leaves its pod name as an
 * output; `second` can only start once that output exists, prints it, and exits with `code`.
 */
export function twoStepTemplate(namespace: string, image: string): Obj {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { name: 'two-steps', namespace },
    spec: {
      entrypoint: 'main',
      securityContext: POD_SECURITY,
      arguments: { parameters: [{ name: 'greeting' }, { name: 'code', value: '0' }] },
      templates: [
        {
          name: 'main',
          steps: [
            [
              {
                name: 'first',
                template: 'first',
                arguments: { parameters: [{ name: 'greeting', value: '{{workflow.parameters.greeting}}' }] },
              },
            ],
            [
              {
                name: 'second',
                template: 'second',
                arguments: {
                  parameters: [
                    { name: 'after', value: '{{steps.first.outputs.parameters.pod}}' },
                    { name: 'code', value: '{{workflow.parameters.code}}' },
                  ],
                },
              },
            ],
          ],
        },
        step(image, 'first', 'echo "first: $GREETING"; hostname > /tmp/pod', ['greeting'], {
          outputs: { parameters: [{ name: 'pod', valueFrom: { path: '/tmp/pod' } }] },
        }),
        step(image, 'second', 'echo "second: after $AFTER"; exit "$CODE"', ['after', 'code']),
      ],
    },
  };
}

/** One long step and an exit handler that says it ran: what Stop runs and Terminate does not. */
export function cleanupTemplate(namespace: string, image: string): Obj {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { name: 'waits-then-cleans-up', namespace },
    spec: {
      entrypoint: 'wait',
      onExit: 'cleanup',
      securityContext: POD_SECURITY,
      templates: [
        step(image, 'wait', 'echo waiting; exec sleep 600', []),
        step(image, 'cleanup', 'echo "cleanup ran: {{workflow.name}} ended {{workflow.status}}"', []),
      ],
    },
  };
}

/** The argoJourney on the node `theNode()` returns once the shared beforeAll has started it. */
export function argoJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('Argo Workflows on a real node', () => {
    let node: RealNode;
    let api: Api;
    let controller: RunningController;
    let ns: string;

    beforeAll(async () => {
      node = theNode();
      await installArgo(node, say);
      api = new Api(node.kc);
      controller = startController(node.kc, adapterFor, {
        templates: { templates: () => [...BUILTIN_TEMPLATES, TERMINATING, DEFAULT_ACCOUNT] },
      });
      ns = await createNamespace(node.kc, 'argo');
      await api.createInstance(ns, 'app', { runbook: 'workflow' }, true);
      // What a namespace admin does once: the account the Workflows run as, with the executor's rights.
      for (const obj of [
        ...workflowRunnerObjects(ns, RUNNER),
        twoStepTemplate(ns, node.images.busybox),
        cleanupTemplate(ns, node.images.busybox),
      ])
        await apply(node.client, obj);
    }, 600_000);

    afterAll(async () => {
      await controller?.stop();
    });

    const finished = (name: string) =>
      api.finished(ns, name).catch(async (err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${await whatArgoSays(name)}`);
      });
    /** For a timed-out Operation: its conditions, its Workflow's nodes, their pods, the controller's lines. */
    const whatArgoSays = async (name: string): Promise<string> => {
      const lines: string[] = [];
      const op = await api.getOperation(ns, name).catch(() => undefined);
      lines.push(`Operation ${name}: ${JSON.stringify(op?.status?.conditions ?? [])}`);
      const wf = op ? workflowOf(op) : '';
      const w = wf ? await workflow(wf).catch(() => undefined) : undefined;
      lines.push(
        `Workflow ${wf}: spec.shutdown=${String(w?.spec?.shutdown)} ${w?.status?.phase} ${w?.status?.message ?? ''}`,
      );
      for (const n of Object.values(w?.status?.nodes ?? {}))
        lines.push(`  node ${String(n.displayName)}: ${String(n.phase)} ${String(n.message ?? '')}`);
      for (const [node, pod] of wf ? await podsOf(wf) : [])
        lines.push(
          `  pod ${pod.metadata?.name} (${node}): ${JSON.stringify((pod as { status?: { containerStatuses?: unknown } }).status?.containerStatuses ?? [])}`,
        );
      const pods = await api.client
        .request<{ items: KubernetesObject[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${ARGO_NAMESPACE}/pods`,
        })
        .catch(() => ({ items: [] }));
      for (const p of pods.items) {
        const log = await api.client
          .request<string>({
            method: 'GET',
            path: `/api/v1/namespaces/${ARGO_NAMESPACE}/pods/${p.metadata?.name}/log`,
            query: { tailLines: '400' },
          })
          .catch((e: unknown) => String(e));
        const mine = String(log)
          .split('\n')
          .filter((l) => !wf || l.includes(wf));
        lines.push(`--- ${p.metadata?.name} (lines naming ${wf}) ---`, ...mine.slice(-40));
      }
      return lines.join('\n');
    };
    const runbook = (
      name: string,
      workflowTemplate: string,
      args: Record<string, string>,
      template?: string,
    ) =>
      api.createOperation(ns, name, {
        type: 'Runbook',
        engine: 'workflow',
        ...(template ? { template } : {}),
        parameters: {
          workflowTemplateRef: { name: workflowTemplate },
          arguments: args,
          serviceAccountName: RUNNER,
        },
      });
    const workflowOf = (op: Operation) =>
      String(op.status?.outputs?.workflowName ?? op.status?.childRef?.name);
    const workflow = (name: string) =>
      api.client.request<
        KubernetesObject & {
          spec?: Obj;
          status?: { phase?: string; message?: string; nodes?: Record<string, Obj> };
        }
      >({
        method: 'GET',
        path: `/apis/argoproj.io/v1alpha1/namespaces/${ns}/workflows/${name}`,
      });
    /** The Workflow's pods by Argo node name (`<wf>[0].first`, `<wf>.onExit`). */
    const podsOf = async (wf: string) => {
      const list = await api.client.request<{ items: KubernetesObject[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods`,
        query: { labelSelector: `workflows.argoproj.io/workflow=${wf}` },
      });
      return new Map(
        list.items.map((p) => [p.metadata?.annotations?.['workflows.argoproj.io/node-name'] ?? '', p]),
      );
    };
    /**
     * The step's own output: the `main` container's log, from the kubelet through the API server, without
     * the lines argoexec's emissary (which runs the step's command in that container) logs itself.
     */
    const stepLog = async (pod: KubernetesObject | undefined) => {
      if (!pod) throw new Error('no such step pod');
      const log = await api.client.request<unknown>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods/${pod.metadata?.name}/log`,
        query: { container: 'main' },
      });
      return String(log)
        .split('\n')
        .filter((l) => l !== '' && !/ argo=true\b/.test(l))
        .join('\n');
    };
    const sleeping = () => node.podProcesses((argv) => argv.join(' ') === 'sleep 600');

    it('a Runbook runs the two-step WorkflowTemplate: Succeeded, each step logged, in order, with the arguments', async () => {
      await runbook('two-steps', 'two-steps', { greeting: 'hello from vworkspace' });
      const op = await finished('two-steps');
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'WorkflowSucceeded' });
      const wf = workflowOf(op);
      expect(cond(op, 'Succeeded')?.message).toBe(`Workflow ${wf} Succeeded (2/2)`);
      const pods = await podsOf(wf);
      const first = pods.get(`${wf}[0].first`);
      const second = pods.get(`${wf}[1].second`);
      expect(await stepLog(first)).toBe('first: hello from vworkspace');
      // The second step printed the first one's pod name, which only exists once the first has run.
      expect(await stepLog(second)).toBe(`second: after ${first?.metadata?.name}`);
      const w = await workflow(wf);
      expect(w.status?.phase).toBe('Succeeded');
    });

    it('a step exiting 3 ⇒ Failed/WorkflowNodeFailed naming the node and its message', async () => {
      await runbook('exit-three', 'two-steps', { greeting: 'about to fail', code: '3' });
      const op = await finished('exit-three');
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Failed');
      const c = cond(op, 'Succeeded');
      expect(c).toMatchObject({ status: 'False', reason: 'WorkflowNodeFailed' });
      const wf = workflowOf(op);
      expect(c?.message).toMatch(
        new RegExp(
          `^Workflow ${wf} Failed: node second failed: main: Error \\(exit code 3\\); see \`argo get`,
        ),
      );
      const pods = await podsOf(wf);
      expect(await stepLog(pods.get(`${wf}[0].first`))).toBe('first: about to fail');
      expect(await stepLog(pods.get(`${wf}[1].second`))).toMatch(/^second: after /);
    });

    it("the executor's rights are needed: run as the namespace's default account, the step fails and says why", async () => {
      // No serviceAccountName: the Workflow names the template's first allowed account (never Argo's
      // fallback to the WorkflowTemplate's), here `default`, which lacks workflowtaskresults create/patch.
      await api.createOperation(ns, 'no-rights', {
        type: 'Runbook',
        engine: 'workflow',
        template: DEFAULT_ACCOUNT.name,
        parameters: { workflowTemplateRef: { name: 'two-steps' }, arguments: { greeting: 'hi' } },
      });
      const op = await finished('no-rights');
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Failed');
      const c = cond(op, 'Succeeded');
      expect(c).toMatchObject({ status: 'False', reason: 'WorkflowNodeFailed' });
      // argoexec's wait container could not report the step's outputs.
      expect(c?.message).toContain(
        `node first failed: wait: Error (exit code 64): workflowtaskresults.argoproj.io is forbidden: User "system:serviceaccount:${ns}:default" cannot create resource "workflowtaskresults"`,
      );
    });

    /** Starts the long step, waits until `sleep 600` runs on the host, cancels; returns the ended Operation. */
    const cancelWhileRunning = async (name: string, template?: string) => {
      await runbook(name, 'waits-then-cleans-up', {}, template);
      await eventually('sleep 600 running on the host', () => sleeping().length === 1, 240_000, 500);
      const running = await api.getOperation(ns, name);
      expect(running.status?.phase).toBe('Running');
      await api.patchOperation(ns, name, { spec: { cancel: true } });
      const op = await finished(name);
      await eventually('the step process gone from the host', () => sleeping().length === 0, 120_000, 500);
      return op;
    };

    it("cancel with the default Stop: the running step is stopped and the WorkflowTemplate's exit handler runs", async () => {
      const op = await cancelWhileRunning('stopped');
      const wf = workflowOf(op);
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Cancelled');
      expect(cond(op, 'Succeeded')).toMatchObject({
        status: 'False',
        reason: 'Cancelled',
        message: `spec.cancel: Workflow ${ns}/${wf} stopped (WorkflowNodeFailed)`,
      });
      const w = await workflow(wf);
      expect(w.spec).toMatchObject({ shutdown: 'Stop' });
      expect(w.status).toMatchObject({ phase: 'Failed', message: "Stopped with strategy 'Stop'" });
      const exit = (await podsOf(wf)).get(`${wf}.onExit`);
      expect(await stepLog(exit)).toBe(`cleanup ran: ${wf} ended Failed`);
    });

    it('cancel with a template saying Terminate: the running step is stopped and no exit handler runs', async () => {
      const op = await cancelWhileRunning('terminated', TERMINATING.name);
      const wf = workflowOf(op);
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Cancelled');
      expect(cond(op, 'Succeeded')?.message).toBe(
        `spec.cancel: Workflow ${ns}/${wf} stopped (WorkflowNodeFailed)`,
      );
      const w = await workflow(wf);
      expect(w.spec).toMatchObject({ shutdown: 'Terminate' });
      expect(w.status).toMatchObject({ phase: 'Failed', message: "Stopped with strategy 'Terminate'" });
      const nodes = Object.values(w.status?.nodes ?? {}).map((n) => String(n.displayName));
      expect(nodes).not.toContain(`${wf}.onExit`);
      expect([...(await podsOf(wf)).keys()]).toEqual([wf]);
    });
  });
}
