// RunCommand on a real node (hack/lib/real-node.ts): the command really runs in a container, and the
// Operation reports what really happened. The node is real-node.test.ts's (shared with the OLM
// journey); the Operation controller runs in this process with the built-in templates and the real
// engine adapters, and stops before the OLM journey installs the operator as a pod. The template's default image
// (docker.io/library/busybox:1.37.0) comes from the node's loopback registry, which containerd uses
// as its docker.io mirror: busybox built from Debian's busybox-static by hack/images/node-images.ts.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { Api, cond, type RunningController, startController } from '../../integration/operation/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';

/** The RunCommand journey on the node `theNode()` returns once the shared beforeAll has started it. */
export function runCommandJourney(theNode: () => RealNode): void {
  describe('RunCommand on a real node', () => {
    let node: RealNode;
    let api: Api;
    let controller: RunningController;
    let ns: string;

    beforeAll(async () => {
      node = theNode();
      api = new Api(node.kc);
      controller = startController(node.kc, adapterFor);
      ns = await createNamespace(node.kc, 'run');
      await api.createInstance(ns, 'app', { runcommand: 'job' }, true);
      await api.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/serviceaccounts`,
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vworkspace-runner' } },
      });
    });

    afterAll(async () => {
      await controller?.stop();
    });

    const finished = (name: string, timeoutMs = 180_000) => api.finished(ns, name, timeoutMs);
    const run = (name: string, script: string, policy?: Record<string, unknown>) =>
      api.createOperation(ns, name, {
        type: 'RunCommand',
        engine: 'job',
        parameters: { command: ['sh', '-c', script] },
        ...(policy ? { policy } : {}),
      });
    const jobPods = async (jobName: string) =>
      (
        await api.client.request<{ items: KubernetesObject[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${ns}/pods`,
          query: { labelSelector: `batch.kubernetes.io/job-name=${jobName}` },
        })
      ).items;
    const sleeping = () => node.podProcesses((argv) => argv.join(' ') === 'sleep 600');
    // A command that ends on SIGTERM, as a well-behaved one does: a bare `sleep` as the container's first
    // process ignores SIGTERM, and the kubelet would wait out the pod's whole grace period before killing it.
    const SLEEP_600 = "trap 'exit 143' TERM; sleep 600 & wait";

    it('echo hello; exit 0 ⇒ Succeeded with the exit code 0 and the output', async () => {
      await run('hello', 'echo hello; exit 0');
      const op = await finished('hello');
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'JobSucceeded' });
      expect(cond(op, 'Succeeded')?.message).toMatch(
        /exited with code 0 \(Completed\); last log lines: hello$/,
      );
      // The container really ran: the kubelet serves its log through the API server.
      const [pod] = await jobPods(String(op.status?.outputs?.jobName ?? ''));
      const log = await api.client.request<unknown>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/pods/${pod?.metadata?.name}/log`,
        query: { container: 'run' },
      });
      expect(String(log).trim()).toBe('hello');
    });

    it("a command's pod resolves the kubernetes Service through CoreDNS", async () => {
      // 10.96.0.1: the first address of the Service range, the `kubernetes` Service's. `grep -w` keeps
      // CoreDNS's own 10.96.0.10 (the Server line) out.
      await run(
        'dns',
        "nslookup kubernetes.default.svc.cluster.local | grep -ow '10\\.96\\.0\\.1' | head -n 1",
      );
      const op = await finished('dns');
      expect(op.status?.phase, JSON.stringify(op.status)).toBe('Succeeded');
      expect(cond(op, 'Succeeded')?.message).toMatch(/last log lines: 10\.96\.0\.1$/);
    });

    it('exit 3 ⇒ Failed/JobFailed with the exit code and the last log lines', async () => {
      // stdout and stderr are two pipes the shim reads apart: lines written back to back may be logged
      // in either order, so the second waits a moment (the log is ordered by when lines arrived).
      await run('three', 'echo preparing; sleep 1; echo about to fail >&2; exit 3');
      const op = await finished('three');
      expect(op.status?.phase).toBe('Failed');
      const c = cond(op, 'Succeeded');
      expect(c).toMatchObject({ status: 'False', reason: 'JobFailed' });
      expect(c?.message).toContain('exited with code 3 (Error); last log lines: preparing | about to fail');
    });

    it('sleep 600 is stopped by activeDeadlineSeconds: Failed, pod and process gone', async () => {
      await run('deadline', SLEEP_600, { activeDeadlineSeconds: 20 });
      await eventually('sleep 600 running on the host', () => sleeping().length === 1, 180_000, 500);
      const op = await finished('deadline');
      expect(op.status?.phase).toBe('Failed');
      expect(cond(op, 'Succeeded')?.reason).toBe('DeadlineExceeded');
      const jobName = String(op.status?.outputs?.jobName ?? op.status?.childRef?.name ?? '');
      await eventually('the pod deleted', async () => (await jobPods(jobName)).length === 0, 120_000, 500);
      await eventually('the process gone from the host', () => sleeping().length === 0, 60_000, 500);
    });

    it('sleep 600 is stopped by cancel: Cancelled, pod and process gone', async () => {
      await run('cancelled', SLEEP_600);
      await eventually('sleep 600 running on the host', () => sleeping().length === 1, 180_000, 500);
      const running = await api.getOperation(ns, 'cancelled');
      const jobName = running.status?.childRef?.name ?? '';
      expect(await jobPods(jobName)).toHaveLength(1);
      await api.patchOperation(ns, 'cancelled', { spec: { cancel: true } });
      const op = await finished('cancelled');
      expect(op.status?.phase).toBe('Cancelled');
      await eventually('the pod deleted', async () => (await jobPods(jobName)).length === 0, 120_000, 500);
      await eventually('the process gone from the host', () => sleeping().length === 0, 60_000, 500);
    });
  });
}
